-- Herald's schema: tenancy and identity, the audit log, channels and
-- templates, the notification pipeline (events, contacts, messages and
-- their timelines), provider receipts, status callbacks, quotas and rate
-- limits, and the dashboard's counts. River's tables sit beside these,
-- migrated by River's own migrations from the same `herald migrate`.
--
-- Migrations are only ever added. A merged file is never edited, renamed
-- or removed (db/migrations/SHA256SUMS pins each one, and a test checks
-- it); a change is a new file numbered after the newest. A migration that
-- indexes a large table builds the index CONCURRENTLY, outside a
-- transaction (goose's NO TRANSACTION annotation), dropping an invalid one
-- a failed run left first, so that migrating does not block writes.

-- +goose Up

-- Row-level security is defense in depth behind the application's own
-- scoping: every tenant-owned table forces it (FORCE applies it to the
-- table owner, which is the role Herald connects as). A tenant-scoped
-- transaction sets herald.tenant_id with SET LOCAL; a platform-scoped one
-- sets herald.scope = 'platform'.
--
-- Policies read the scope through sub-selects, (SELECT herald_tenant())
-- and (SELECT herald_platform()), never a bare call. The functions are
-- inlined into the row filter, so a bare call parsed the tenant setting into
-- a uuid again for every row a statement reads: counting the 20,000 stale
-- messages of a tenant with 10M took 8.8 ms, 6 of them in the filter. As
-- sub-selects they become init plans, evaluated once per statement, and the
-- filter compares each row with a value: the same count takes 2.4 ms, and
-- the dashboard's 31-day roll-up at 10M messages 8.8 s instead of 10.9 s.
-- The price is the init plans' start-up in every statement that reads a
-- table with a policy: a single-row select took 5.1-5.6 us against 4.1 us
-- (server-side loop), about 1 us, or some 15 us of the 2.9 ms of Postgres
-- CPU a delivered message costs. New policies follow this form (a test
-- checks every policy of the schema).

-- The tenant a transaction is scoped to, set with SET LOCAL by the store.
-- An unset or emptied setting yields NULL, which matches no row.
-- +goose StatementBegin
CREATE FUNCTION herald_tenant() RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT nullif(current_setting('herald.tenant_id', true), '')::uuid
$$;
-- +goose StatementEnd

-- True only inside an explicitly platform-scoped transaction.
-- +goose StatementBegin
CREATE FUNCTION herald_platform() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(current_setting('herald.scope', true), '') = 'platform'
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------
-- Tenants, console users and API keys

CREATE TABLE tenants (
    id                uuid PRIMARY KEY,
    slug              text NOT NULL CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$'),
    name              text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    plan              text NOT NULL DEFAULT 'FREE' CHECK (plan IN ('FREE', 'PRO', 'ENTERPRISE')),
    default_locale    text NOT NULL DEFAULT 'de-DE',
    timezone          text NOT NULL DEFAULT 'Europe/Berlin',
    -- NULL: the default (90 days).
    retention_days    integer CHECK (retention_days BETWEEN 1 AND 3650),
    status            text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'SUSPENDED')),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    suspended_at      timestamptz,
    suspended_reason  text NOT NULL DEFAULT '' CHECK (length(suspended_reason) <= 500),
    -- Quiet hours, in minutes after local midnight in the recipient's zone;
    -- a start equal to the end means the tenant has none. The default is
    -- 21:00-08:00.
    quiet_hours_start smallint NOT NULL DEFAULT 1260 CHECK (quiet_hours_start BETWEEN 0 AND 1439),
    quiet_hours_end   smallint NOT NULL DEFAULT 480 CHECK (quiet_hours_end BETWEEN 0 AND 1439),
    CONSTRAINT tenants_slug_key UNIQUE (slug),
    -- A suspended tenant says why; an active one carries no stale reason.
    CONSTRAINT tenants_suspension CHECK ((status = 'SUSPENDED') = (suspended_at IS NOT NULL))
);
CREATE INDEX tenants_created_idx ON tenants (created_at DESC, id DESC);
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON tenants USING (id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- A console account is unique per (tenant, e-mail address); operators, who
-- belong to no tenant, are unique among operators. One person may hold
-- accounts in several tenants under one address, and inviting an address
-- never reveals whether it is used in another tenant.
CREATE TABLE users (
    id                   uuid PRIMARY KEY,
    tenant_id            uuid REFERENCES tenants (id) ON DELETE CASCADE,
    email                text NOT NULL CHECK (email = lower(email) AND email LIKE '%_@_%'),
    name                 text NOT NULL DEFAULT '',
    password_hash        bytea NOT NULL,
    role                 text NOT NULL CHECK (role IN ('operator', 'manager', 'support')),
    session_version      integer NOT NULL DEFAULT 1,
    disabled_at          timestamptz,
    last_login_at        timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    -- Set when a manager or operator hands out a generated password: the
    -- user must choose their own before anything else.
    must_change_password boolean NOT NULL DEFAULT false,
    -- Operators run the platform; everyone else belongs to exactly one tenant.
    CONSTRAINT users_role_tenant CHECK ((role = 'operator') = (tenant_id IS NULL))
);
CREATE UNIQUE INDEX users_tenant_email_key ON users (tenant_id, email) WHERE tenant_id IS NOT NULL;
CREATE UNIQUE INDEX users_operator_email_key ON users (email) WHERE tenant_id IS NULL;
-- Sign-in looks accounts up by address alone.
CREATE INDEX users_email_idx ON users (email);
CREATE INDEX users_tenant_idx ON users (tenant_id, created_at DESC);
ALTER TABLE users ENABLE ROW LEVEL SECURITY;
ALTER TABLE users FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON users USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Sign-in throttling that cannot be turned against the people it protects:
-- counts are kept per (account, client address), per client address and per
-- account, each with a time before which the next attempt is refused
-- (exponential backoff), rather than a lock that anyone could set off by
-- typing someone's address. Platform data: a key names an e-mail address, a
-- client address or both, never a tenant, so only platform-scoped
-- transactions may touch it.
CREATE TABLE login_throttle (
    key           text PRIMARY KEY,
    failures      integer NOT NULL CHECK (failures >= 0),
    last_at       timestamptz NOT NULL,
    blocked_until timestamptz
);
CREATE INDEX login_throttle_last_idx ON login_throttle (last_at);
ALTER TABLE login_throttle ENABLE ROW LEVEL SECURITY;
ALTER TABLE login_throttle FORCE ROW LEVEL SECURITY;
CREATE POLICY login_throttle_platform ON login_throttle
    USING ((SELECT herald_platform())) WITH CHECK ((SELECT herald_platform()));

-- Failed sign-ins aggregated for the audit log, which is append-only: one
-- row per (address typed, client address) counts the failures of the
-- current window, and the audit log gets one entry when a window opens, one
-- when throttling starts and one summary when it closes.
CREATE TABLE login_failure_windows (
    email        text NOT NULL,
    client       text NOT NULL,
    failures     integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    refused      integer NOT NULL DEFAULT 0 CHECK (refused >= 0),
    first_at     timestamptz NOT NULL,
    last_at      timestamptz NOT NULL,
    throttled_at timestamptz,
    PRIMARY KEY (email, client)
);
CREATE INDEX login_failure_windows_first_idx ON login_failure_windows (first_at);
ALTER TABLE login_failure_windows ENABLE ROW LEVEL SECURITY;
ALTER TABLE login_failure_windows FORCE ROW LEVEL SECURITY;
CREATE POLICY login_failure_windows_platform ON login_failure_windows
    USING ((SELECT herald_platform())) WITH CHECK ((SELECT herald_platform()));

-- API keys: the secret is shown once; only its SHA-256 is kept. Scopes say
-- what a key may do through the API:
--   send     submit notifications, resend
--   read     GET everything
--   manage   templates, channel accounts, delivery deadlines, contacts,
--            callback endpoints, rescheduling and cancelling
--   approve  approve or reject notifications awaiting approval
-- A key made without naming its scopes gets what a booking system needs,
-- send and read; managing and approving are granted explicitly.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    prefix       text NOT NULL,
    hash         bytea NOT NULL,
    created_by   uuid REFERENCES users (id) ON DELETE SET NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    scopes       text[] NOT NULL DEFAULT ARRAY['send', 'read']::text[],
    CONSTRAINT api_keys_hash_key UNIQUE (hash),
    CONSTRAINT api_keys_scopes_known CHECK (
        cardinality(scopes) > 0 AND scopes <@ ARRAY['send', 'read', 'manage', 'approve']::text[]
    )
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at DESC);
-- A rejected key still names its tenant by its visible prefix (see
-- herald_api_key_prefix_tenant).
CREATE INDEX api_keys_prefix_idx ON api_keys (prefix);
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON api_keys USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

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

