package db_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/db"
)

// person is a contact seeded with a message, something they wrote and a
// conversation, all as old as the seed says.
type person struct {
	contact, conversation, inbound uuid.UUID
	seeded
}

// seedPerson seeds a contact whose every activity (its last change, its
// message, what it wrote, its conversation) is age old, with personal
// data in each so that retention has something to remove.
func (b *retentionBundle) seedPerson(t *testing.T, tn *app.Tenant, age time.Duration) person {
	t.Helper()
	p := person{seeded: b.seed(t, tn, app.MessageDelivered, age, false), conversation: uuid.New(), inbound: uuid.New()}
	at := b.now.Add(-age)
	p.contact = b.countUUID(t, `SELECT contact_id FROM messages WHERE id = $1`, p.message)
	b.exec(t, `UPDATE contacts SET name = 'Lena Berg', phone = '+4915100000001', email = 'lena@example.com', updated_at = $2 WHERE id = $1`, p.contact, at)
	b.exec(t, `UPDATE messages SET to_address = 'lena@example.com', subject = 'Your trip, Lena', body = 'Hello Lena Berg',
		estimated_cost = 12, provider = 'ses' WHERE id = $1`, p.message)
	b.exec(t, `UPDATE events SET recipients = '[{"name": "Lena Berg", "email": "lena@example.com"}]', context = '{"seat": "12A"}',
		status = 'ROUTED' WHERE id = $1`, p.event)
	b.exec(t, `INSERT INTO conversations (id, tenant_id, contact_id, booking_id, status, last_inbound_at, created_at, updated_at)
		VALUES ($1, $2, $3, 'BK-1', 'OPEN', $4, $4, $4)`, p.conversation, tn.ID, p.contact, at)
	b.exec(t, `INSERT INTO inbound_messages (id, tenant_id, contact_id, conversation_id, channel, provider, external_id, from_address, body, received_at, created_at)
		VALUES ($1, $2, $3, $4, 'WHATSAPP', 'meta', $6, '+4915100000001', 'Lena here', $5, $5)`, p.inbound, tn.ID, p.contact, p.conversation, at, p.inbound.String())
	return p
}

func (b *retentionBundle) countUUID(t *testing.T, query string, args ...any) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, query, args...).Scan(&id)
	}))
	return id
}

// facts are the dashboard's and usage's figures of a tenant, read as the
// console reads them.
type facts struct {
	counts map[console.MessageCount]int
	usage  map[app.Channel]int
	cost   int
}

func (b *retentionBundle) facts(t *testing.T, tn *app.Tenant) facts {
	t.Helper()
	var f facts
	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
		bounds := []time.Time{b.now.AddDate(0, 0, -400), b.now.AddDate(0, 0, -30), b.now.AddDate(0, 0, -7)}
		counts, err := tx.MessageCounts(b.ctx, tn.ID, bounds, b.now.Add(time.Minute))
		if err != nil {
			return err
		}
		f.counts = map[console.MessageCount]int{}
		for _, c := range counts {
			f.counts[c]++
		}
		if f.usage, err = tx.UsageByChannel(b.ctx, tn.ID, time.Date(b.now.Year(), b.now.Month(), 1, 0, 0, 0, 0, time.UTC)); err != nil {
			return err
		}
		return tx.SQL().QueryRowContext(b.ctx, `SELECT coalesce(sum(estimated_cost), 0) FROM messages WHERE tenant_id = $1`, tn.ID).Scan(&f.cost)
	}))
	return f
}

