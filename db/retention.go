package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// redactMessages removes the personal data of the tenant's messages ids:
// their timelines, receipts and callback deliveries (whose details and
// payloads repeat the address and the text) are deleted, and the rows'
// address, subject and body blanked, with when and why. The rows stay
// with their facts, so every count over messages is unchanged. It is the
// one write that removes a message's personal data, for retention and
// erasure alike.
func (t *Tx) redactMessages(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, at time.Time, reason string) (app.MessagePrune, error) {
	var res app.MessagePrune
	if len(ids) == 0 {
		return res, nil
	}
	var err error
	for _, step := range []struct {
		count *int
		query string
	}{
		{&res.Timeline, pruneMessagesTimeline},
		{&res.Receipts, `DELETE FROM webhook_receipts WHERE message_id = ANY($2::uuid[]) AND tenant_id = $1`},
		{&res.Callbacks, `DELETE FROM callback_deliveries WHERE message_id = ANY($2::uuid[]) AND tenant_id = $1`},
	} {
		if *step.count, err = t.prune(ctx, step.query, tenantID, uuidArray(ids)); err != nil {
			return res, err
		}
	}
	res.Messages, err = t.prune(ctx, `
		UPDATE messages SET to_address = '', subject = '', body = '', redacted_at = $3, redaction = $4
		WHERE id = ANY($2::uuid[]) AND tenant_id = $1 AND redacted_at IS NULL`, tenantID, uuidArray(ids), at, reason)
	return res, err
}

// contactEvents is, for a set of contacts ($1 tenant, $2 contact ids),
// each event their messages came from, the recipient positions those
// messages were for, and whether every message of the event is theirs
// (its variables and event-wide files are then theirs too).
const contactEvents = `
	SELECT m.event_id, array_agg(DISTINCT m.recipient_index) FILTER (WHERE m.recipient_index IS NOT NULL) AS idxs,
		NOT EXISTS (SELECT 1 FROM messages o WHERE o.tenant_id = $1 AND o.event_id = m.event_id
			AND (o.contact_id IS NULL OR NOT o.contact_id = ANY($2::uuid[]))) AS alone
	FROM messages m
	WHERE m.tenant_id = $1 AND m.contact_id = ANY($2::uuid[]) AND m.event_id IS NOT NULL
	GROUP BY m.event_id`

// eraseContactsSteps are the statements of an erasure ($1 tenant, $2
// contact ids, $3 time, $4 reason) in their order, each with its count:
// events are blanked and their files deleted through the messages (which
// keep their event ids), before the messages are redacted between the
// second and the third step.
var eraseContactsSteps = []struct {
	name  string
	query string
}{
	// Only events it changes count: an erasure repeated finds the
	// recipient blank already and changes nothing.
	{"events", `
		UPDATE events e SET recipients = n.recipients, context = n.context, routing = n.routing, audience = n.audience, updated_at = $3
		FROM (
			SELECT e2.id,
				CASE WHEN jsonb_typeof(e2.recipients) <> 'array' THEN '[]'::jsonb ELSE coalesce((
					SELECT jsonb_agg(CASE WHEN r.i - 1 = ANY(x.idxs) OR x.alone THEN '{}'::jsonb ELSE r.v END ORDER BY r.i)
					FROM jsonb_array_elements(e2.recipients) WITH ORDINALITY AS r(v, i)), '[]'::jsonb) END AS recipients,
				CASE WHEN x.alone THEN '{}'::jsonb ELSE e2.context END AS context,
				CASE WHEN x.alone THEN NULL ELSE e2.routing END AS routing,
				CASE WHEN x.alone THEN NULL ELSE e2.audience END AS audience
			FROM events e2 JOIN (` + contactEvents + `) x ON x.event_id = e2.id
			WHERE e2.tenant_id = $1) n
		WHERE e.tenant_id = $1 AND e.id = n.id
		  AND (e.recipients, e.context, e.routing, e.audience) IS DISTINCT FROM (n.recipients, n.context, n.routing, n.audience)`},
	{"files", `
		DELETE FROM attachments a USING (` + contactEvents + `) x
		WHERE a.tenant_id = $1 AND a.event_id = x.event_id
		  AND (a.recipient_index = ANY(x.idxs) OR (a.recipient_index IS NULL AND x.alone))`},
	{"inbound", `DELETE FROM inbound_messages WHERE tenant_id = $1 AND contact_id = ANY($2::uuid[])`},
	{"conversations", `
		UPDATE conversations SET erased_at = $3, updated_at = $3,
			status = 'RESOLVED', status_at = CASE WHEN status <> 'RESOLVED' THEN $3 ELSE status_at END
		WHERE tenant_id = $1 AND contact_id = ANY($2::uuid[]) AND erased_at IS NULL`},
	{"history", `DELETE FROM contact_changes WHERE tenant_id = $1 AND contact_id = ANY($2::uuid[])`},
	{"contacts", `
		UPDATE contacts SET passenger_profile_id = NULL, name = '', phone = NULL, email = NULL, locale = NULL,
			email_complained_at = NULL, whatsapp_window_until = NULL, opted_out = '{}', opt_out_at = '{}',
			erased_at = $3, erasure = $4, updated_at = $3
		WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND erased_at IS NULL`},
}

