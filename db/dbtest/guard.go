package dbtest

// A transaction belongs to one tenant, always. Every database the harness
// clones from its template enforces that rule, so that each database test of
// the suite fails when any code path scopes one transaction to a second
// tenant, narrows a platform transaction to a tenant, or widens a tenant's
// to the platform.
//
// Herald scopes a transaction with set_config('herald.scope', ..., true) and
// set_config('herald.tenant_id', ..., true) (db.beginScoped; the
// platform-scoped lookups of the migrations do the same), never with SET
// LOCAL (TestScope_SetThroughSetConfig holds the source to that). The
// template holds a set_config of its own in the herald_guard schema, and
// each clone's search_path names that schema before pg_catalog, so every
// unqualified set_config of every connection to the clone, plpgsql
// functions' included, goes through the guard, which checks and then calls
// pg_catalog's. public stays first in the path, so that objects a test
// creates land where the migrations put theirs.
//
// Databases for the migrations' own tests (CreateEmptyDatabase) and the
// template, which the migrations and River's build, are not guarded.

// guardSchema creates the guard in the template.
//
// The first scope a transaction takes (the platform, or a tenant) is its
// owner, kept in the transaction-local herald_guard.owner; a transaction
// that had its scope set another way (SET LOCAL) counts what is set as its
// owner. Leaving a scope for none (an empty tenant id, or herald.scope back
// to empty after a platform lookup outside any transaction) sees nothing and
// passes; taking another scope raises.
const guardSchema = `
CREATE SCHEMA herald_guard;
CREATE FUNCTION herald_guard.set_config(name text, value text, is_local boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  setting text := lower(name);
  claim text;
  owner text := nullif(current_setting('herald_guard.owner', true), '');
BEGIN
  IF setting = 'herald.tenant_id' AND value <> '' THEN
    claim := 'tenant ' || value;
  ELSIF setting = 'herald.scope' AND value = 'platform' THEN
    claim := 'the platform';
  END IF;
  IF claim IS NOT NULL THEN
    IF owner IS NULL THEN
      owner := CASE
        WHEN coalesce(current_setting('herald.scope', true), '') = 'platform' THEN 'the platform'
        WHEN coalesce(current_setting('herald.tenant_id', true), '') <> '' THEN 'tenant ' || current_setting('herald.tenant_id', true)
      END;
    END IF;
    IF owner IS NOT NULL AND owner <> claim THEN
      RAISE EXCEPTION 'a transaction belongs to one tenant: this one is scoped to %, and set_config(%, %) moves it to %',
        owner, quote_literal(name), quote_literal(value), claim
        USING HINT = 'Open a transaction of its own for each tenant (Store.InTenant); see db/dbtest/guard.go.';
    END IF;
    PERFORM pg_catalog.set_config('herald_guard.owner', claim, true);
  END IF;
  RETURN pg_catalog.set_config(name, value, is_local);
END
$$;
-- The runtime role the tests connect as goes through it too.
GRANT USAGE ON SCHEMA herald_guard TO ` + RuntimeRole + `;
`

// guardSearchPath is the search_path of every clone: public first, for what
// tests create, then the guard's set_config before pg_catalog's.
const guardSearchPath = `public, herald_guard, pg_catalog`
