package db_test

import (
	"fmt"
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
			inserted, err = app.InsertMessage(b.ctx, tx, m, &app.MessageEvent{TenantID: tn.ID, MessageID: m.ID, ToStatus: &m.Status, Source: app.SourceRouting, At: now})
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
		_, err := app.InsertMessage(b.ctx, tx, m, &app.MessageEvent{})
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		return nil
	})
}

// TestInsertMessages_ARouteAtOnce stores a route's messages with one call,
// as routing does: each recipient's messages share the conversation the
// statement finds or opens, a key already stored or repeated within the
// call is left alone and reported, each new message gets its first
// timeline entry, and the messages read back as they were given, their nil
// fields still nil.
func TestInsertMessages_ARouteAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "route-at-once")
	now := time.Now().UTC()
	anna := &app.Contact{ID: uuid.New(), TenantID: tn.ID, Name: "Anna Schmidt", Email: strPtr("anna@example.com"), CreatedAt: now, UpdatedAt: now}
	ben := &app.Contact{ID: uuid.New(), TenantID: tn.ID, Name: "Ben Okafor", Email: strPtr("ben@example.com"), CreatedAt: now, UpdatedAt: now}
	inTx := func(fn func(tx *db.Tx) error) {
		t.Helper()
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, fn))
	}
	inTx(func(tx *db.Tx) error { return tx.InsertContacts(b.ctx, []*app.Contact{anna, ben}, nil) })
	message := func(key string, c *app.Contact, ch app.Channel, trip string) *app.Message {
		m := &app.Message{ID: uuid.New(), TenantID: tn.ID, CorrelationID: "route-1", IdempotencyKey: key, TriggerEvent: "DEPARTURE_CHANGED",
			Channel: ch, ContactID: &c.ID, ToAddress: *c.Email, Body: "Neue Abfahrt 07:15", Status: app.MessageQueued,
			FallbackChain: app.StringList{"SMS"}, QueuedAt: now, CreatedAt: now, UpdatedAt: now}
		if trip != "" {
			m.OpenConversation = &app.Entity{Type: app.EntityTrip, ID: trip}
		}
		return m
	}
	insert := func(ms ...*app.Message) []bool {
		t.Helper()
		firsts := make([]*app.MessageEvent, len(ms))
		for i, m := range ms {
			firsts[i] = &app.MessageEvent{TenantID: tn.ID, MessageID: m.ID, ToStatus: &m.Status, Source: app.SourceRouting,
				Detail: map[string]any{"n": i}, At: now}
		}
		var inserted []bool
		inTx(func(tx *db.Tx) (err error) {
			inserted, err = tx.InsertMessages(b.ctx, ms, firsts)
			return err
		})
		return inserted
	}
	stored := message("trip-1:anna:email", anna, app.Email, "T-1")
	require.Equal(t, []bool{true}, insert(stored))

	annaEmail := message("trip-1:anna:email", anna, app.Email, "T-1") // stored before
	annaSMS := message("trip-1:anna:sms", anna, app.SMS, "T-1")
	benEmail := message("trip-1:ben:email", ben, app.Email, "T-1")
	benAgain := message("trip-1:ben:email", ben, app.Email, "T-1") // twice in one call
	benOther := message("trip-2:ben:email", ben, app.Email, "T-2")
	plain := message("trip-1:ben:none", ben, app.Email, "")
	require.Equal(t, []bool{false, true, true, false, true, true}, insert(annaEmail, annaSMS, benEmail, benAgain, benOther, plain))

	require.Equal(t, *stored.ConversationID, *annaEmail.ConversationID, "Anna's open conversation about the trip")
	require.Equal(t, *stored.ConversationID, *annaSMS.ConversationID)
	require.Equal(t, *benEmail.ConversationID, *benAgain.ConversationID, "one conversation per contact and trip")
	require.NotEqual(t, *benEmail.ConversationID, *stored.ConversationID)
	require.NotEqual(t, *benEmail.ConversationID, *benOther.ConversationID, "another trip, another conversation")
	require.Nil(t, plain.ConversationID, "no entity, no conversation")
	require.Nil(t, plain.FallbackOf, "reading the message for the insert fills none of its nil fields")
	require.Nil(t, plain.EventID)

	inTx(func(tx *db.Tx) error {
		var conversations, entries int
		require.NoError(t, tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM conversations WHERE tenant_id = $1`, tn.ID).Scan(&conversations))
		require.Equal(t, 3, conversations, "Anna/T-1, Ben/T-1, Ben/T-2")
		require.NoError(t, tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM message_events WHERE tenant_id = $1`, tn.ID).Scan(&entries))
		require.Equal(t, 5, entries, "one entry per new message")

		got, err := tx.MessageByID(b.ctx, tn.ID, annaSMS.ID, false)
		require.NoError(t, err)
		require.Equal(t, annaSMS.ConversationID, got.ConversationID)
		require.Equal(t, app.StringList{"SMS"}, got.FallbackChain)
		require.True(t, now.Truncate(time.Microsecond).Equal(got.CreatedAt), "times stored to the microsecond, cut as a parameter's")
		require.Nil(t, got.SentAt)
		timeline, err := tx.Timeline(b.ctx, tn.ID, annaSMS.ID)
		require.NoError(t, err)
		require.Len(t, timeline, 1)
		require.Equal(t, app.MessageQueued, *timeline[0].ToStatus)
		require.EqualValues(t, 1, timeline[0].Detail["n"], "the entry given with this message")
		_, err = tx.MessageByID(b.ctx, tn.ID, benAgain.ID, false)
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err), "the repeated key stored nothing")
		return nil
	})

	t.Run("a route larger than a batch", func(t *testing.T) {
		// Each batch is a statement of its own: the later one finds the
		// conversation and the key the earlier one stored.
		ms := make([]*app.Message, db.InsertBatch+1)
		for i := range db.InsertBatch {
			ms[i] = message(fmt.Sprintf("big-trip:anna:%d", i), anna, app.Email, "T-big")
		}
		ms[db.InsertBatch] = message("big-trip:anna:0", anna, app.Email, "T-big")
		inserted := insert(ms...)
		require.Len(t, inserted, db.InsertBatch+1)
		require.True(t, inserted[0])
		require.True(t, inserted[db.InsertBatch-1])
		require.False(t, inserted[db.InsertBatch], "the key the first batch stored")
		for _, m := range ms {
			require.Equal(t, *ms[0].ConversationID, *m.ConversationID, "one conversation across batches")
		}
		inTx(func(tx *db.Tx) error {
			var n int
			require.NoError(t, tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM conversations WHERE tenant_id = $1 AND trip_id = 'T-big'`, tn.ID).Scan(&n))
			require.Equal(t, 1, n)
			require.NoError(t, tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM messages WHERE tenant_id = $1 AND idempotency_key LIKE 'big-trip:%'`, tn.ID).Scan(&n))
			require.Equal(t, db.InsertBatch, n)
			return nil
		})
	})
	t.Run("a message of another tenant stores nothing", func(t *testing.T) {
		other := createTenant(t, b, "route-at-once-other")
		mine := message("trip-3:anna:email", anna, app.Email, "T-3")
		theirs := message("trip-3:theirs:email", anna, app.Email, "")
		theirs.TenantID = other.ID
		err := b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			_, err := tx.InsertMessages(b.ctx, []*app.Message{mine, theirs}, []*app.MessageEvent{{Source: app.SourceRouting}, {Source: app.SourceRouting}})
			return err
		})
		require.ErrorContains(t, err, "in a transaction of tenant")
		inTx(func(tx *db.Tx) error {
			_, err := tx.MessageByID(b.ctx, tn.ID, mine.ID, false)
			require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))
			return nil
		})
	})
	t.Run("each message needs its timeline entry", func(t *testing.T) {
		err := b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			_, err := tx.InsertMessages(b.ctx, []*app.Message{message("trip-4:anna:email", anna, app.Email, "")}, nil)
			return err
		})
		require.ErrorContains(t, err, "1 messages and 0 timeline entries")
	})
}

