package db

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/console"
)

// likeEscaper makes user input literal inside a LIKE pattern.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// AuditRecords implements console.AuditLogStore. Newest first is id order: ids
// are drawn under the chain's lock, so they order entries as they were
// written even where two share a timestamp.
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

// RecentAuditActions implements console.AuditLogStore.
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
