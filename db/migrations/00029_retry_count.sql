-- A failed message is retried at most three times, as seed 003 asks,
-- unless a person forces one more: each message counts the retries
-- before it. An original message is 0; its retry 1; a retry of that 2.
--
-- Retries made before this column are counted from their idempotency
-- keys (retry:{failed message id}), following each chain to its start.

-- +goose Up
ALTER TABLE messages ADD COLUMN retry_count smallint NOT NULL DEFAULT 0 CHECK (retry_count >= 0);

WITH RECURSIVE chain AS (
    SELECT m.tenant_id, m.id, 1 AS depth, substring(m.idempotency_key FROM 7) AS parent
    FROM messages m
    WHERE m.idempotency_key LIKE 'retry:%'
  UNION ALL
    SELECT c.tenant_id, c.id, c.depth + 1, substring(p.idempotency_key FROM 7)
    FROM chain c
    JOIN messages p ON p.tenant_id = c.tenant_id AND p.id::text = c.parent
    WHERE p.idempotency_key LIKE 'retry:%' AND c.depth < 100
)
UPDATE messages m SET retry_count = d.depth
FROM (SELECT tenant_id, id, max(depth) AS depth FROM chain GROUP BY tenant_id, id) d
WHERE m.tenant_id = d.tenant_id AND m.id = d.id;

-- +goose Down
ALTER TABLE messages DROP COLUMN retry_count;
