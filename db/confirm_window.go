package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// ConfirmationWindows serves app.ConfirmWindowTx: every event's window
// ('*') first, then the events' own by name.
func (t *Tx) ConfirmationWindows(ctx context.Context, tenantID uuid.UUID) ([]*app.ConfirmationWindow, error) {
	ws := []*app.ConfirmationWindow{}
	err := t.tx.SelectContext(ctx, &ws, `
		SELECT tenant_id, trigger_event, seconds, updated_at FROM confirmation_windows
		WHERE tenant_id = $1 ORDER BY trigger_event <> '`+app.AnyEvent+`', trigger_event`, tenantID)
	return ws, mapErr(err)
}

// SetConfirmationWindow serves app.ConfirmWindowTx.
func (t *Tx) SetConfirmationWindow(ctx context.Context, w *app.ConfirmationWindow) error {
	_, err := t.tx.ExecContext(ctx, `
		INSERT INTO confirmation_windows (tenant_id, trigger_event, seconds, updated_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, trigger_event) DO UPDATE SET seconds = excluded.seconds, updated_at = excluded.updated_at`,
		w.TenantID, w.TriggerEvent, w.Seconds, w.UpdatedAt)
	return mapErr(err)
}

// DeleteConfirmationWindow serves app.ConfirmWindowTx.
func (t *Tx) DeleteConfirmationWindow(ctx context.Context, tenantID uuid.UUID, triggerEvent string) (int, bool, error) {
	var seconds int
	err := t.tx.GetContext(ctx, &seconds, `
		DELETE FROM confirmation_windows WHERE tenant_id = $1 AND trigger_event = $2 RETURNING seconds`, tenantID, triggerEvent)
	if isNoRows(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, mapErr(err)
	}
	return seconds, true, nil
}
