package db

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/app"
)

// InsertAudit implements app.AuditStore. The audit_log_chain trigger assigns
// the id and both hashes.
func (t *Tx) InsertAudit(ctx context.Context, e *app.AuditEntry) error {
	meta := e.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("encode audit metadata: %w", err)
	}
	err = t.tx.QueryRowxContext(ctx, `
		INSERT INTO audit_log (tenant_id, actor_type, actor_id, actor_label, action, target_type, target_id, metadata)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		RETURNING id, at, prev_hash, hash`,
		e.TenantID, e.ActorType, e.ActorID, e.ActorLabel, e.Action, e.TargetType, e.TargetID, metaJSON,
	).Scan(&e.ID, &e.At, &e.PrevHash, &e.Hash)
	return mapErr(err)
}

// VerifyAuditChains implements app.AuditStore: it recomputes each entry's
// hash and checks that it links to its predecessor in the same chain.
func (t *Tx) VerifyAuditChains(ctx context.Context) ([]app.AuditBreak, error) {
	var breaks []app.AuditBreak
	err := t.tx.SelectContext(ctx, &breaks, `
		SELECT tenant_id, id, reason FROM (
			SELECT a.tenant_id, a.id,
			       CASE WHEN a.hash IS DISTINCT FROM audit_log_digest(a) THEN 'content does not match its hash'
			            WHEN lag(a.id) OVER w IS NOT NULL AND a.prev_hash IS DISTINCT FROM lag(a.hash) OVER w
			                 THEN 'link to the previous entry is broken'
			       END AS reason
			FROM audit_log a
			WINDOW w AS (PARTITION BY a.tenant_id ORDER BY a.id)
		) checked
		WHERE reason IS NOT NULL
		ORDER BY id
		LIMIT 100`)
	return breaks, mapErr(err)
}