-- The API's authentication lookup: like herald_api_key_by_hash, with the
-- key's scopes and its tenant's status, so that the API refuses the keys of
-- a suspended tenant without a second round trip.
-- +goose StatementBegin
CREATE FUNCTION herald_api_key_auth(h bytea)
RETURNS TABLE (
    id uuid, tenant_id uuid, name text, prefix text, hash bytea, created_by uuid,
    last_used_at timestamptz, revoked_at timestamptz, created_at timestamptz, scopes text[], tenant_status text
)
LANGUAGE plpgsql AS $$
DECLARE
  prev text := coalesce(current_setting('herald.scope', true), '');
BEGIN
  PERFORM set_config('herald.scope', 'platform', true);
  RETURN QUERY
    SELECT k.id, k.tenant_id, k.name, k.prefix, k.hash, k.created_by,
           k.last_used_at, k.revoked_at, k.created_at, k.scopes, t.status
    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
    WHERE k.hash = h;
  PERFORM set_config('herald.scope', prev, true);
END
$$;
-- +goose StatementEnd

-- A rejected key (unknown secret, revoked, suspended tenant) still names
-- its tenant by its visible prefix; this finds the tenant without opening
-- the platform scope to the caller. No tenant when the prefix is unknown or
-- (it never is in practice) shared by keys of two tenants.
-- +goose StatementBegin
CREATE FUNCTION herald_api_key_prefix_tenant(p text)
RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
  prev text := coalesce(current_setting('herald.scope', true), '');
  found uuid;
BEGIN
  PERFORM set_config('herald.scope', 'platform', true);
  SELECT CASE WHEN count(DISTINCT k.tenant_id) = 1 THEN min(k.tenant_id::text)::uuid END
    INTO found FROM api_keys k WHERE k.prefix = p;
  PERFORM set_config('herald.scope', prev, true);
  RETURN found;
END
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------
-- The audit log: a hash chain per tenant (and one for the platform), so
-- that edits are detectable

CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid REFERENCES tenants (id) ON DELETE CASCADE,
    actor_type  text NOT NULL CHECK (actor_type IN ('user', 'api_key', 'system', 'cli')),
    actor_id    uuid,
    actor_label text NOT NULL DEFAULT '',
    action      text NOT NULL,
    target_type text NOT NULL DEFAULT '',
    target_id   text NOT NULL DEFAULT '',
    metadata    jsonb NOT NULL DEFAULT '{}',
    at          timestamptz NOT NULL DEFAULT now(),
    prev_hash   bytea,
    hash        bytea NOT NULL
);
CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, id DESC);
CREATE INDEX audit_log_platform_idx ON audit_log (id DESC) WHERE tenant_id IS NULL;
-- A channel account's history (status changes, edits, breaker
-- transitions) without scanning the tenant's whole log.
CREATE INDEX audit_log_target_idx ON audit_log (tenant_id, target_type, target_id, id DESC);
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON audit_log USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- The canonical text an audit entry's hash covers. Verification recomputes it.
-- +goose StatementBegin
CREATE FUNCTION audit_log_digest(e audit_log) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
  SELECT sha256(convert_to(concat_ws('|',
      coalesce(encode(e.prev_hash, 'hex'), ''),
      coalesce(e.tenant_id::text, ''),
      e.actor_type, coalesce(e.actor_id::text, ''), e.actor_label,
      e.action, e.target_type, e.target_id, e.metadata::text,
      to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')), 'UTF8'))
$$;
-- +goose StatementEnd

-- Chains each entry to the previous one of the same tenant (or of the
-- platform). The advisory lock serialises writers of one chain, and the id is
-- drawn after the lock so that id order is chain order.
-- +goose StatementBegin
CREATE FUNCTION audit_log_chain() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('herald.audit'), hashtext(coalesce(NEW.tenant_id::text, 'platform')));
  NEW.id := nextval(pg_get_serial_sequence('audit_log', 'id'));
  SELECT a.hash INTO NEW.prev_hash FROM audit_log a
   WHERE a.tenant_id IS NOT DISTINCT FROM NEW.tenant_id
   ORDER BY a.id DESC LIMIT 1;
  NEW.hash := audit_log_digest(NEW);
  RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_chain BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_chain();

-- The log is append-only: entries are never edited (retention may delete the
-- oldest, which verification tolerates by trusting the first prev_hash).
-- +goose StatementBegin
CREATE FUNCTION audit_log_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log entries cannot be changed' USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_immutable BEFORE UPDATE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_immutable();

-- Anchors of the audit log's hash chains. Each entry links to the one
-- before it, so an edit or a deletion inside a chain breaks a link; but
-- deleting a chain's newest entries leaves a shorter chain that still
-- verifies. The verification job therefore records each chain's head (its
-- newest entry's id and hash) here, and also writes it to the log, which is
-- shipped elsewhere; the next run checks that the anchored head is still
-- there, unchanged. Anchors are append-only: the newest anchor of a chain
-- can be neither changed nor deleted (older ones may be pruned), except with
-- its tenant.
CREATE TABLE audit_anchors (
    id         bigserial PRIMARY KEY,
    tenant_id  uuid REFERENCES tenants (id) ON DELETE CASCADE,
    head_id    bigint NOT NULL,
    head_hash  bytea NOT NULL,
    at         timestamptz NOT NULL
);
CREATE INDEX audit_anchors_chain_idx ON audit_anchors (tenant_id, id DESC);
ALTER TABLE audit_anchors ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_anchors FORCE ROW LEVEL SECURITY;
CREATE POLICY platform_only ON audit_anchors USING ((SELECT herald_platform()));

-- +goose StatementBegin
CREATE FUNCTION audit_anchors_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    RAISE EXCEPTION 'audit anchors cannot be changed' USING ERRCODE = 'insufficient_privilege';
  END IF;
  -- A deleted tenant takes its chain and its anchors with it.
  IF OLD.tenant_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = OLD.tenant_id) THEN
    RETURN OLD;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM audit_anchors n WHERE n.tenant_id IS NOT DISTINCT FROM OLD.tenant_id AND n.id > OLD.id) THEN
    RAISE EXCEPTION 'the newest anchor of an audit chain cannot be deleted' USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN OLD;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_anchors_guard BEFORE UPDATE OR DELETE ON audit_anchors
    FOR EACH ROW EXECUTE FUNCTION audit_anchors_guard();

-- ---------------------------------------------------------------------------
-- Channel accounts and templates

