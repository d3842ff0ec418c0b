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
--   are spelled out, so each is one index range. No new index on events or
--   messages: both are written on the hot path, and a reference is copied
--   from the booking system, not half-remembered.
-- * Names and parts of e-mail addresses ("berg", "lena.berg") are found
--   anywhere in the name or address (ILIKE '%...%'). A trigram index would
--   serve that without row-level security, but contacts has FORCE ROW LEVEL
--   SECURITY: PostgreSQL evaluates the tenant policy before any condition
--   whose operator is not leakproof, and ILIKE is not, so no index can serve
--   it (only a superuser can mark an operator leakproof). What can be
--   served is the tenant: uuid equality is leakproof, so the index below
--   narrows the scan to the tenant's own contacts, newest first, instead of
--   every tenant's. Contacts are written once per new passenger or change
--   of details, not per message, so the index costs the hot path little.
--
-- Built CONCURRENTLY so that migrating a large database does not block
-- routing's writes.

-- +goose NO TRANSACTION
-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS contacts_tenant_updated_idx;
CREATE INDEX CONCURRENTLY contacts_tenant_updated_idx ON contacts (tenant_id, updated_at DESC);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS contacts_tenant_updated_idx;
