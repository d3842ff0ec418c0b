-- Hot-path support: a one-round-trip API-key lookup and sharded usage
-- counters.

-- +goose Up

-- Looks an API key up by the hash of its secret. The tenant is what the
-- caller wants to learn, so the lookup is platform-scoped, for this one
-- query only: the previous scope is restored before it returns. It saves the
-- request a transaction of its own.
-- +goose StatementBegin
CREATE FUNCTION herald_api_key_by_hash(h bytea) RETURNS SETOF api_keys
LANGUAGE plpgsql AS $$
DECLARE
  prev text := coalesce(current_setting('herald.scope', true), '');
BEGIN
  PERFORM set_config('herald.scope', 'platform', true);
  RETURN QUERY SELECT * FROM api_keys WHERE hash = h;
  PERFORM set_config('herald.scope', prev, true);
END
$$;
-- +goose StatementEnd

-- Every send of a tenant on a channel adds to the same counter row; one row
-- would serialise concurrent sends on its lock. Sixteen shards, summed on
-- read, spread the writes.
ALTER TABLE usage_counters ADD COLUMN shard smallint NOT NULL DEFAULT 0 CHECK (shard BETWEEN 0 AND 15);
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_pkey;
ALTER TABLE usage_counters ADD PRIMARY KEY (tenant_id, channel, month, shard);

-- +goose Down
DELETE FROM usage_counters WHERE shard <> 0;
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_pkey;
ALTER TABLE usage_counters ADD PRIMARY KEY (tenant_id, channel, month);
ALTER TABLE usage_counters DROP COLUMN shard;
DROP FUNCTION herald_api_key_by_hash(bytea);