CREATE TABLE channel_accounts (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel          text NOT NULL CHECK (channel IN ('WHATSAPP', 'EMAIL', 'SMS', 'WEBHOOK')),
    provider         text NOT NULL CHECK (provider IN ('meta', 'ses', 'sns', 'webhook', 'sandbox')),
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    status           text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'ACTIVE', 'SUSPENDED', 'DISABLED')),
    -- Non-secret settings: phone_number_id, sender_email, region, tier, ...
    config           jsonb NOT NULL DEFAULT '{}',
    -- AES-256-GCM sealed secrets; the key id names the key that sealed them.
    secrets          bytea,
    secrets_key_id   text,
    verify_token     text NOT NULL,
    suspended_reason text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- The unguessable token of the account's Meta webhook path,
    -- /webhooks/meta/a/{token}. A path naming the tenant's slug could be
    -- guessed, and its verification answer would tell tenants that exist
    -- (with a Meta account) from others. Two random UUIDs' hex: 244 random
    -- bits.
    webhook_token    text NOT NULL
        DEFAULT replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', '')
);
CREATE INDEX channel_accounts_tenant_idx ON channel_accounts (tenant_id, channel);
-- At most one ACTIVE account per tenant and channel: routing picks it.
CREATE UNIQUE INDEX channel_accounts_one_active ON channel_accounts (tenant_id, channel) WHERE status = 'ACTIVE';
CREATE UNIQUE INDEX channel_accounts_webhook_token_key ON channel_accounts (webhook_token);
ALTER TABLE channel_accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE channel_accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON channel_accounts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE templates (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    trigger_event     text NOT NULL,
    channel           text NOT NULL CHECK (channel IN ('WHATSAPP', 'EMAIL', 'SMS', 'WEBHOOK')),
    locale            text NOT NULL,
    subject           text NOT NULL DEFAULT '',
    body              text NOT NULL CHECK (length(body) BETWEEN 1 AND 20000),
    -- Meta template sends: {"name", "language", "parameters": [variable, ...]}.
    whatsapp_template jsonb,
    version           integer NOT NULL DEFAULT 1,
    is_active         boolean NOT NULL DEFAULT true,
    updated_by        uuid,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT templates_key UNIQUE (tenant_id, trigger_event, channel, locale)
);
ALTER TABLE templates ENABLE ROW LEVEL SECURITY;
ALTER TABLE templates FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON templates USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Every prior version of a template.
CREATE TABLE template_versions (
    template_id       uuid NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
    version           integer NOT NULL,
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    subject           text NOT NULL,
    body              text NOT NULL,
    whatsapp_template jsonb,
    is_active         boolean NOT NULL,
    updated_by        uuid,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (template_id, version)
);
CREATE INDEX template_versions_tenant_idx ON template_versions (tenant_id, template_id);
ALTER TABLE template_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE template_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON template_versions USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Each WhatsApp account's Meta message templates with their review status,
-- synced from the Graph API and Meta's message_template_status_update
-- webhook.
CREATE TABLE meta_templates (
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel_account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
    name               text NOT NULL,
    language           text NOT NULL,
    meta_id            text NOT NULL DEFAULT '',
    status             text NOT NULL,
    category           text NOT NULL DEFAULT '',
    rejected_reason    text NOT NULL DEFAULT '',
    body               text NOT NULL DEFAULT '',
    synced_at          timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, channel_account_id, name, language)
);
ALTER TABLE meta_templates ENABLE ROW LEVEL SECURITY;
ALTER TABLE meta_templates FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON meta_templates USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- ---------------------------------------------------------------------------
-- Events: the outbox of accepted notification requests

-- Retention deletes old events, messages, timelines and receipts in
-- batches. With the default autovacuum scale factor (20%) a table of ten
-- million messages is vacuumed only after two million dead rows, so a day
-- of pruning would leave its dead rows and bloated index pages in place
-- until the next day's. One percent (plus a floor) lets vacuum follow the
-- pruner; those four tables are created WITH it.
CREATE TABLE events (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- The caller's event id: the idempotency key of the request.
    source_event_id   text NOT NULL CHECK (length(source_event_id) BETWEEN 1 AND 200),
    trigger_event     text NOT NULL,
    recipients        jsonb NOT NULL,
    context           jsonb NOT NULL,
    channels          text[],
    fallback_chain    text[],
    locale            text,
    entity_type       text CHECK (entity_type IN ('booking', 'trip', 'invoice')),
    entity_id         text,
    send_at           timestamptz,
    version           integer NOT NULL DEFAULT 1,
    status            text NOT NULL CHECK (status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL', 'ROUTED', 'CANCELLED', 'REJECTED', 'FAILED', 'EXPIRED')),
    error             text,
    payload_size      integer NOT NULL CHECK (payload_size <= 16384),
    api_key_id        uuid,
    decided_by        uuid,
    decided_at        timestamptz,
    decision_reason   text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    routed_at         timestamptz,
    -- The routing decision per recipient and channel (template and locale
    -- path, account, or why a channel was skipped), written by the UPDATE
    -- that marks the event ROUTED.
    routing           jsonb,
    -- {"trip_id"} when the event targets a trip's passengers instead of
    -- listing recipients; routing expands it and stores the expanded
    -- recipients.
    audience          jsonb,
    -- Why the event ended as it did (superseded_by:<event id>).
    status_reason     text,
    -- expires_rule says where a default expiry came from (a context time
    -- such as departure_at, or a time after the event was due); NULL when
    -- the request set expires_at itself or there is none. send_at_rule is a
    -- relative send_at ({"before"|"after": key, "offset", "zone"}), kept so
    -- that a change of the context time moves the schedule.
    expires_at        timestamptz,
    expires_rule      text,
    send_at_rule      jsonb,
    CONSTRAINT events_source_key UNIQUE (tenant_id, source_event_id),
    CHECK ((entity_type IS NULL) = (entity_id IS NULL))
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02);
CREATE INDEX events_tenant_created_idx ON events (tenant_id, created_at DESC);
-- The console's search matches booking, trip and invoice references
-- exactly, one index range per entity type.
CREATE INDEX events_entity_idx ON events (tenant_id, entity_type, entity_id);
CREATE INDEX events_pending_idx ON events (tenant_id, send_at) WHERE status IN ('SCHEDULED', 'AWAITING_APPROVAL');
-- Pending relative schedules of an entity, found when its time changes.
CREATE INDEX events_relative_idx ON events (tenant_id, entity_type, entity_id)
    WHERE send_at_rule IS NOT NULL AND status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL');
-- Pending events past their expiry, found by the expiry sweep.
CREATE INDEX events_expiry_idx ON events (expires_at)
    WHERE expires_at IS NOT NULL AND status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL');
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON events USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- An accepted event that makes other events about the same booking or trip
-- pointless (a cancellation) leaves one row here, with the trigger events it
-- supersedes. Intake reads it for every later event of those types about the
-- entity (stored CANCELLED at once), and routing reads it once more when the
-- event's time comes, so the order of arrival does not matter.
CREATE TABLE entity_supersessions (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    entity_type   text NOT NULL CHECK (entity_type IN ('booking', 'trip', 'invoice')),
    entity_id     text NOT NULL,
    event_id      uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    trigger_event text NOT NULL,
    supersedes    text[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, entity_type, entity_id, event_id)
);
CREATE INDEX entity_supersessions_event_idx ON entity_supersessions (event_id);
ALTER TABLE entity_supersessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE entity_supersessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON entity_supersessions USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Which trip a booking is on, learnt from events that name both
-- (conversation_context booking plus context.trip_id). left_at is set when
-- the booking is cancelled: it no longer belongs to the trip's audience,
-- and a later event about it does not bring it back.
CREATE TABLE trip_bookings (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    booking_id  text NOT NULL,
    trip_id     text NOT NULL,
    -- The event that taught it; learnt before that event is stored, so no
    -- foreign key (retention may remove the event).
    learnt_from uuid,
    learnt_at   timestamptz NOT NULL,
    left_at     timestamptz,
    left_by     uuid REFERENCES events (id) ON DELETE SET NULL,
    PRIMARY KEY (tenant_id, booking_id)
);
CREATE INDEX trip_bookings_trip_idx ON trip_bookings (tenant_id, trip_id);
CREATE INDEX trip_bookings_left_idx ON trip_bookings (left_by) WHERE left_by IS NOT NULL;
ALTER TABLE trip_bookings ENABLE ROW LEVEL SECURITY;
ALTER TABLE trip_bookings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON trip_bookings USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Rejected API requests are kept per tenant so that a tenant can see why
-- nothing was sent: what was asked, what Herald answered, when. The body is
-- stored redacted (the application masks it before it gets here).
--
-- The table is a ring of at most N rows per tenant: a request takes the
-- tenant's next sequence number from api_rejection_counters (an upsert that
-- locks the tenant's counter row until the statement's transaction ends) and
-- writes slot seq % N, overwriting the oldest. Taking the number and writing
-- the row is one statement, so concurrent rejections never race a count
-- against a delete, the cap is exact, and a flood of bad requests rewrites
-- the same N rows instead of growing the table. Retention deletes rows older
-- than the tenant's retention; their slots are reused later.
CREATE TABLE api_rejection_counters (
    tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    seq bigint NOT NULL
);
ALTER TABLE api_rejection_counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_rejection_counters FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON api_rejection_counters USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE api_rejections (
    tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    slot integer NOT NULL,
    id uuid NOT NULL,
    seq bigint NOT NULL,
    at timestamptz NOT NULL,
    method text NOT NULL,
    path text NOT NULL,
    status integer NOT NULL,
    code text NOT NULL,
    message text NOT NULL,
    field text,
    event_id text,
    api_key_prefix text,
    request_id text NOT NULL DEFAULT '',
    -- The request body, redacted and capped, as text (it need not be JSON).
    body text NOT NULL DEFAULT '',
    body_size integer NOT NULL DEFAULT 0,
    -- Rejections of the tenant not kept just before this one, because they
    -- came faster than Herald records them.
    suppressed integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, slot)
);
CREATE UNIQUE INDEX api_rejections_id_idx ON api_rejections (tenant_id, id);
CREATE INDEX api_rejections_recent_idx ON api_rejections (tenant_id, at DESC, id DESC);
CREATE INDEX api_rejections_event_idx ON api_rejections (tenant_id, event_id, at DESC, id DESC) WHERE event_id IS NOT NULL;
ALTER TABLE api_rejections ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_rejections FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON api_rejections USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- ---------------------------------------------------------------------------
-- Contacts and conversations

