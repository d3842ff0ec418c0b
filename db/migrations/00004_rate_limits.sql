-- Token buckets shared by every worker process, for provider rate limits.

-- +goose Up

-- One bucket per key (tenant and channel account). Not tenant-scoped: the key
-- carries the tenant, and only the dispatcher touches it.
CREATE TABLE rate_buckets (
    key         text PRIMARY KEY,
    tokens      double precision NOT NULL,
    refilled_at timestamptz NOT NULL
);

-- Takes one token from the bucket, refilling it first at per_second up to
-- capacity. Returns 0 when a token was taken, else the seconds until one
-- will be there. The row lock serialises takers of one bucket only.
-- +goose StatementBegin
CREATE FUNCTION herald_take_token(k text, capacity double precision, per_second double precision)
RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
  t   double precision;
  r   timestamptz;
  now timestamptz;
BEGIN
  INSERT INTO rate_buckets (key, tokens, refilled_at) VALUES (k, capacity, clock_timestamp()) ON CONFLICT (key) DO NOTHING;
  SELECT b.tokens, b.refilled_at INTO t, r FROM rate_buckets b WHERE b.key = k FOR UPDATE;
  -- The time is read once the row is locked: read before, a taker that
  -- waited for the lock would move refilled_at back and refill twice.
  now := greatest(clock_timestamp(), r);
  t := least(capacity, t + extract(epoch FROM now - r) * per_second);
  IF t >= 1 THEN
    UPDATE rate_buckets SET tokens = t - 1, refilled_at = now WHERE key = k;
    RETURN 0;
  END IF;
  UPDATE rate_buckets SET tokens = t, refilled_at = now WHERE key = k;
  RETURN (1 - t) / per_second;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION herald_take_token(text, double precision, double precision);
DROP TABLE rate_buckets;