// TestConversation_ConditionalChanges checks that a conversation's status
// moves only from the status its caller read, and that it is assigned only
// to an active user of its own tenant.
func TestConversation_ConditionalChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "conversation-moves")
	now := time.Now().UTC()
	contact := &app.Contact{ID: uuid.New(), TenantID: tn.ID, Name: "Anna Schmidt", Phone: strPtr("+4915123456789"), CreatedAt: now, UpdatedAt: now}
	conv := &app.Conversation{ID: uuid.New(), TenantID: tn.ID, ContactID: contact.ID, Status: app.ConversationOpen, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		if err := tx.InsertContacts(b.ctx, []*app.Contact{contact}, nil); err != nil {
			return err
		}
		return tx.InsertConversation(b.ctx, conv)
	}))
	move := func(from, to string) bool {
		t.Helper()
		var ok bool
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			ok, err = tx.MoveConversation(b.ctx, tn.ID, conv.ID, from, to, now)
			return err
		}))
		return ok
	}
	require.True(t, move(app.ConversationOpen, app.ConversationResolved))
	require.False(t, move(app.ConversationOpen, app.ConversationSnoozed), "someone else resolved it first")
	require.True(t, move(app.ConversationResolved, app.ConversationOpen))

	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		stranger := uuid.New()
		ok, err := tx.AssignConversation(b.ctx, tn.ID, conv.ID, &stranger, now)
		require.NoError(t, err)
		require.False(t, ok, "no such user of the tenant")
		ok, err = tx.AssignConversation(b.ctx, tn.ID, conv.ID, nil, now)
		require.NoError(t, err)
		require.True(t, ok, "nobody is always allowed")
		n, err := tx.UnansweredConversations(b.ctx, tn.ID, now.Add(time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "the passenger never wrote")
		require.NoError(t, tx.ConversationHeard(b.ctx, tn.ID, conv.ID, now))
		n, err = tx.UnansweredConversations(b.ctx, tn.ID, now.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.NoError(t, tx.MarkConversationReplied(b.ctx, tn.ID, conv.ID, now.Add(time.Second)))
		n, err = tx.UnansweredConversations(b.ctx, tn.ID, now.Add(time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "answered")
		return nil
	}))
}