CREATE TABLE contacts (
    id                    uuid PRIMARY KEY,
    tenant_id             uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    passenger_profile_id  text,
    name                  text NOT NULL DEFAULT '',
    phone                 text,
    email                 text,
    locale                text,
    email_complained_at   timestamptz,
    whatsapp_window_until timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    -- The channels the contact asked not to be sent on; routing skips them.
    opted_out             text[] NOT NULL DEFAULT '{}',
    -- When the decision behind each channel's current state was made
    -- (channel -> time), so that STOP and START keywords delivered out of
    -- order are decided by the provider's timestamps, and a keyword older
    -- than a later decision changes nothing.
    opt_out_at            jsonb NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX contacts_profile_key ON contacts (tenant_id, passenger_profile_id) WHERE passenger_profile_id IS NOT NULL;
-- The console's search ("support finds people") looks a passenger up by
-- booking reference, name, e-mail address or phone number, on tables that
-- grow to millions of rows. What each kind of query uses:
--
-- * Phone numbers are normalised to E.164 before the query (with the
--   tenant's country for national formats), so they match contacts.phone
--   exactly through contacts_phone_idx (tenant_id, phone).
-- * Complete e-mail addresses are stored lower-case and match exactly
--   through contacts_email_idx (tenant_id, email).
-- * Booking, trip and invoice references match exactly (as typed, upper- or
--   lower-case) through events_entity_idx and messages_entity_idx, which
--   lead with (tenant_id, entity_type, entity_id); the three entity types
--   are spelled out, so each is one index range. No further index on events
--   or messages: both are written on the hot path, and a reference is copied
--   from the booking system, not half-remembered.
-- * Names and parts of e-mail addresses ("berg", "lena.berg") are found
--   anywhere in the name or address (ILIKE '%...%'). A trigram index would
--   serve that without row-level security, but contacts has FORCE ROW LEVEL
--   SECURITY: PostgreSQL evaluates the tenant policy before any condition
--   whose operator is not leakproof, and ILIKE is not, so no index can serve
--   it (only a superuser can mark an operator leakproof). What can be
--   served is the tenant: uuid equality is leakproof, so
--   contacts_tenant_updated_idx narrows the scan to the tenant's own
--   contacts, newest first, instead of every tenant's. Contacts are written
--   once per new passenger or change of details, not per message, so the
--   index costs the hot path little.
CREATE INDEX contacts_phone_idx ON contacts (tenant_id, phone) WHERE phone IS NOT NULL;
CREATE INDEX contacts_email_idx ON contacts (tenant_id, email) WHERE email IS NOT NULL;
CREATE INDEX contacts_tenant_updated_idx ON contacts (tenant_id, updated_at DESC);
ALTER TABLE contacts ENABLE ROW LEVEL SECURITY;
ALTER TABLE contacts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON contacts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Every change of a contact's details: the field, the value before and
-- after, and who made it (the event that carried it, an API key, a console
-- user, or the passenger: by keyword on WhatsApp or SMS, or by an e-mail's
-- unsubscribe link).
--
-- No foreign key to tenants, nor on message_events: each insert checked it
-- with a share lock on the tenant's row, so every write of every message of
-- a tenant locked that one row (a multixact per check under load). Their
-- rows still go with their tenant: they cascade from their contact and
-- their message, which cascade from the tenant.
CREATE TABLE contact_changes (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    contact_id  uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    field       text NOT NULL CHECK (field IN ('created', 'passenger_profile_id', 'name', 'phone', 'email', 'locale', 'opted_out')),
    old_value   text,
    new_value   text,
    source      text NOT NULL CHECK (source IN ('event', 'api', 'console', 'inbound', 'whatsapp_keyword', 'sms_keyword', 'email_unsubscribe')),
    event_id    uuid REFERENCES events (id) ON DELETE SET NULL,
    actor_type  text NOT NULL,
    actor_id    uuid,
    actor_label text NOT NULL DEFAULT '',
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX contact_changes_contact_idx ON contact_changes (tenant_id, contact_id, id);
-- For the ON DELETE SET NULL that deleting an event fires (see
-- messages_event_id_idx).
CREATE INDEX contact_changes_event_idx ON contact_changes (event_id) WHERE event_id IS NOT NULL;
ALTER TABLE contact_changes ENABLE ROW LEVEL SECURITY;
ALTER TABLE contact_changes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON contact_changes USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE conversations (
    id         uuid PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    booking_id text,
    trip_id    text,
    invoice_id text,
    status     text NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'SNOOZED', 'RESOLVED')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT conversations_one_context CHECK (num_nonnulls(booking_id, trip_id, invoice_id) <= 1)
);
CREATE INDEX conversations_contact_idx ON conversations (tenant_id, contact_id);
-- The trip page finds a trip's passengers through their conversations about
-- its bookings.
CREATE INDEX conversations_booking_idx ON conversations (tenant_id, booking_id) WHERE booking_id IS NOT NULL;
ALTER TABLE conversations ENABLE ROW LEVEL SECURITY;
ALTER TABLE conversations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON conversations USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Messages people send to a tenant (WhatsApp replies), kept on the
-- contact's conversation.
CREATE TABLE inbound_messages (
    id                 uuid PRIMARY KEY,
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    contact_id         uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    conversation_id    uuid REFERENCES conversations (id) ON DELETE SET NULL,
    channel            text NOT NULL CHECK (channel IN ('WHATSAPP', 'EMAIL', 'SMS')),
    provider           text NOT NULL,
    external_id        text NOT NULL,
    from_address       text NOT NULL,
    kind               text NOT NULL DEFAULT 'text',
    body               text NOT NULL DEFAULT '',
    received_at        timestamptz NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    -- WhatsApp's customer-service window is per business number, so an
    -- inbound message remembers the account it came through.
    channel_account_id uuid REFERENCES channel_accounts (id) ON DELETE SET NULL,
    CONSTRAINT inbound_messages_external_key UNIQUE (provider, external_id)
);
CREATE INDEX inbound_messages_contact_idx ON inbound_messages (tenant_id, contact_id, received_at DESC);
CREATE INDEX inbound_messages_window_idx ON inbound_messages (tenant_id, channel_account_id, from_address, received_at DESC)
    WHERE channel = 'WHATSAPP';
ALTER TABLE inbound_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE inbound_messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON inbound_messages USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- ---------------------------------------------------------------------------
-- Messages and their timelines

CREATE TABLE messages (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event_id            uuid REFERENCES events (id) ON DELETE SET NULL,
    -- The source event id; fallback messages share it with their original.
    correlation_id      text NOT NULL,
    idempotency_key     text NOT NULL,
    trigger_event       text NOT NULL,
    channel             text NOT NULL CHECK (channel IN ('WHATSAPP', 'EMAIL', 'SMS', 'WEBHOOK')),
    channel_account_id  uuid REFERENCES channel_accounts (id) ON DELETE SET NULL,
    template_id         uuid REFERENCES templates (id) ON DELETE SET NULL,
    template_version    integer,
    locale              text,
    contact_id          uuid REFERENCES contacts (id) ON DELETE SET NULL,
    conversation_id     uuid REFERENCES conversations (id) ON DELETE SET NULL,
    to_address          text NOT NULL DEFAULT '',
    subject             text NOT NULL DEFAULT '',
    body                text NOT NULL DEFAULT '',
    status              text NOT NULL CHECK (status IN ('QUEUED', 'SENT', 'DELIVERED', 'READ', 'FAILED', 'CANCELLED', 'EXPIRED')),
    failed_reason       text,
    error_code          text,
    attempts            integer NOT NULL DEFAULT 0,
    provider            text,
    external_message_id text,
    fallback_of         uuid REFERENCES messages (id) ON DELETE SET NULL,
    fallback_chain      text[] NOT NULL DEFAULT '{}',
    entity_type         text,
    entity_id           text,
    triggered_by        uuid,
    queued_at           timestamptz NOT NULL DEFAULT now(),
    sent_at             timestamptz,
    delivered_at        timestamptz,
    read_at             timestamptz,
    failed_at           timestamptz,
    stale_at            timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- quota_month: the month whose quota the message holds a reservation of
    -- (one per message, however often its job runs). counted_month: the
    -- month its send was counted in usage_counters, so that a send again
    -- after a provider's rate-limit receipt is not counted twice.
    quota_month         date,
    counted_month       date,
    -- A provider call whose outcome is not recorded yet (by is the worker
    -- process that made it); the next run of the job reads it instead of
    -- sending blindly.
    send_started_at     timestamptz,
    send_started_by     uuid,
    send_attempt        integer,
    -- Which recipient of its event the message is for, so that a retry, a
    -- resend or a fallback reads that recipient's addresses from the event
    -- instead of the contact's later ones.
    recipient_index     integer CHECK (recipient_index >= 0),
    -- A manager's test from the console, to try a channel account or a
    -- template before it goes live: it goes through the real adapter like
    -- any other, but it is never retried, never falls back to another
    -- channel and never makes a status callback, and it may use a PENDING
    -- account. Lists and totals show tests as tests.
    test                boolean NOT NULL DEFAULT false,
    expires_at          timestamptz,
    -- When a message held by quiet hours may go (its dispatch job is
    -- scheduled then), and the zone the window was read in.
    deferred_until      timestamptz,
    deferred_zone       text,
    CONSTRAINT messages_idempotency_key UNIQUE (tenant_id, idempotency_key)
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02);
CREATE UNIQUE INDEX messages_external_key ON messages (provider, external_message_id) WHERE external_message_id IS NOT NULL;
CREATE INDEX messages_queued_idx ON messages (queued_at) WHERE status = 'QUEUED';
CREATE INDEX messages_sent_idx ON messages (sent_at) WHERE status = 'SENT' AND stale_at IS NULL;
CREATE INDEX messages_expiry_idx ON messages (expires_at) WHERE expires_at IS NOT NULL AND status = 'QUEUED';

-- Pages that stay fast at ten million messages in one tenant. The messages
-- explorer pages by keyset, newest first: (created_at, id) below the last
-- row shown. Each filter it offers gets an index that starts with the
-- tenant and the filtered column and ends in that order, so any filter and
-- any page reads only the rows it shows. They are full indexes, not partial
-- ones: a partial index on status is never chosen by a generic plan (the
-- status is a parameter there), a full one always is.
CREATE INDEX messages_tenant_created_idx ON messages (tenant_id, created_at DESC, id DESC);
CREATE INDEX messages_status_created_idx ON messages (tenant_id, status, created_at DESC, id DESC) INCLUDE (channel, trigger_event);
CREATE INDEX messages_channel_created_idx ON messages (tenant_id, channel, created_at DESC, id DESC) INCLUDE (status, trigger_event);
CREATE INDEX messages_trigger_created_idx ON messages (tenant_id, trigger_event, created_at DESC, id DESC) INCLUDE (status, channel);
CREATE INDEX messages_entity_idx ON messages (tenant_id, entity_type, entity_id, created_at DESC, id DESC);
-- The dashboard's top failure reasons link to the messages that failed for
-- each. Partial, unlike the filters above: only failed messages (and those
-- a fallback replaced) carry a reason, and the explorer's plans see the
-- value, so `failed_reason = $1` proves the index's condition.
CREATE INDEX messages_failed_reason_idx ON messages (tenant_id, failed_reason, created_at DESC, id DESC)
    WHERE failed_reason IS NOT NULL;
-- "Did we notify this passenger?" looks a phone number or e-mail address up
-- exactly.
CREATE INDEX messages_address_idx ON messages (tenant_id, to_address, created_at DESC);
-- The dashboard's count of a tenant's stale messages and its link to them,
-- without reading every message of the tenant. Few messages are ever stale,
-- so the partial indexes stay small, and the send path never writes them
-- (only maintenance marks messages stale).
CREATE INDEX messages_stale_idx ON messages (tenant_id, stale_at DESC) WHERE stale_at IS NOT NULL;
CREATE INDEX messages_stale_list_idx ON messages (tenant_id, created_at DESC) WHERE status = 'SENT' AND stale_at IS NOT NULL;
-- A channel account's recent messages, without scanning the tenant's whole
-- message table.
CREATE INDEX messages_account_idx ON messages (tenant_id, channel_account_id, created_at DESC)
    WHERE channel_account_id IS NOT NULL;
-- The contact page lists a contact's messages and conversations.
CREATE INDEX messages_contact_idx ON messages (tenant_id, contact_id, created_at DESC) WHERE contact_id IS NOT NULL;
-- Retention deletes old messages in batches; every row it deletes fires the
-- foreign keys that point at it, one lookup per row. Those lookups name only
-- the referencing column (`WHERE $1 = message_id`), so an index that starts
-- with tenant_id cannot serve them and each one would read the whole table:
-- pruning a million messages would scan message_events a million times.
-- These indexes lead with the referencing column instead. They serve the
-- tenant-scoped queries as well (the column is a unique id, tenant_id is
-- then checked on a row or two), so no (tenant_id, column) index is needed
-- beside them. The deadline scan also asks, per overdue message, whether a
-- fallback already names it (messages_fallback_of_id_idx).
CREATE INDEX messages_event_id_idx ON messages (event_id) WHERE event_id IS NOT NULL;
CREATE INDEX messages_fallback_of_id_idx ON messages (fallback_of) WHERE fallback_of IS NOT NULL;
ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON messages USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- The database itself guards the message status rules, so that an edit by
-- hand (or a bug) cannot rewrite a message's history silently: a status
-- moves forward only, QUEUED < SENT < DELIVERED < READ; FAILED from QUEUED,
-- SENT or DELIVERED; CANCELLED and EXPIRED from QUEUED; FAILED, READ,
-- CANCELLED and EXPIRED are final. The one step back Herald takes itself, a
-- SENT message the provider later reported rate-limited going back to
-- QUEUED to be sent again, is allowed only in a transaction that says so
-- (herald.requeue_sent = on, transaction-local). Anything else is refused
-- with check_violation, naming the message and the move.
-- +goose StatementBegin
CREATE FUNCTION herald_message_status_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  forward constant text[] := ARRAY['QUEUED', 'SENT', 'DELIVERED', 'READ'];
BEGIN
  IF NEW.status = OLD.status
     OR (NEW.status = 'FAILED' AND OLD.status IN ('QUEUED', 'SENT', 'DELIVERED'))
     OR (NEW.status IN ('CANCELLED', 'EXPIRED') AND OLD.status = 'QUEUED')
     OR (array_position(forward, NEW.status) > array_position(forward, OLD.status))
     OR (OLD.status = 'SENT' AND NEW.status = 'QUEUED' AND current_setting('herald.requeue_sent', true) = 'on')
  THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'message % cannot move from % to %', OLD.id, OLD.status, NEW.status
    USING ERRCODE = 'check_violation',
          DETAIL = 'A message status only moves forward: QUEUED, SENT, DELIVERED, READ; FAILED from QUEUED, SENT or DELIVERED; CANCELLED and EXPIRED from QUEUED.',
          HINT = 'A message''s history is not edited; send a new message instead.';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER messages_status_forward BEFORE UPDATE OF status ON messages
  FOR EACH ROW EXECUTE FUNCTION herald_message_status_guard();

-- The timeline of one message: every status change, with its source and
-- detail (provider code, error, raw excerpt). No foreign key to tenants:
-- see contact_changes.
CREATE TABLE message_events (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    message_id  uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    from_status text,
    to_status   text,
    source      text NOT NULL CHECK (source IN ('routing', 'dispatch', 'webhook', 'console', 'api', 'system')),
    detail      jsonb NOT NULL DEFAULT '{}',
    at          timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02);
-- Leads with message_id for retention's foreign-key lookups (see
-- messages_event_id_idx).
CREATE INDEX message_events_message_id_idx ON message_events (message_id, id);
ALTER TABLE message_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_events USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- A tenant's delivery deadlines: a message of the event (or of any event,
-- '*') on the channel that is still not DELIVERED this many minutes after it
-- was sent continues its fallback chain (WhatsApp not delivered within 15
-- minutes -> SMS). No row, no deadline: the default is off. The maintenance
-- scan finds overdue messages by their sent time and asks, per message,
-- whether a fallback already names it.
CREATE TABLE delivery_deadlines (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    trigger_event text NOT NULL,
    channel       text NOT NULL,
    minutes       integer NOT NULL CHECK (minutes BETWEEN 1 AND 1440),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, trigger_event, channel)
);
ALTER TABLE delivery_deadlines ENABLE ROW LEVEL SECURITY;
ALTER TABLE delivery_deadlines FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON delivery_deadlines USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- ---------------------------------------------------------------------------
-- Quotas and usage

