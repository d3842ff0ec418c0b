-- Anchors of the audit log's hash chains. Each entry links to the one
-- before it, so an edit or a deletion inside a chain breaks a link; but
-- deleting a chain's newest entries leaves a shorter chain that still
-- verifies. The verification job therefore records each chain's head (its
-- newest entry's id and hash) here, and also writes it to the log, which is
-- shipped elsewhere; the next run checks that the anchored head is still
-- there, unchanged. Anchors are append-only: the newest anchor of a chain
-- can be neither changed nor deleted (older ones may be pruned), except with
-- its tenant.

-- +goose Up
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
CREATE POLICY platform_only ON audit_anchors USING (herald_platform());

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

-- +goose Down
DROP TABLE audit_anchors;
DROP FUNCTION audit_anchors_guard();
