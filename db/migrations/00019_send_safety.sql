-- Sends that neither exceed a quota nor go out twice, and rate limits that
-- follow a provider's 429.

-- +goose Up

-- Quota reservations: a send takes one before the provider call, in one
-- statement that refuses past the limit, so that no number of workers can
-- exceed a plan's quota; a send that ends without going out gives it back.
-- usage_counters keeps counting what was sent (the dashboard's figures).
CREATE TABLE quota_usage (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel   text NOT NULL,
    month     date NOT NULL,
    used      integer NOT NULL CHECK (used >= 0),
    PRIMARY KEY (tenant_id, channel, month)
);
ALTER TABLE quota_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE quota_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON quota_usage USING (tenant_id = herald_tenant() OR herald_platform());

-- quota_month: the month whose quota the message holds a reservation of
-- (one per message, however often its job runs). counted_month: the month
-- its send was counted in usage_counters, so that a send again after a
-- provider's rate-limit receipt is not counted twice.
-- send_started_at/by/attempt: a provider call whose outcome is not
-- recorded yet (by is the worker process that made it); the next run of the
-- job reads it instead of sending blindly.
ALTER TABLE messages
    ADD COLUMN quota_month date,
    ADD COLUMN counted_month date,
    ADD COLUMN send_started_at timestamptz,
    ADD COLUMN send_started_by uuid,
    ADD COLUMN send_attempt integer;

-- A message that ends without being sent (cancelled, expired) while it
-- holds a reservation (its send was snoozed or is being retried) gives it
-- back, whichever path ended it. The dispatcher gives back its own
-- failures itself.
-- +goose StatementBegin
CREATE FUNCTION herald_release_quota() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE quota_usage SET used = greatest(used - 1, 0)
    WHERE tenant_id = NEW.tenant_id AND channel = NEW.channel AND month = NEW.quota_month;
  NEW.quota_month := NULL;
  RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER messages_release_quota BEFORE UPDATE OF status ON messages
    FOR EACH ROW WHEN (NEW.quota_month IS NOT NULL AND NEW.status IN ('CANCELLED', 'EXPIRED') AND NEW.sent_at IS NULL)
    EXECUTE FUNCTION herald_release_quota();

-- Messages sent before reservations existed were counted already.
SELECT set_config('herald.scope', 'platform', true);
UPDATE messages SET counted_month = date_trunc('month', sent_at AT TIME ZONE 'UTC')::date WHERE sent_at IS NOT NULL;

-- A provider's 429 slows the account's bucket for every worker process:
-- no token until blocked_until (its Retry-After), then the rate times
-- slow_factor, which stays for a cooldown after slowed_at and then grows
-- back to 1 gradually.
ALTER TABLE rate_buckets
    ADD COLUMN blocked_until timestamptz,
    ADD COLUMN slow_factor double precision NOT NULL DEFAULT 1 CHECK (slow_factor > 0 AND slow_factor <= 1),
    ADD COLUMN slowed_at timestamptz;

-- The factor of a bucket at a time: slow_factor during the cooldown, then
-- growing linearly back to 1 over recover_s seconds.
-- +goose StatementBegin
CREATE FUNCTION herald_rate_factor(b rate_buckets, at timestamptz, cooldown_s double precision, recover_s double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN b.slowed_at IS NULL OR b.slow_factor >= 1 THEN 1
    WHEN at < b.slowed_at + make_interval(secs => cooldown_s) THEN b.slow_factor
    ELSE least(1, b.slow_factor + (1 - b.slow_factor) * extract(epoch FROM at - b.slowed_at - make_interval(secs => cooldown_s)) / recover_s)
  END
$$;
-- +goose StatementEnd

-- Takes one token as herald_take_token does, honouring a block and the
-- slow factor, at time at: NULL reads the database's clock once the row is
-- locked (Herald's own sends), a time is a test's injected clock. Returns 0
-- when a token was taken, else the seconds until one will be there.
-- +goose StatementBegin
CREATE FUNCTION herald_take_token_at(k text, capacity double precision, per_second double precision, at timestamptz,
                                     cooldown_s double precision, recover_s double precision)
RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
  b    rate_buckets;
  f    double precision;
  rate double precision;
  cap  double precision;
  t    double precision;
  now  timestamptz;
BEGIN
  INSERT INTO rate_buckets (key, tokens, refilled_at) VALUES (k, capacity, coalesce(at, clock_timestamp())) ON CONFLICT (key) DO NOTHING;
  SELECT * INTO b FROM rate_buckets WHERE key = k FOR UPDATE;
  -- The time is read once the row is locked, and never moves refilled_at
  -- back: a taker that waited for the lock would refill twice.
  now := greatest(coalesce(at, clock_timestamp()), b.refilled_at);
  IF b.blocked_until IS NOT NULL AND now < b.blocked_until THEN
    RETURN extract(epoch FROM b.blocked_until - now);
  END IF;
  f := herald_rate_factor(b, now, cooldown_s, recover_s);
  rate := per_second * f;
  cap := greatest(1, capacity * f);
  -- A blocked bucket refills only from the end of the block.
  t := least(cap, b.tokens + extract(epoch FROM now - greatest(b.refilled_at, coalesce(b.blocked_until, b.refilled_at))) * rate);
  IF f >= 1 AND b.slowed_at IS NOT NULL THEN
    UPDATE rate_buckets SET slowed_at = NULL, slow_factor = 1, blocked_until = NULL WHERE key = k;
  END IF;
  IF t >= 1 THEN
    UPDATE rate_buckets SET tokens = t - 1, refilled_at = now WHERE key = k;
    RETURN 0;
  END IF;
  UPDATE rate_buckets SET tokens = t, refilled_at = now WHERE key = k;
  RETURN (1 - t) / rate;
END
$$;
-- +goose StatementEnd

-- Records a provider's 429 at time at (NULL: the database's clock): no token
-- before at + retry_s, the bucket emptied, and its rate halved (not below
-- min_factor) from then on.
-- +goose StatementBegin
CREATE FUNCTION herald_rate_throttled(k text, capacity double precision, at timestamptz, retry_s double precision,
                                      min_factor double precision, cooldown_s double precision, recover_s double precision)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  b rate_buckets;
  f double precision;
BEGIN
  INSERT INTO rate_buckets (key, tokens, refilled_at) VALUES (k, capacity, coalesce(at, clock_timestamp())) ON CONFLICT (key) DO NOTHING;
  SELECT * INTO b FROM rate_buckets WHERE key = k FOR UPDATE;
  at := coalesce(at, clock_timestamp());
  f := herald_rate_factor(b, greatest(at, b.refilled_at), cooldown_s, recover_s);
  -- Sends answered 429 together (one burst) halve the rate once, not once
  -- each: the factor drops only once the last drop's block has passed.
  IF b.blocked_until IS NULL OR at >= b.blocked_until THEN
    f := greatest(min_factor, f / 2);
  END IF;
  UPDATE rate_buckets SET tokens = 0, refilled_at = greatest(at, b.refilled_at),
      blocked_until = greatest(coalesce(b.blocked_until, at), at + make_interval(secs => retry_s)),
      slow_factor = f, slowed_at = greatest(at, b.refilled_at)
    WHERE key = k;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER messages_release_quota ON messages;
DROP FUNCTION herald_release_quota();
DROP FUNCTION herald_rate_throttled(text, double precision, timestamptz, double precision, double precision, double precision, double precision);
DROP FUNCTION herald_take_token_at(text, double precision, double precision, timestamptz, double precision, double precision);
DROP FUNCTION herald_rate_factor(rate_buckets, timestamptz, double precision, double precision);
ALTER TABLE rate_buckets DROP COLUMN slowed_at, DROP COLUMN slow_factor, DROP COLUMN blocked_until;
ALTER TABLE messages DROP COLUMN send_attempt, DROP COLUMN send_started_by, DROP COLUMN send_started_at,
    DROP COLUMN counted_month, DROP COLUMN quota_month;
DROP TABLE quota_usage;