-- What was sent, per tenant, channel and month: the dashboard's figures.
-- A send counts itself in the transaction that records it and holds its
-- shard's row lock until that transaction commits; with one row per tenant,
-- channel and month (or sixteen) the route workers of a busy tenant queued
-- on each other's commits (4 ms a send under load). 256 shards, summed on
-- read, spread the writes.
CREATE TABLE usage_counters (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel   text NOT NULL,
    month     date NOT NULL,
    count     integer NOT NULL DEFAULT 0,
    shard     smallint NOT NULL DEFAULT 0 CHECK (shard BETWEEN 0 AND 255),
    PRIMARY KEY (tenant_id, channel, month, shard)
);
ALTER TABLE usage_counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage_counters FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON usage_counters USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Quota reservations: a send takes one before the provider call, in one
-- statement that refuses past the limit, so that no number of workers can
-- exceed a plan's quota; a send that ends without going out gives it back.
CREATE TABLE quota_usage (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel   text NOT NULL,
    month     date NOT NULL,
    used      integer NOT NULL CHECK (used >= 0),
    PRIMARY KEY (tenant_id, channel, month)
);
ALTER TABLE quota_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE quota_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON quota_usage USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

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

-- ---------------------------------------------------------------------------
-- Rate limits: token buckets shared by every worker process

