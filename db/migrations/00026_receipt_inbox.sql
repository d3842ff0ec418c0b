-- Provider receipts are accepted into a durable inbox and applied in
-- batches. A webhook verifies the provider's signature, resolves what the
-- receipt came through (the route's tenant, the accounts whose credentials
-- verified it) and stores the parsed receipt(s) of one request in one
-- INSERT, then answers; an applier in the worker processes claims up to a
-- few hundred rows at a time (FOR UPDATE SKIP LOCKED, so concurrent appliers
-- never take the same row), applies them in one transaction with set-based
-- statements and deletes them in it. A crash between the two leaves the
-- rows to be applied by the next applier.
--
-- Like River's own tables, the inbox is Herald's work queue rather than a
-- tenant's data: a receipt of a shared route (SES, SNS) has no tenant until
-- it is applied, so the table has no tenant_id and no row-level security
-- (route_tenant_id only says which tenant's URL it came through); it is read and
-- written only by the webhook's insert and the applier (platform scope).
--
-- Every INSERT statement notifies the appliers (one notification per
-- statement, and Postgres folds equal notifications of one transaction), so
-- a batch is picked up at once under load and nothing is polled when idle
-- beyond the appliers' slow safety poll.

-- +goose Up
CREATE TABLE receipt_inbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider text NOT NULL,
    -- The tenant whose webhook URL received the receipt (Meta); null on
    -- routes tenants share (SES, SNS) and for Herald's own (the sandbox).
    -- It is what the receipt came through, not who owns the row: the
    -- applier decides that.
    route_tenant_id uuid,
    via_accounts uuid[] NOT NULL DEFAULT '{}',
    via_trusted boolean NOT NULL DEFAULT false,
    via_route text NOT NULL DEFAULT '',
    -- The receipt as the provider's adapter parsed it, with its raw excerpt.
    receipt jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    -- A receipt whose batch failed is tried alone, later, and keeps the
    -- error of its last try.
    attempts integer NOT NULL DEFAULT 0,
    available_at timestamptz NOT NULL DEFAULT now(),
    last_error text
);

-- +goose StatementBegin
CREATE FUNCTION herald_receipt_inbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('herald_receipt_inbox', '');
  RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER receipt_inbox_notify AFTER INSERT ON receipt_inbox
  FOR EACH STATEMENT EXECUTE FUNCTION herald_receipt_inbox_notify();

-- +goose Down
DROP TRIGGER receipt_inbox_notify ON receipt_inbox;
DROP FUNCTION herald_receipt_inbox_notify();
DROP TABLE receipt_inbox;
