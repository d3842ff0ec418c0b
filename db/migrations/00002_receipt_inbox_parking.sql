-- Receipts that overtake the send they are about (Meta posts "sent", even
-- "delivered", before its answer to the send has been committed) wait in
-- the inbox itself, parked (available_at 'infinity'), instead of as pending
-- rows of webhook_receipts: the statement that records a send wakes the
-- receipts of its provider id (receipt_inbox_key_idx), and the applier then
-- applies them through the one receipt rulebook, in the tenant's own
-- transaction. Maintenance deletes those still parked after the horizon.
-- webhook_receipts keeps only receipts that were applied or found foreign,
-- so its row-level security is the plain tenant scope again.
--
-- Parking and waking meet under a transaction-level advisory lock of the
-- receipt's provider id (herald_lock_receipt_key). Each checks the other's
-- work only after taking it, in a snapshot of its own (a statement inside a
-- volatile function), so neither can miss the other: a send recorded while
-- a receipt was being parked finds the receipt parked and wakes it, and a
-- receipt parked while its send was being recorded finds the message and
-- stays due. Without the lock, a receipt committed to the inbox after the
-- recording statement began but parked before it committed waited until
-- the horizon.

-- +goose Up
ALTER TABLE receipt_inbox
    ADD COLUMN external_id text GENERATED ALWAYS AS (receipt->>'ExternalID') STORED;
CREATE INDEX receipt_inbox_key_idx ON receipt_inbox (provider, external_id);
CREATE INDEX receipt_inbox_due_idx ON receipt_inbox (available_at);

-- +goose StatementBegin
CREATE FUNCTION herald_lock_receipt_key(p_provider text, p_external_id text) RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT pg_advisory_xact_lock(1215, hashtext(p_provider || ' ' || coalesce(p_external_id, '')))
$$;
-- +goose StatementEnd

-- herald_park_receipts parks those of the inbox rows ids whose message is
-- still unknown once the keys are locked, and returns their ids.
-- +goose StatementBegin
CREATE FUNCTION herald_park_receipts(p_ids bigint[]) RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    k record;
BEGIN
    -- In one order, so that two appliers parking receipts of the same ids
    -- do not deadlock.
    FOR k IN SELECT DISTINCT provider, external_id, hashtext(provider || ' ' || coalesce(external_id, '')) AS h
        FROM receipt_inbox WHERE id = ANY (p_ids) ORDER BY h, provider, external_id
    LOOP
        PERFORM herald_lock_receipt_key(k.provider, k.external_id);
    END LOOP;
    RETURN QUERY UPDATE receipt_inbox i SET available_at = 'infinity'
        WHERE i.id = ANY (p_ids) AND NOT EXISTS (
            SELECT FROM messages m WHERE m.provider = i.provider AND m.external_message_id = i.external_id)
        RETURNING i.id;
END
$$;
-- +goose StatementEnd

-- herald_wake_receipts makes the parked receipts of a provider id due at
-- p_at, notifying p_channel when it woke any, and returns how many it woke.
-- +goose StatementBegin
CREATE FUNCTION herald_wake_receipts(p_provider text, p_external_id text, p_at timestamptz, p_channel text) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM herald_lock_receipt_key(p_provider, p_external_id);
    UPDATE receipt_inbox SET available_at = p_at
        WHERE provider = p_provider AND external_id = p_external_id AND available_at = 'infinity';
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
    RETURN n;
END
$$;
-- +goose StatementEnd

DELETE FROM webhook_receipts WHERE outcome IN ('pending', 'unknown');
ALTER POLICY tenant_scope ON webhook_receipts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));
DROP INDEX webhook_receipts_pending_age_idx;
DROP INDEX webhook_receipts_pending_idx;
ALTER TABLE webhook_receipts
    DROP COLUMN via_route,
    DROP COLUMN via_trusted,
    DROP COLUMN via_accounts,
    DROP COLUMN at,
    DROP COLUMN external_id;

-- +goose Down
ALTER TABLE webhook_receipts
    ADD COLUMN external_id text,
    ADD COLUMN at timestamptz,
    ADD COLUMN via_accounts uuid[] NOT NULL DEFAULT '{}',
    ADD COLUMN via_trusted boolean NOT NULL DEFAULT false,
    ADD COLUMN via_route text NOT NULL DEFAULT '';
CREATE INDEX webhook_receipts_pending_idx ON webhook_receipts (provider, external_id) WHERE outcome = 'pending';
CREATE INDEX webhook_receipts_pending_age_idx ON webhook_receipts (received_at) WHERE outcome IN ('pending', 'unknown');
ALTER POLICY tenant_scope ON webhook_receipts USING (
    tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform())
    OR (outcome = 'pending' AND EXISTS (
        SELECT FROM channel_accounts a WHERE a.id = ANY (via_accounts) AND a.tenant_id = (SELECT herald_tenant()))));
DROP FUNCTION herald_wake_receipts(text, text, timestamptz, text);
DROP FUNCTION herald_park_receipts(bigint[]);
DROP FUNCTION herald_lock_receipt_key(text, text);
DROP INDEX receipt_inbox_due_idx;
DROP INDEX receipt_inbox_key_idx;
ALTER TABLE receipt_inbox DROP COLUMN external_id;