-- One bucket per key (tenant and channel account). Not tenant-scoped: the key
-- carries the tenant, and only the dispatcher touches it.
--
-- A provider's 429 slows the account's bucket for every worker process:
-- no token until blocked_until (its Retry-After), then the rate times
-- slow_factor, which stays for a cooldown after slowed_at and then grows
-- back to 1 gradually.
CREATE TABLE rate_buckets (
    key           text PRIMARY KEY,
    tokens        double precision NOT NULL,
    refilled_at   timestamptz NOT NULL,
    blocked_until timestamptz,
    slow_factor   double precision NOT NULL DEFAULT 1 CHECK (slow_factor > 0 AND slow_factor <= 1),
    slowed_at     timestamptz
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

-- ---------------------------------------------------------------------------
-- Provider receipts

-- Receipts as processed, unique per provider and receipt id, so that a
-- receipt delivered twice is applied once.
--
-- Receipts that overtake the send they are about (Meta posts "sent", even
-- "delivered", before its answer to the send has been committed) are kept as
-- pending, with what authenticated them, and applied in the transaction that
-- records the message's external id, in the order of their own timestamps.
-- Maintenance deletes those still pending after the horizon.
--
-- The send is recorded in its tenant's scope, and a pending receipt of a
-- route tenants share (SES, SNS) has no tenant yet: a tenant's scope may see
-- a pending receipt when it came through one of the tenant's own accounts,
-- and no other.
CREATE TABLE webhook_receipts (
    id           bigserial PRIMARY KEY,
    tenant_id    uuid REFERENCES tenants (id) ON DELETE CASCADE,
    provider     text NOT NULL,
    receipt_id   text NOT NULL,
    message_id   uuid,
    status       text,
    signature_ok boolean NOT NULL DEFAULT true,
    body         jsonb NOT NULL DEFAULT '{}',
    outcome      text NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    external_id  text,
    at           timestamptz,
    via_accounts uuid[] NOT NULL DEFAULT '{}',
    via_trusted  boolean NOT NULL DEFAULT false,
    via_route    text NOT NULL DEFAULT '',
    CONSTRAINT webhook_receipts_key UNIQUE (provider, receipt_id)
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02);
CREATE INDEX webhook_receipts_tenant_idx ON webhook_receipts (tenant_id, received_at);
CREATE INDEX webhook_receipts_pending_idx ON webhook_receipts (provider, external_id) WHERE outcome = 'pending';
CREATE INDEX webhook_receipts_pending_age_idx ON webhook_receipts (received_at) WHERE outcome IN ('pending', 'unknown');
-- Retention deletes a message's receipts in the same batch as the message.
CREATE INDEX webhook_receipts_message_idx ON webhook_receipts (message_id) WHERE message_id IS NOT NULL;
ALTER TABLE webhook_receipts ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_receipts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON webhook_receipts USING (
    tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform())
    OR (outcome = 'pending' AND EXISTS (
        SELECT FROM channel_accounts a WHERE a.id = ANY (via_accounts) AND a.tenant_id = (SELECT herald_tenant()))));

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

