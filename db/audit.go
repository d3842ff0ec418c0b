package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// InsertAudit serves app.AccountTx, app.APIKeyTx, app.BreakerTx,
// app.DispatchTx, app.IntakeTx, app.MessagesTx, app.TemplateTx,
// app.TenantTx, app.UserTx, console.AccountTx, console.MessageTx,
// console.QueueTx, console.SessionTx, console.TemplateTx, console.TenantTx
// and console.UserTx. The audit_log_chain trigger assigns the id and both
// hashes.
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

// VerifyAuditChains serves app.AuditTx: it recomputes each entry's hash and
// checks that it links to its predecessor in the same chain.
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

// CheckAuditAnchors serves app.AuditTx: every chain whose newest anchor
// names a head entry that is gone (newer entries were deleted with it) or
// whose hash changed.
func (t *Tx) CheckAuditAnchors(ctx context.Context) ([]app.AuditBreak, error) {
	var breaks []app.AuditBreak
	err := t.tx.SelectContext(ctx, &breaks, `
		SELECT an.tenant_id, an.head_id AS id,
		       CASE WHEN a.id IS NULL THEN 'the anchored newest entry is gone: entries were deleted from the end of the chain'
		            ELSE 'the anchored newest entry changed' END AS reason
		FROM (SELECT DISTINCT ON (tenant_id) tenant_id, head_id, head_hash FROM audit_anchors ORDER BY tenant_id, id DESC) an
		LEFT JOIN audit_log a ON a.id = an.head_id AND a.tenant_id IS NOT DISTINCT FROM an.tenant_id
		WHERE a.id IS NULL OR a.hash IS DISTINCT FROM an.head_hash
		ORDER BY an.head_id`)
	return breaks, mapErr(err)
}

// AnchorAuditChains serves app.AuditTx.
func (t *Tx) AnchorAuditChains(ctx context.Context, skip []*uuid.UUID, at time.Time) ([]app.AuditAnchor, error) {
	skipped := make([]string, 0, len(skip))
	for _, id := range skip {
		if id == nil {
			skipped = append(skipped, "platform")
		} else {
			skipped = append(skipped, id.String())
		}
	}
	var anchors []app.AuditAnchor
	err := t.tx.SelectContext(ctx, &anchors, `
		WITH heads AS (
			SELECT DISTINCT ON (tenant_id) tenant_id, id, hash FROM audit_log ORDER BY tenant_id, id DESC
		), last AS (
			SELECT DISTINCT ON (tenant_id) tenant_id, head_id FROM audit_anchors ORDER BY tenant_id, id DESC
		)
		INSERT INTO audit_anchors (tenant_id, head_id, head_hash, at)
		SELECT h.tenant_id, h.id, h.hash, $2 FROM heads h
		LEFT JOIN last l ON l.tenant_id IS NOT DISTINCT FROM h.tenant_id
		WHERE l.head_id IS DISTINCT FROM h.id AND coalesce(h.tenant_id::text, 'platform') <> ALL($1)
		RETURNING tenant_id, head_id, head_hash`, app.StringList(skipped), at)
	return anchors, mapErr(err)
}

// likeEscaper makes user input literal inside a LIKE pattern.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// AuditRecords serves console.AuditLogTx. Newest first is id order: ids are
// drawn under the chain's lock, so they order entries as they were written
// even where two share a timestamp.
func (t *Tx) AuditRecords(ctx context.Context, q console.AuditQuery, page console.PageRequest) ([]*console.AuditRecord, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch {
	case q.TenantID != nil:
		where = append(where, "a.tenant_id = "+arg(*q.TenantID))
	case q.PlatformOnly:
		where = append(where, "a.tenant_id IS NULL")
	case q.AllTenants:
		where = append(where, "true")
	default:
		return nil, fmt.Errorf("audit query without a scope")
	}
	if q.ActorContains != "" {
		where = append(where, `a.actor_label ILIKE `+arg("%"+likeEscaper.Replace(q.ActorContains)+"%")+` ESCAPE '\'`)
	}
	if q.Action != "" {
		if q.ActionPrefix {
			where = append(where, `a.action LIKE `+arg(likeEscaper.Replace(q.Action)+"%")+` ESCAPE '\'`)
		} else {
			where = append(where, "a.action = "+arg(q.Action))
		}
	}
	if !q.From.IsZero() {
		where = append(where, "a.at >= "+arg(q.From))
	}
	if !q.Until.IsZero() {
		where = append(where, "a.at < "+arg(q.Until))
	}
	query := `
		SELECT a.id, a.tenant_id, tn.slug AS tenant_slug, tn.name AS tenant_name, a.actor_type, a.actor_id, a.actor_label,
		       a.action, a.target_type, a.target_id, a.metadata, a.at
		FROM audit_log a LEFT JOIN tenants tn ON tn.id = a.tenant_id
		WHERE ` + strings.Join(where, " AND ") + `
		ORDER BY a.id DESC LIMIT ` + arg(page.Limit) + ` OFFSET ` + arg(page.Offset)
	rows := []*console.AuditRecord{}
	err := t.tx.SelectContext(ctx, &rows, query, args...)
	return rows, mapErr(err)
}

// recentActionWindow bounds how many of the newest entries are read to
// collect the actions a log holds; older actions are in console.AuditActions.
const recentActionWindow = 5000

// RecentAuditActions serves console.AuditLogTx.
func (t *Tx) RecentAuditActions(ctx context.Context, tenantID *uuid.UUID) ([]string, error) {
	out := []string{}
	var err error
	if tenantID != nil {
		err = t.tx.SelectContext(ctx, &out, `
			SELECT DISTINCT action FROM (
				SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2
			) recent ORDER BY action`, *tenantID, recentActionWindow)
	} else {
		err = t.tx.SelectContext(ctx, &out, `
			SELECT DISTINCT action FROM (
				SELECT action FROM audit_log ORDER BY id DESC LIMIT $1
			) recent ORDER BY action`, recentActionWindow)
	}
	return out, mapErr(err)
}
