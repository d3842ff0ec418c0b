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
-- * Names and parts of e-mail addresses ("berg", "lena.berg", "example.org")
--   are found anywhere in the name or address, which a B-tree cannot do
--   (a prefix index would miss the surname of "Lena Berg"). A trigram GIN
--   index over name and e-mail serves `ILIKE '%...%'` for three characters
--   or more (the console asks for at least three); the tenant condition is
--   checked on the few rows it returns. Contacts are written once per new
--   passenger or change of details, not per message, so the index costs
--   the hot path little.
--
-- pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner
-- may create it without superuser rights. The index is built CONCURRENTLY
-- so that migrating a large database does not block routing's writes.

-- +goose NO TRANSACTION
-- +goose Up
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DROP INDEX CONCURRENTLY IF EXISTS contacts_search_idx;
CREATE INDEX CONCURRENTLY contacts_search_idx ON contacts USING gin ((name || ' ' || coalesce(email, '')) gin_trgm_ops);

-- +goose Down
-- The extension stays: other objects may have come to use it.
DROP INDEX CONCURRENTLY IF EXISTS contacts_search_idx;