-- Every INSERT statement notifies the appliers (one notification per
-- statement, and Postgres folds equal notifications of one transaction), so
-- a batch is picked up at once under load and nothing is polled when idle
-- beyond the appliers' slow safety poll.
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

-- ---------------------------------------------------------------------------
-- Status callbacks: a tenant's endpoints receive its messages' status
-- changes (message.sent, .delivered, .read, .failed, .fallback) as JSON
-- posts signed per Standard Webhooks. A delivery row and its job are
-- inserted in the transaction that changes the status, so a callback exists
-- exactly when the change committed; the unique key makes a second copy of
-- the same change (a duplicate receipt, a resent message) a no-op.

CREATE TABLE callback_endpoints (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url                 text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    description         text NOT NULL DEFAULT '' CHECK (length(description) <= 200),
    event_types         text[] NOT NULL CHECK (cardinality(event_types) > 0),
    enabled             boolean NOT NULL DEFAULT true,
    -- Why Herald (or a person) disabled it; NULL while enabled.
    disabled_reason     text,
    -- AES-256-GCM sealed {"current": "whsec_...", "previous": "whsec_..."}.
    secrets             bytea NOT NULL,
    secrets_key_id      text NOT NULL,
    -- The previous secret signs too until then (rotation grace period).
    previous_expires_at timestamptz,
    -- Start of the current run of failed attempts; NULL after a success.
    failing_since       timestamptz,
    created_by          text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX callback_endpoints_tenant_idx ON callback_endpoints (tenant_id, created_at);
ALTER TABLE callback_endpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE callback_endpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON callback_endpoints USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE callback_deliveries (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    endpoint_id     uuid NOT NULL REFERENCES callback_endpoints (id) ON DELETE CASCADE,
    -- NULL for test events, which belong to no message.
    message_id      uuid REFERENCES messages (id) ON DELETE CASCADE,
    event_type      text NOT NULL,
    -- json, not jsonb: the exact bytes that were signed are sent again on
    -- every retry and replay.
    payload         json NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    -- Every POST made; round_attempts counts those since the delivery was
    -- (re)started, against the retry schedule.
    attempts        integer NOT NULL DEFAULT 0,
    round_attempts  integer NOT NULL DEFAULT 0,
    last_status     integer,
    last_error      text,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT callback_deliveries_once UNIQUE (endpoint_id, message_id, event_type)
);
CREATE INDEX callback_deliveries_endpoint_idx ON callback_deliveries (tenant_id, endpoint_id, created_at DESC);
CREATE INDEX callback_deliveries_message_idx ON callback_deliveries (message_id) WHERE message_id IS NOT NULL;
ALTER TABLE callback_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE callback_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON callback_deliveries USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- ---------------------------------------------------------------------------
-- The dashboard's counts
--
-- The dashboard shows the last 7 and 30 days of a tenant that may hold ten
-- million messages: about a million rows a week at that size, too many to
-- count on every page view. The tables below hold those counts, recomputed
-- by a periodic job (message_counts_roll_up) rather than by the send path,
-- which stays one statement shorter: every figure is a count of messages
-- grouped by when they were created and what they are now.
-- message_count_marks says which span of a tenant's history the counts
-- cover, and the dashboard counts live what lies outside it.

-- Messages per quarter of an hour (every timezone's hours and days start on
-- a quarter), channel and status.
CREATE TABLE message_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- The quarter of an hour the messages were created in.
    bucket    timestamptz NOT NULL,
    channel   text NOT NULL,
    status    text NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, bucket, channel, status)
);
ALTER TABLE message_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- The recount covers the last two hours every minute, the last 8 days every
-- hour (week_at says when) and the whole 31 days every 6 hours (full_at),
-- so that a status that changes days after the message was created shows
-- within hours without rereading a month of messages every hour.
CREATE TABLE message_count_marks (
    tenant_id  uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    -- message_counts holds the tenant's counts for since <= bucket < through.
    since      timestamptz NOT NULL,
    through    timestamptz NOT NULL,
    -- When the whole span was last recomputed.
    full_at    timestamptz NOT NULL,
    -- When the last 8 days were last recomputed.
    week_at    timestamptz NOT NULL DEFAULT 'epoch',
    -- The timezone message_day_counts' days were summed in.
    day_zone   text,
    CHECK (since <= through)
);
ALTER TABLE message_count_marks ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_count_marks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_count_marks USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- A histogram of the time from a message's creation to its delivery, per
-- quarter hour and channel, in fixed bins (below 1 s, 1-2 s, 2-5 s, ...
-- 6-24 h, a day or more). Histograms add up across quarters and days where
-- medians do not, so any period's median is read off the summed bins (the
-- bin holding the middle message, and a linear guess within it); an exact
-- median would need every message's time.
CREATE TABLE message_latency_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    bucket    timestamptz NOT NULL,
    channel   text NOT NULL,
    -- 0 below the first bound of message_latency_bounds(), n from its
    -- n-th bound up to the next one (or for ever after the last).
    bin       smallint NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, bucket, channel, bin)
);
ALTER TABLE message_latency_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_latency_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_latency_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- message_latency_bounds are the histogram's bin bounds in seconds; the
-- console's copy (console.LatencyBounds) must say the same.
-- +goose StatementBegin
CREATE FUNCTION message_latency_bounds() RETURNS double precision[] LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY[1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400]::double precision[]
$$;
-- +goose StatementEnd

