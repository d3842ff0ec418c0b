-- Prices and budgets.
--
-- prices is the installation's price table, kept by operators: what one
-- message costs on a channel, per destination country (ISO 3166 alpha-2,
-- '*' for every country without a row of its own) and, for WhatsApp, per
-- Meta pricing category (UTILITY, MARKETING, AUTHENTICATION, SERVICE; ''
-- on other channels). unit_price is in millionths of the installation's
-- currency (HERALD_CURRENCY): per part for SMS, per message otherwise. It
-- belongs to no tenant: every tenant's transactions read it (routing
-- prices its messages), only platform-scoped ones write it.
--
-- messages.estimated_cost is what the message costs by the table when it
-- was stored, in millionths (NULL: no row priced it).
--
-- tenant_limits.budget_<channel> is an operator's monthly budget of a
-- tenant's channel in millionths (NULL: none). quota_usage.spent is the
-- month's cost reserved by sends, taken by the same conditional UPDATE
-- that takes the quota (a send passing the budget is refused) and given
-- back with it.

-- +goose Up
CREATE TABLE prices (
    channel    text NOT NULL CHECK (channel IN ('EMAIL', 'SMS', 'WHATSAPP')),
    country    text NOT NULL CHECK (country = '*' OR country ~ '^[A-Z]{2}$'),
    category   text NOT NULL DEFAULT '' CHECK ((channel = 'WHATSAPP') = (category IN ('UTILITY', 'MARKETING', 'AUTHENTICATION', 'SERVICE'))
        AND (channel = 'WHATSAPP' OR category = '')),
    unit_price bigint NOT NULL CHECK (unit_price BETWEEN 0 AND 1000000000),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel, country, category)
);
ALTER TABLE prices ENABLE ROW LEVEL SECURITY;
ALTER TABLE prices FORCE ROW LEVEL SECURITY;
CREATE POLICY prices_read ON prices FOR SELECT USING (true);
CREATE POLICY platform_write ON prices USING ((SELECT herald_platform())) WITH CHECK ((SELECT herald_platform()));

ALTER TABLE messages ADD COLUMN estimated_cost bigint CHECK (estimated_cost >= 0);

ALTER TABLE tenant_limits
    ADD COLUMN budget_email    bigint CHECK (budget_email >= 0),
    ADD COLUMN budget_sms      bigint CHECK (budget_sms >= 0),
    ADD COLUMN budget_whatsapp bigint CHECK (budget_whatsapp >= 0);

ALTER TABLE quota_usage ADD COLUMN spent bigint NOT NULL DEFAULT 0 CHECK (spent >= 0);

-- A message ending unsent gives back its cost with its quota.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald_release_quota() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE quota_usage SET used = greatest(used - 1, 0), spent = greatest(spent - coalesce(NEW.estimated_cost, 0), 0)
    WHERE tenant_id = NEW.tenant_id AND channel = NEW.channel AND month = NEW.quota_month;
  NEW.quota_month := NULL;
  RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald_release_quota() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE quota_usage SET used = greatest(used - 1, 0)
    WHERE tenant_id = NEW.tenant_id AND channel = NEW.channel AND month = NEW.quota_month;
  NEW.quota_month := NULL;
  RETURN NEW;
END
$$;
-- +goose StatementEnd
ALTER TABLE quota_usage DROP COLUMN spent;
ALTER TABLE tenant_limits DROP COLUMN budget_whatsapp, DROP COLUMN budget_sms, DROP COLUMN budget_email;
ALTER TABLE messages DROP COLUMN estimated_cost;
DROP TABLE prices;