// eraseStepArgs are the arguments of an erasure step: those of its
// statement's parameters it uses (the tenant and the contacts always).
func eraseStepArgs(name string, tenantID uuid.UUID, ids []uuid.UUID, at time.Time, reason string) []any {
	switch name {
	case "events", "conversations":
		return []any{tenantID, uuidArray(ids), at}
	case "contacts":
		return []any{tenantID, uuidArray(ids), at, reason}
	}
	return []any{tenantID, uuidArray(ids)}
}

// eraseContacts erases the tenant's contacts ids, which the caller has
// locked: it cancels their messages still waiting (none has a provider
// call in flight), blanks their events' recipients and deletes their
// files, removes their messages' personal data (redactMessages), deletes
// what they wrote and their history, closes and marks their conversations,
// and blanks the contacts, keeping their ids. Contacts erased before are
// left as they are; their messages, conversations and events are looked
// at again, so that nothing a race added after the first erasure stays.
func (t *Tx) eraseContacts(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, at time.Time, reason string) (app.ContactErasure, error) {
	var out app.ContactErasure
	if len(ids) == 0 {
		return out, nil
	}
	var err error
	// The quota a cancelled message held is given back by
	// herald_release_quota; its timeline goes with the rest below.
	out.Cancelled, err = t.prune(ctx, `
		UPDATE messages SET status = 'CANCELLED', updated_at = $3
		WHERE tenant_id = $1 AND contact_id = ANY($2::uuid[]) AND status = 'QUEUED' AND send_started_at IS NULL`,
		tenantID, uuidArray(ids), at)
	if err != nil {
		return out, err
	}
	counts := map[string]*int{"events": &out.Events, "files": &out.Files, "inbound": &out.Inbound,
		"conversations": &out.Conversations, "history": &out.History, "contacts": &out.Contacts}
	run := func(steps int, from int) error {
		for _, step := range eraseContactsSteps[from : from+steps] {
			n, err := t.prune(ctx, step.query, eraseStepArgs(step.name, tenantID, ids, at, reason)...)
			if err != nil {
				return err
			}
			*counts[step.name] = n
		}
		return nil
	}
	if err := run(2, 0); err != nil {
		return out, err
	}
	msgs := []uuid.UUID{}
	if err := t.tx.SelectContext(ctx, &msgs, `
		SELECT id FROM messages WHERE tenant_id = $1 AND contact_id = ANY($2::uuid[]) AND redacted_at IS NULL`,
		tenantID, uuidArray(ids)); err != nil {
		return out, mapErr(err)
	}
	mp, err := t.redactMessages(ctx, tenantID, msgs, at, reason)
	out.Messages = mp.Messages
	if err != nil {
		return out, err
	}
	return out, run(len(eraseContactsSteps)-2, 2)
}

// EraseContact serves app.ContactErasureTx: the contact is locked, erased
// (eraseContacts) and read back. Another tenant's contact is not found.
func (t *Tx) EraseContact(ctx context.Context, tenantID, id uuid.UUID, at time.Time, reason string) (app.ContactErasure, *app.Contact, error) {
	if _, err := t.LockContact(ctx, tenantID, id); err != nil {
		return app.ContactErasure{}, nil, err
	}
	out, err := t.eraseContacts(ctx, tenantID, []uuid.UUID{id}, at, reason)
	if err != nil {
		return out, nil, err
	}
	c, err := t.ContactByID(ctx, tenantID, id)
	return out, c, err
}

