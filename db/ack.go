package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// MessageByExternalID serves app.AckTx: the tenant's message its provider
// knows by externalID (the unique messages_external_key index, filtered to
// the tenant, so another tenant's id finds nothing).
func (t *Tx) MessageByExternalID(ctx context.Context, tenantID uuid.UUID, provider, externalID string) (*app.Message, error) {
	var m app.Message
	err := t.tx.GetContext(ctx, &m, `
		SELECT `+messageColumns+` FROM messages
		WHERE provider = $2 AND external_message_id = $3 AND tenant_id = $1`, tenantID, provider, externalID)
	if err != nil {
		return nil, notFound(err, "No message has provider id %s.", externalID)
	}
	return &m, nil
}

// AcknowledgeMessage serves app.AckTx: one conditional update, so that of
// two acknowledgements at once (a button reply and a link tap, or a
// replayed webhook) only the first sets the columns.
func (t *Tx) AcknowledgeMessage(ctx context.Context, a *app.Acknowledgement) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET acknowledged_at = $3, ack_via = $4
		WHERE tenant_id = $1 AND id = $2 AND acknowledged_at IS NULL`, a.TenantID, a.MessageID, a.At, a.Via)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr(err)
}

// CallListMessage serves app.OverdueTx: it puts the message on its
// trip's call list once (a conditional update), reporting whether it did.
func (t *Tx) CallListMessage(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET call_listed_at = $3 WHERE tenant_id = $1 AND id = $2 AND call_listed_at IS NULL`, tenantID, id, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr(err)
}
