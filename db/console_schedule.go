package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// UpcomingEvents implements app.ScheduleStore. The status list matches the
// partial index events_pending_idx (tenant_id, send_at), which serves both
// the filter and the order.
func (t *Tx) UpcomingEvents(ctx context.Context, tenantID uuid.UUID, f app.ScheduleFilter, now time.Time, page app.PageRequest) ([]*app.ScheduledEvent, error) {
	where := []string{"tenant_id = $1", "status IN ('SCHEDULED', 'AWAITING_APPROVAL')", "send_at > $2"}
	args := []any{tenantID, now}
	if f.TriggerEvent != "" {
		args = append(args, f.TriggerEvent)
		where = append(where, fmt.Sprintf("trigger_event = $%d", len(args)))
	}
	if f.EntityID != "" {
		args = append(args, f.EntityID)
		where = append(where, fmt.Sprintf("entity_id = $%d", len(args)))
	}
	args = append(args, page.Limit, page.Offset)
	// Soonest first, unlike the console's other lists: what goes out next
	// is what a planner needs to see (and is the order of the index).
	q := `SELECT ` + eventColumns + `, jsonb_array_length(recipients) AS recipient_count FROM events
		WHERE ` + strings.Join(where, " AND ") + fmt.Sprintf(`
		ORDER BY send_at, id LIMIT $%d OFFSET $%d`, len(args)-1, len(args))
	rows := []*app.ScheduledEvent{}
	err := t.tx.SelectContext(ctx, &rows, q, args...)
	return rows, mapErr(err)
}

// EventsAwaitingApproval implements app.ScheduleStore.
func (t *Tx) EventsAwaitingApproval(ctx context.Context, tenantID uuid.UUID, page app.PageRequest) ([]*app.ScheduledEvent, error) {
	rows := []*app.ScheduledEvent{}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT `+eventColumns+`, jsonb_array_length(recipients) AS recipient_count FROM events
		WHERE tenant_id = $1 AND status = 'AWAITING_APPROVAL'
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, tenantID, page.Limit, page.Offset)
	return rows, mapErr(err)
}

// MessageKeyExists implements app.ScheduleStore.
func (t *Tx) MessageKeyExists(ctx context.Context, tenantID uuid.UUID, key string) (bool, error) {
	var ok bool
	err := t.tx.GetContext(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM messages WHERE tenant_id = $1 AND idempotency_key = $2)`, tenantID, key)
	return ok, mapErr(err)
}
