-- Limits at the door.
--
-- tenant_limits holds what an operator set for one tenant; a NULL column
-- (or no row) means the default that app.DefaultLimits names, so that a
-- changed default reaches every tenant that never had its own.
--
-- intake_day_counts counts what intake accepted per tenant, UTC day and
-- counter: channel:<CHANNEL> (messages a day per channel),
-- sms:international (SMS to numbers outside the tenant's country) and
-- sms:to:<hash> (SMS to one number; the hash, not the number, so that the
-- counter keeps no address). One upsert per request takes every counter at
-- once, only where count + n stays within cap, in the transaction that
-- stores the event: a refused request rolls the event back, and the row
-- lock makes concurrent requests queue, so no two can pass the cap
-- together. cap is the cap the last taking request counted against, kept so
-- that the conditional upsert can read it. Rows of past days are pruned by
-- maintenance. No foreign key to tenants: every accepted request writes
-- here, and a key would share-lock the tenant's one row in each of them
-- (see 00006_message_write_cost.sql); rows are written only by the store,
-- for the tenant of the transaction.

-- +goose Up
CREATE TABLE tenant_limits (
    tenant_id               uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    intake_per_minute       integer CHECK (intake_per_minute BETWEEN 1 AND 1000000),
    daily_email             integer CHECK (daily_email BETWEEN 0 AND 100000000),
    daily_sms               integer CHECK (daily_sms BETWEEN 0 AND 100000000),
    daily_whatsapp          integer CHECK (daily_whatsapp BETWEEN 0 AND 100000000),
    daily_webhook           integer CHECK (daily_webhook BETWEEN 0 AND 100000000),
    -- ISO 3166 alpha-2 codes; NULL: the tenant's country and the EU.
    sms_countries           text[] CHECK (cardinality(sms_countries) <= 300),
    sms_international_daily integer CHECK (sms_international_daily BETWEEN 0 AND 100000000),
    sms_recipient_daily     integer CHECK (sms_recipient_daily BETWEEN 0 AND 100000),
    updated_at              timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE tenant_limits ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_limits FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON tenant_limits USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE intake_day_counts (
    tenant_id uuid NOT NULL,
    day       date NOT NULL,
    counter   text NOT NULL CHECK (length(counter) <= 100),
    count     integer NOT NULL CHECK (count >= 0),
    cap       integer NOT NULL,
    PRIMARY KEY (tenant_id, day, counter)
);
-- Pruning finds past days across tenants.
CREATE INDEX intake_day_counts_day_idx ON intake_day_counts (day);
ALTER TABLE intake_day_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE intake_day_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON intake_day_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE intake_day_counts;
DROP TABLE tenant_limits;