-- Failed messages per quarter, channel and failed_reason (a short code such
-- as quota_exceeded or meta_131026): the dashboard's top failure reasons.
CREATE TABLE message_failure_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    bucket    timestamptz NOT NULL,
    channel   text NOT NULL,
    reason    text NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, bucket, channel, reason)
);
ALTER TABLE message_failure_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_failure_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_failure_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- Messages per hour, template and status: how many were sent, delivered,
-- read and failed. Hours rather than quarters: a tenant has dozens of
-- templates, and the templates list sums them all; an hour is a quarter of
-- the rows, and every timezone but a handful (India, Nepal, ...) starts its
-- days on one.
CREATE TABLE message_template_counts (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- The hour the messages were created in.
    bucket      timestamptz NOT NULL,
    template_id uuid NOT NULL,
    status      text NOT NULL,
    count       bigint NOT NULL,
    PRIMARY KEY (tenant_id, bucket, template_id, status)
);
-- One template's page reads its own rows only.
CREATE INDEX message_template_counts_template_idx ON message_template_counts (tenant_id, template_id, bucket);
ALTER TABLE message_template_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_template_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_template_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- The dashboard's month and its 7-day chart count messages per day of the
-- tenant's timezone. From message_counts that is a month of quarters,
-- about 50,000 rows for a tenant on every channel, read on every load;
-- message_day_counts holds the same counts summed per day: 30 days are a
-- few hundred rows.
--
-- The days are summed from message_counts, not from the messages, by
-- message_day_counts_roll_up in the same transaction as
-- message_counts_roll_up: the days from the one p_from falls in onwards,
-- so each day holds exactly the quarters message_counts holds for it (the
-- day the mark's span ends in up to through, like its quarters). A full
-- recount, or a tenant whose timezone changed since the days were summed
-- (message_count_marks.day_zone), sums every day again. The reader uses
-- the days only where the period's bounds are midnights of day_zone, and
-- quarters or the messages elsewhere.
CREATE TABLE message_day_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- Midnight of the tenant's timezone (day_zone) the day begins at.
    day       timestamptz NOT NULL,
    channel   text NOT NULL,
    status    text NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, day, channel, status)
);
ALTER TABLE message_day_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_day_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_day_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- message_counts_roll_up recounts a tenant's messages created in
-- [p_from, p_through) (both on quarter hours) into message_counts,
-- message_latency_counts, message_failure_counts and
-- message_template_counts (from the hour p_from falls in), and widens the
-- mark when the span touches the one already covered; a span apart from it
-- replaces it. p_full says the span is the whole window the dashboard
-- shows, so counts before it are dropped; a span of 8 days or more sets
-- week_at.
-- +goose StatementBegin
CREATE FUNCTION message_counts_roll_up(p_tenant uuid, p_from timestamptz, p_through timestamptz, p_full boolean, p_now timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    m message_count_marks;
    n bigint;
    hour_from timestamptz := date_bin('1 hour', p_from, timestamptz '2000-01-01 00:00:00+00');
BEGIN
    IF p_from >= p_through THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('message_counts:' || p_tenant::text, 24));
    SELECT * INTO m FROM message_count_marks WHERE tenant_id = p_tenant;
    DELETE FROM message_counts WHERE tenant_id = p_tenant AND bucket >= p_from AND bucket < p_through;
    DELETE FROM message_latency_counts WHERE tenant_id = p_tenant AND bucket >= p_from AND bucket < p_through;
    DELETE FROM message_failure_counts WHERE tenant_id = p_tenant AND bucket >= p_from AND bucket < p_through;
    DELETE FROM message_template_counts WHERE tenant_id = p_tenant AND bucket >= hour_from AND bucket < p_through;
    IF p_full THEN
        DELETE FROM message_counts WHERE tenant_id = p_tenant AND bucket < p_from;
        DELETE FROM message_latency_counts WHERE tenant_id = p_tenant AND bucket < p_from;
        DELETE FROM message_failure_counts WHERE tenant_id = p_tenant AND bucket < p_from;
        DELETE FROM message_template_counts WHERE tenant_id = p_tenant AND bucket < hour_from;
    END IF;
    INSERT INTO message_counts (tenant_id, bucket, channel, status, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel, status, count(*)
    FROM messages WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through
    GROUP BY 2, 3, 4;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- Delivered and read messages, by how long they took; a read receipt
    -- that came without a delivery receipt stands for both.
    INSERT INTO message_latency_counts (tenant_id, bucket, channel, bin, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel,
        width_bucket(extract(epoch FROM coalesce(delivered_at, read_at) - created_at)::double precision, message_latency_bounds()),
        count(*)
    FROM messages
    WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through
        AND status IN ('DELIVERED', 'READ') AND coalesce(delivered_at, read_at) IS NOT NULL
    GROUP BY 2, 3, 4;
    INSERT INTO message_failure_counts (tenant_id, bucket, channel, reason, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel,
        coalesce(failed_reason, ''), count(*)
    FROM messages
    WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through AND status = 'FAILED'
    GROUP BY 2, 3, 4;
    INSERT INTO message_template_counts (tenant_id, bucket, template_id, status, count)
    SELECT p_tenant, date_bin('1 hour', created_at, timestamptz '2000-01-01 00:00:00+00'), template_id, status, count(*)
    FROM messages
    WHERE tenant_id = p_tenant AND created_at >= hour_from AND created_at < p_through AND template_id IS NOT NULL
    GROUP BY 2, 3, 4;
    IF m.tenant_id IS NULL OR p_full OR p_through < m.since OR p_from > m.through THEN
        INSERT INTO message_count_marks (tenant_id, since, through, full_at, week_at)
        VALUES (p_tenant, p_from, p_through, CASE WHEN p_full THEN p_now ELSE timestamptz 'epoch' END,
            CASE WHEN p_through - p_from >= interval '8 days' THEN p_now ELSE timestamptz 'epoch' END)
        ON CONFLICT (tenant_id) DO UPDATE SET since = excluded.since, through = excluded.through,
            full_at = CASE WHEN p_full THEN p_now ELSE message_count_marks.full_at END,
            week_at = CASE WHEN p_through - p_from >= interval '8 days' THEN p_now ELSE message_count_marks.week_at END;
    ELSE
        UPDATE message_count_marks SET since = least(since, p_from), through = greatest(through, p_through),
            week_at = CASE WHEN p_through - p_from >= interval '8 days' THEN p_now ELSE week_at END
        WHERE tenant_id = p_tenant;
    END IF;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- message_day_counts_roll_up sums message_counts into days of the tenant's
-- timezone, from the day p_from falls in (every day on p_full or a new
-- timezone), and records the timezone in the mark. It runs after
-- message_counts_roll_up, in its transaction and under its lock.
-- +goose StatementBegin
CREATE FUNCTION message_day_counts_roll_up(p_tenant uuid, p_from timestamptz, p_full boolean)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    m message_count_marks;
    tz text;
    d0 timestamptz;
    n bigint;
BEGIN
    SELECT * INTO m FROM message_count_marks WHERE tenant_id = p_tenant;
    SELECT timezone INTO tz FROM tenants WHERE id = p_tenant;
    IF m.tenant_id IS NULL OR tz IS NULL THEN
        RETURN 0;
    END IF;
    d0 := p_from;
    IF p_full OR m.day_zone IS DISTINCT FROM tz THEN
        DELETE FROM message_day_counts WHERE tenant_id = p_tenant;
        d0 := m.since;
    END IF;
    d0 := date_trunc('day', d0, tz);
    DELETE FROM message_day_counts WHERE tenant_id = p_tenant AND day >= d0;
    INSERT INTO message_day_counts (tenant_id, day, channel, status, count)
    SELECT p_tenant, date_trunc('day', bucket, tz), channel, status, sum(count)
    FROM message_counts WHERE tenant_id = p_tenant AND bucket >= d0
    GROUP BY 2, 3, 4;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF m.day_zone IS DISTINCT FROM tz THEN
        UPDATE message_count_marks SET day_zone = tz WHERE tenant_id = p_tenant;
    END IF;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Everything Herald's migrations made; River's tables are River's.
DROP TABLE IF EXISTS
    message_day_counts, message_template_counts, message_failure_counts, message_latency_counts,
    message_count_marks, message_counts,
    callback_deliveries, callback_endpoints, receipt_inbox, webhook_receipts,
    rate_buckets, quota_usage, usage_counters, delivery_deadlines,
    message_events, messages, inbound_messages, conversations, contact_changes, contacts,
    api_rejections, api_rejection_counters, trip_bookings, entity_supersessions, events,
    meta_templates, template_versions, templates, channel_accounts,
    audit_anchors, audit_log, api_keys, login_failure_windows, login_throttle, users, tenants
    CASCADE;
DROP FUNCTION IF EXISTS
    message_day_counts_roll_up(uuid, timestamptz, boolean),
    message_counts_roll_up(uuid, timestamptz, timestamptz, boolean, timestamptz),
    message_latency_bounds(),
    herald_receipt_inbox_notify(),
    herald_rate_throttled(text, double precision, timestamptz, double precision, double precision, double precision, double precision),
    herald_take_token_at(text, double precision, double precision, timestamptz, double precision, double precision),
    herald_take_token(text, double precision, double precision),
    herald_release_quota(),
    herald_message_status_guard(),
    audit_anchors_guard(),
    audit_log_immutable(),
    audit_log_chain(),
    herald_api_key_prefix_tenant(text),
    herald_api_key_auth(bytea),
    herald_platform(),
    herald_tenant();