func TestRetention_PersonalData(t *testing.T) {
	t.Parallel()

	t.Run("EachKindAtTheBoundary", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t)
		tn := createTenant(t, b.testBundle, "boundary")
		b.exec(t, `UPDATE tenants SET retention_days = 30 WHERE id = $1`, tn.ID)
		edge := 30 * 24 * time.Hour
		past := b.seedPerson(t, tn, edge+time.Minute)
		within := b.seedPerson(t, tn, edge-time.Minute)
		// Expired events never sent anything: one past retention, one within.
		oldExpired, newExpired := uuid.New(), uuid.New()
		for id, age := range map[uuid.UUID]time.Duration{oldExpired: edge + time.Minute, newExpired: edge - time.Minute} {
			b.exec(t, `INSERT INTO events (id, tenant_id, source_event_id, trigger_event, recipients, context, status, payload_size, created_at)
				VALUES ($1, $2, $4, 'TRIP_REMINDER', '[{"phone": "+4915100000001"}]', '{}', 'EXPIRED', 10, $3)`, id, tn.ID, b.now.Add(-age), id.String())
		}
		// A contact idle since before retention whose conversation got a
		// message yesterday: both stay.
		active := b.seedPerson(t, tn, edge+time.Hour)
		b.exec(t, `UPDATE inbound_messages SET received_at = $2 WHERE id = $1`, active.inbound, b.now.Add(-24*time.Hour))
		before := b.facts(t, tn)

		res, err := b.maintenance(db.Scope[app.MaintenanceTx](b.store)).Prune(b.ctx)
		require.NoError(t, err)

		// Messages: the past one keeps its facts, not its personal data.
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM messages WHERE id = $1 AND redaction = 'retention'
			AND to_address = '' AND subject = '' AND body = '' AND status = 'DELIVERED' AND channel = 'EMAIL'
			AND trigger_event = 'BOOKING_REFUNDED' AND estimated_cost = 12 AND provider = 'ses' AND sent_at IS NOT NULL`, past.message))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM messages WHERE id = $1 AND redacted_at IS NULL AND body = 'Hello Lena Berg'`, within.message))
		require.Zero(t, b.count(t, `SELECT count(*) FROM message_events WHERE message_id = $1`, past.message))
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM message_events WHERE message_id = $1`, within.message))
		// Events, EXPIRED ones too.
		require.False(t, b.exists(t, "events", past.event))
		require.True(t, b.exists(t, "events", within.event))
		require.False(t, b.exists(t, "events", oldExpired))
		require.True(t, b.exists(t, "events", newExpired))
		// What passengers wrote.
		require.False(t, b.exists(t, "inbound_messages", past.inbound))
		require.True(t, b.exists(t, "inbound_messages", within.inbound))
		require.True(t, b.exists(t, "inbound_messages", active.inbound))
		// Conversations, by their last message.
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM conversations WHERE id = $1 AND erased_at IS NOT NULL AND status = 'RESOLVED'`, past.conversation))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM conversations WHERE id = $1 AND erased_at IS NULL AND status = 'OPEN'`, within.conversation))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM conversations WHERE id = $1 AND erased_at IS NULL`, active.conversation),
			"a message yesterday keeps it")
		// Contacts, by their last activity.
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM contacts WHERE id = $1 AND erasure = 'retention' AND name = ''
			AND phone IS NULL AND email IS NULL`, past.contact))
		require.Zero(t, b.count(t, `SELECT count(*) FROM contact_changes WHERE contact_id = $1`, past.contact))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM contacts WHERE id = $1 AND erased_at IS NULL AND name = 'Lena Berg'`, within.contact))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM contacts WHERE id = $1 AND erased_at IS NULL`, active.contact),
			"what the contact wrote yesterday is activity")
		require.Equal(t, 1, res.Contacts, "%+v", res)
		require.Equal(t, 1, res.Conversations, "%+v", res)
		require.Equal(t, 1, res.Inbound, "%+v", res)
		require.Equal(t, 2, res.Messages, "the past person's and the active one's old message: %+v", res)
		require.Equal(t, 3, res.Events, "%+v", res)

		require.Equal(t, before, b.facts(t, tn), "the dashboard's counts, usage and cost are the same")
		require.Zero(t, b.orphans(t))

		again, err := b.maintenance(db.Scope[app.MaintenanceTx](b.store)).Prune(b.ctx)
		require.NoError(t, err)
		require.Equal(t, app.PruneResult{}, again, "nothing is done twice")
	})

	t.Run("ErasureOnRequest", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t)
		tn := createTenant(t, b.testBundle, "erasure")
		other := createTenant(t, b.testBundle, "erasure-other")
		lena := b.seedPerson(t, tn, time.Hour)
		// An event for Lena and Jonas: only Lena's entry and files go.
		jonas := b.seed(t, tn, app.MessageDelivered, time.Hour, false)
		b.exec(t, `UPDATE messages SET event_id = $2, recipient_index = 1 WHERE id = $1`, jonas.message, lena.event)
		b.exec(t, `UPDATE messages SET recipient_index = 0 WHERE id = $1`, lena.message)
		b.exec(t, `UPDATE events SET recipients = '[{"name": "Lena Berg"}, {"name": "Jonas"}]', context = '{"trip": "T-1"}' WHERE id = $1`, lena.event)
		for i, idx := range []any{0, 1, nil} {
			b.exec(t, `INSERT INTO attachments (id, tenant_id, event_id, recipient_index, position, filename, content_type, source_url, created_at)
				VALUES ($1, $2, $3, $4, $5, 'ticket.pdf', 'application/pdf', 'https://files.example/t.pdf', now())`,
				uuid.New(), tn.ID, lena.event, idx, i)
		}
		queued := uuid.New()
		b.exec(t, `INSERT INTO messages (id, tenant_id, contact_id, correlation_id, idempotency_key, trigger_event, channel, status, to_address, body)
			VALUES ($1, $2, $3, $4, $4, 'TRIP_REMINDER', 'SMS', 'QUEUED', '+4915100000001', 'Hi Lena')`, queued, tn.ID, lena.contact, queued.String())
		contacts := &app.Contacts{Store: db.Scope[app.ContactsTx](b.store), Now: func() time.Time { return b.now }}
		actor := app.Actor{Type: app.ActorAPIKey, Label: "booking system"}

		_, err := contacts.Erase(b.ctx, actor, other.ID, lena.contact)
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err), "another tenant's contact")
		_, err = contacts.Erase(b.ctx, actor, tn.ID, uuid.New())
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))
		require.Zero(t, b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'contact.erase'`))

		res, err := contacts.Erase(b.ctx, actor, tn.ID, lena.contact)
		require.NoError(t, err)
		require.Equal(t, app.ContactErasure{Contacts: 1, Messages: 2, Cancelled: 1, Inbound: 1, Conversations: 1, History: 1, Events: 1, Files: 1},
			res.Removed)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM messages WHERE id = $1 AND status = 'CANCELLED' AND to_address = '' AND body = ''`, queued))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE id = $1
			AND recipients = '[{}, {"name": "Jonas"}]' AND context = '{"trip": "T-1"}'`, lena.event), "Jonas's entry and the shared context stay")
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM attachments WHERE event_id = $1`, lena.event), "Jonas's file and the shared one stay")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM messages WHERE id = $1 AND redacted_at IS NULL`, jonas.message))
		for _, v := range []string{"Lena", "lena@example.com", "+4915100000001", "15100000001"} {
			require.Zero(t, b.count(t, `SELECT
				(SELECT count(*) FROM audit_log a WHERE a.action = 'contact.erase' AND a::text LIKE '%' || $1 || '%')
				+ (SELECT count(*) FROM messages x WHERE x.contact_id = $2 AND x::text LIKE '%' || $1 || '%')
				+ (SELECT count(*) FROM events x WHERE x::text LIKE '%' || $1 || '%')
				+ (SELECT count(*) FROM contacts x WHERE x::text LIKE '%' || $1 || '%')
				+ (SELECT count(*) FROM inbound_messages x WHERE x::text LIKE '%' || $1 || '%')`, v, lena.contact), v)
		}
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'contact.erase' AND target_id = $1
			AND actor_type = 'api_key' AND actor_label = 'booking system' AND (metadata->>'messages')::int = 2`, lena.contact.String()))

		again, err := contacts.Erase(b.ctx, actor, tn.ID, lena.contact)
		require.NoError(t, err)
		require.True(t, again.AlreadyErased)
		require.Equal(t, res.ErasedAt, again.ErasedAt)
		require.Equal(t, app.ContactErasure{}, again.Removed)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'contact.erase'`), "a repeat records nothing")
	})
}
