package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// UpcomingEvents serves console.ScheduleTx. Every event that can still be
// rescheduled or cancelled is listed, whether its send_at has passed (due:
// the scheduler has not routed it yet) or it has none (awaiting approval
// without a time). The status list matches the partial index
// events_pending_idx (tenant_id, send_at), which serves both the filter and
// the order; events without a send_at come last (NULLS LAST is the index's
// own order).
func (t *Tx) UpcomingEvents(ctx context.Context, tenantID uuid.UUID, f console.ScheduleFilter, now time.Time, page console.PageRequest) ([]*console.ScheduledEvent, error) {
	where := []string{"tenant_id = $1", "status IN ('SCHEDULED', 'AWAITING_APPROVAL')"}
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
	q := `SELECT ` + eventColumns + `, jsonb_array_length(recipients) AS recipient_count,
		COALESCE(send_at <= $2, false) AS due FROM events
		WHERE ` + strings.Join(where, " AND ") + fmt.Sprintf(`
		ORDER BY send_at, created_at, id LIMIT $%d OFFSET $%d`, len(args)-1, len(args))
	rows := []*console.ScheduledEvent{}
	err := t.tx.SelectContext(ctx, &rows, q, args...)
	return rows, mapErr(err)
}

// EventsAwaitingApproval serves console.ScheduleTx.
func (t *Tx) EventsAwaitingApproval(ctx context.Context, tenantID uuid.UUID, page console.PageRequest) ([]*console.ScheduledEvent, error) {
	rows := []*console.ScheduledEvent{}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT `+eventColumns+`, jsonb_array_length(recipients) AS recipient_count FROM events
		WHERE tenant_id = $1 AND status = 'AWAITING_APPROVAL'
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, tenantID, page.Limit, page.Offset)
	return rows, mapErr(err)
}

// ExistingMessageKeys serves console.ScheduleTx.
func (t *Tx) ExistingMessageKeys(ctx context.Context, tenantID uuid.UUID, keys []string) ([]string, error) {
	out := []string{}
	if len(keys) == 0 {
		return out, nil
	}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT idempotency_key FROM messages WHERE tenant_id = $1 AND idempotency_key = ANY($2)`, tenantID, app.StringList(keys))
	return out, mapErr(err)
}

// contactCandidatesQuery finds a tenant's contacts by any of their
// identifiers: passenger profile ids ($2), phones ($3) and e-mail
// addresses ($4).
//
// Each identifier is looked up on its own index, one value at a time
// (LATERAL, kept from being flattened into a join by OFFSET 0). Written as
// one condition with ORs and arrays, the statement's generic plan, made once
// per connection and kept until the table is analyzed again, was chosen
// while the table was small: it walked the tenant's whole updated_at index
// and filtered every contact, which cost more than the rest of routing once
// the table grew. This form has no such plan: every branch is an equality
// on both columns of its index.
const contactCandidatesQuery = `
	SELECT * FROM (
		SELECT c.* FROM unnest($2::text[]) k (v) CROSS JOIN LATERAL (
			SELECT ` + contactColumns + ` FROM contacts WHERE tenant_id = $1 AND passenger_profile_id = k.v OFFSET 0) c
		UNION ALL
		SELECT c.* FROM unnest($3::text[]) k (v) CROSS JOIN LATERAL (
			SELECT ` + contactColumns + ` FROM contacts WHERE tenant_id = $1 AND phone = k.v OFFSET 0) c
		UNION ALL
		SELECT c.* FROM unnest($4::text[]) k (v) CROSS JOIN LATERAL (
			SELECT ` + contactColumns + ` FROM contacts WHERE tenant_id = $1 AND email = k.v OFFSET 0) c
	) found
	ORDER BY created_at, id`

// ContactCandidates serves console.ScheduleTx.
func (t *Tx) ContactCandidates(ctx context.Context, tenantID uuid.UUID, profileIDs, phones, emails []string) ([]*app.Contact, error) {
	out := []*app.Contact{}
	if len(profileIDs)+len(phones)+len(emails) == 0 {
		return out, nil
	}
	var rows []*app.Contact
	err := t.tx.SelectContext(ctx, &rows, contactCandidatesQuery, tenantID, app.StringList(profileIDs), app.StringList(phones), app.StringList(emails))
	if err != nil {
		return nil, mapErr(err)
	}
	// A contact found by several of its identifiers comes once.
	seen := make(map[uuid.UUID]bool, len(rows))
	for _, c := range rows {
		if !seen[c.ID] {
			seen[c.ID] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// ContactsByIDs serves console.ScheduleTx.
func (t *Tx) ContactsByIDs(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) ([]*app.Contact, error) {
	out := []*app.Contact{}
	if len(ids) == 0 {
		return out, nil
	}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT `+contactColumns+` FROM contacts WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, tenantID, uuidArray(ids))
	return out, mapErr(err)
}

// EventMessagesByContact serves console.ScheduleTx. The recipients are
// ordered by their first message; messages without a contact count as one
// recipient, as DISTINCT counts NULLs.
func (t *Tx) EventMessagesByContact(ctx context.Context, tenantID, eventID uuid.UUID, maxContacts, maxMessages int) ([]*app.Message, int, error) {
	var total int
	if err := t.tx.GetContext(ctx, &total, `
		SELECT count(*) FROM (SELECT DISTINCT contact_id FROM messages WHERE tenant_id = $1 AND event_id = $2) c`, tenantID, eventID); err != nil {
		return nil, 0, mapErr(err)
	}
	ms := []*app.Message{}
	err := t.tx.SelectContext(ctx, &ms, `
		WITH shown AS (
			SELECT contact_id FROM messages WHERE tenant_id = $1 AND event_id = $2
			GROUP BY contact_id ORDER BY min(created_at), min(id::text) LIMIT $3)
		SELECT `+messageColumns+` FROM messages
		WHERE tenant_id = $1 AND event_id = $2
		  AND (contact_id IN (SELECT contact_id FROM shown WHERE contact_id IS NOT NULL)
		    OR (contact_id IS NULL AND EXISTS (SELECT 1 FROM shown WHERE contact_id IS NULL)))
		ORDER BY created_at, id LIMIT $4`, tenantID, eventID, maxContacts, maxMessages)
	return ms, total, mapErr(err)
}
