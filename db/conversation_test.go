package db_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// TestInsertMessage_OpensConversations checks the conversation a routed
// message's insert finds or opens (Message.OpenConversation): the
// contact's open one about the entity, a new one for another entity or
// once the old one is resolved, and the open one also when the message
// itself exists already.
func TestInsertMessage_OpensConversations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "conversations")
	now := time.Now().UTC()
	contact := &app.Contact{ID: uuid.New(), TenantID: tn.ID, Name: "Anna Schmidt", Email: strPtr("anna@example.com"), CreatedAt: now, UpdatedAt: now}
	inTx := func(fn func(tx *db.Tx) error) {
		t.Helper()
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, fn))
	}
	inTx(func(tx *db.Tx) error { return tx.InsertContacts(b.ctx, []*app.Contact{contact}, nil) })

	insert := func(key, booking string) (*app.Message, bool) {
		t.Helper()
		m := &app.Message{ID: uuid.New(), TenantID: tn.ID, CorrelationID: key, IdempotencyKey: key, TriggerEvent: "BOOKING_CONFIRMED",
			Channel: app.Email, ContactID: &contact.ID, ToAddress: "anna@example.com", Body: "Hallo", Status: app.MessageQueued,
			FallbackChain: app.StringList{}, QueuedAt: now, CreatedAt: now, UpdatedAt: now,
			OpenConversation: &app.Entity{Type: app.EntityBooking, ID: booking}}
		var inserted bool
		inTx(func(tx *db.Tx) (err error) {
			inserted, err = tx.InsertMessage(b.ctx, m, &app.MessageEvent{TenantID: tn.ID, MessageID: m.ID, ToStatus: &m.Status, Source: app.SourceRouting, At: now})
			return err
		})
		require.NotNil(t, m.ConversationID)
		return m, inserted
	}
	first, ok := insert("conv-1", "BK-1")
	require.True(t, ok)
	second, _ := insert("conv-2", "BK-1")
	require.Equal(t, *first.ConversationID, *second.ConversationID, "the open conversation about the booking")
	other, _ := insert("conv-3", "BK-2")
	require.NotEqual(t, *first.ConversationID, *other.ConversationID, "another booking, another conversation")

	inTx(func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(b.ctx, `UPDATE conversations SET status = 'RESOLVED' WHERE id = $1`, *first.ConversationID)
		return err
	})
	reopened, _ := insert("conv-4", "BK-1")
	require.NotEqual(t, *first.ConversationID, *reopened.ConversationID, "a resolved conversation is not reused")
	again, inserted := insert("conv-4", "BK-1")
	require.False(t, inserted, "the message exists already")
	require.Equal(t, *reopened.ConversationID, *again.ConversationID)
	var n int
	inTx(func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM conversations WHERE tenant_id = $1`, tn.ID).Scan(&n)
	})
	require.Equal(t, 3, n)

	inTx(func(tx *db.Tx) error {
		m := &app.Message{ID: uuid.New(), TenantID: tn.ID, ContactID: &contact.ID, OpenConversation: &app.Entity{Type: "cruise", ID: "C-1"}}
		_, err := tx.InsertMessage(b.ctx, m, &app.MessageEvent{})
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		return nil
	})
}