// PruneContacts serves app.MaintenanceTx: up to limit of the tenant's
// contacts not erased yet whose last activity is before the time: their
// last change (updated_at, which every change of details, opt-out and
// window sets), the newest message sent to them and the newest they sent.
// A contact with a message still in flight waits for it. They are picked
// through contacts_unerased_idx, locked with SKIP LOCKED, and erased as on
// request (eraseContacts).
func (t *Tx) PruneContacts(ctx context.Context, tenantID uuid.UUID, before, now time.Time, limit int) (app.ContactErasure, error) {
	ids := []uuid.UUID{}
	err := t.tx.SelectContext(ctx, &ids, `
		SELECT c.id FROM contacts c
		WHERE c.tenant_id = $1 AND c.erased_at IS NULL AND c.updated_at < $2
		  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.tenant_id = $1 AND m.contact_id = c.id
			AND (m.created_at >= $2 OR m.phase = 'QUEUED' OR (m.phase = 'SENT' AND m.stale_at IS NULL)))
		  AND NOT EXISTS (SELECT 1 FROM inbound_messages i WHERE i.tenant_id = $1 AND i.contact_id = c.id AND i.received_at >= $2)
		ORDER BY c.updated_at
		LIMIT $3
		FOR UPDATE OF c SKIP LOCKED`, tenantID, before, limit)
	if err != nil {
		return app.ContactErasure{}, mapErr(err)
	}
	return t.eraseContacts(ctx, tenantID, ids, now, app.RemovedByRetention)
}

// PruneInbound serves app.MaintenanceTx: the oldest messages passengers
// sent, received before the time, through inbound_messages_received_idx.
// Their message.inbound callback deliveries go with them (ON DELETE
// CASCADE, through callback_deliveries_inbound_idx).
func (t *Tx) PruneInbound(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		DELETE FROM inbound_messages WHERE tenant_id = $1 AND id IN (
			SELECT id FROM inbound_messages WHERE tenant_id = $1 AND received_at < $2
			ORDER BY received_at LIMIT $3 FOR UPDATE SKIP LOCKED)`, tenantID, before, limit)
}

// PruneConversations serves app.MaintenanceTx: conversations whose last
// message is older than the time (the newest of what the passenger wrote,
// staff's last answer, and any message Herald sent in it; updated_at
// follows the first two) lose what the passenger wrote in them, are
// resolved and marked erased. The messages Herald sent in them are
// redacted by PruneMessages with every other message. A conversation keeps
// its id, contact and booking so that the messages naming it still find it.
func (t *Tx) PruneConversations(ctx context.Context, tenantID uuid.UUID, before, now time.Time, limit int) (int, error) {
	ids := []uuid.UUID{}
	err := t.tx.SelectContext(ctx, &ids, `
		SELECT c.id FROM conversations c
		WHERE c.tenant_id = $1 AND c.erased_at IS NULL AND c.updated_at < $2
		  AND coalesce(c.last_inbound_at, '-infinity') < $2 AND coalesce(c.last_reply_at, '-infinity') < $2
		  AND NOT EXISTS (SELECT 1 FROM inbound_messages i WHERE i.tenant_id = $1 AND i.conversation_id = c.id AND i.received_at >= $2)
		  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.tenant_id = $1 AND m.contact_id = c.contact_id
			AND m.conversation_id = c.id AND m.created_at >= $2)
		ORDER BY c.updated_at
		LIMIT $3
		FOR UPDATE OF c SKIP LOCKED`, tenantID, before, limit)
	if err != nil || len(ids) == 0 {
		return 0, mapErr(err)
	}
	if _, err := t.prune(ctx, `DELETE FROM inbound_messages WHERE tenant_id = $1 AND conversation_id = ANY($2::uuid[])`,
		tenantID, uuidArray(ids)); err != nil {
		return 0, err
	}
	return t.prune(ctx, `
		UPDATE conversations SET erased_at = $3, updated_at = $3,
			status = 'RESOLVED', status_at = CASE WHEN status <> 'RESOLVED' THEN $3 ELSE status_at END
		WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, tenantID, uuidArray(ids), now)
}
