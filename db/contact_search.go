package db

import (
	"context"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// entityTypes spells out the three entity types, so that a lookup by id
// alone is three ranges of the (tenant_id, entity_type, entity_id) indexes.
var entityTypes = app.StringList{app.EntityBooking, app.EntityTrip, app.EntityInvoice}

// SearchEntities serves app.ContactSearchTx: the bookings, trips and
// invoices whose id is one of ids, from their events and messages.
func (t *Tx) SearchEntities(ctx context.Context, tenantID uuid.UUID, ids []string, limit int) ([]app.EntityRef, error) {
	out := []app.EntityRef{}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT entity_type, entity_id, max(at) AS last_at FROM (
			SELECT entity_type, entity_id, created_at AS at FROM events
			WHERE tenant_id = $1 AND entity_type = ANY($2) AND entity_id = ANY($3)
			UNION ALL
			SELECT entity_type, entity_id, created_at FROM messages
			WHERE tenant_id = $1 AND entity_type = ANY($2) AND entity_id = ANY($3)
		) e GROUP BY entity_type, entity_id ORDER BY max(at) DESC, entity_id LIMIT $4`,
		tenantID, entityTypes, app.StringList(ids), limit)
	return out, mapErr(err)
}

// contactHit is a row of SearchContacts: a contact and how it matched.
type contactHit struct {
	app.Contact
	MatchedBy string `db:"matched_by"`
}

// SearchContacts serves app.ContactSearchTx. Each part of the query is a
// branch of its own (an exact phone or e-mail, the people on a booking,
// a part of a name or address), each served by its index; a contact found
// by several keeps its strongest match.
func (t *Tx) SearchContacts(ctx context.Context, tenantID uuid.UUID, q app.ContactQuery, limit int) ([]*app.ContactMatch, error) {
	var branches []string
	args := []any{tenantID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Phone != "" {
		branches = append(branches, `SELECT id, 1 AS rank, '`+app.MatchPhone+`' AS matched_by FROM contacts WHERE tenant_id = $1 AND phone = `+arg(q.Phone))
	}
	if q.Email != "" {
		branches = append(branches, `SELECT id, 2, '`+app.MatchEmail+`' FROM contacts WHERE tenant_id = $1 AND email = `+arg(q.Email))
	}
	if len(q.References) > 0 {
		branches = append(branches, `SELECT DISTINCT contact_id, 3, '`+app.MatchBooking+`' FROM messages
			WHERE tenant_id = $1 AND entity_type = ANY(`+arg(entityTypes)+`) AND entity_id = ANY(`+arg(app.StringList(q.References))+`) AND contact_id IS NOT NULL`)
	}
	if q.Pattern != "" {
		// Row-level security keeps ILIKE from any index; the tenant's own
		// (contacts_tenant_updated_idx) keeps the scan to its contacts.
		branches = append(branches, `SELECT id, 4, '`+app.MatchName+`' FROM contacts
			WHERE tenant_id = $1 AND (name || ' ' || coalesce(email, '')) ILIKE `+arg(q.Pattern))
	}
	out := []*app.ContactMatch{}
	if len(branches) == 0 {
		return out, nil
	}
	var hits []contactHit
	err := t.tx.SelectContext(ctx, &hits, `
		WITH hits (id, rank, matched_by) AS (`+strings.Join(branches, "\nUNION ALL\n")+`),
		best AS (SELECT DISTINCT ON (id) id, rank, matched_by FROM hits ORDER BY id, rank)
		SELECT `+qualified("c", contactColumns)+`, best.matched_by FROM best
		JOIN contacts c ON c.tenant_id = $1 AND c.id = best.id
		ORDER BY best.rank, c.updated_at DESC, c.id LIMIT `+arg(limit), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	for i := range hits {
		out = append(out, &app.ContactMatch{Contact: &hits[i].Contact, MatchedBy: hits[i].MatchedBy})
	}
	return out, nil
}

// ContactsEntities serves app.ContactSearchTx: the most recent bookings,
// trips and invoices of each contact, from its conversations and messages.
func (t *Tx) ContactsEntities(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, perContact int) (map[uuid.UUID][]app.EntityRef, error) {
	var rows []struct {
		ContactID uuid.UUID `db:"contact_id"`
		app.EntityRef
	}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT c.id AS contact_id, e.entity_type, e.entity_id, e.last_at
		FROM unnest($2::uuid[]) AS c(id)
		CROSS JOIN LATERAL (
			SELECT entity_type, entity_id, max(at) AS last_at FROM (
				SELECT CASE WHEN booking_id IS NOT NULL THEN 'booking' WHEN trip_id IS NOT NULL THEN 'trip' ELSE 'invoice' END AS entity_type,
					coalesce(booking_id, trip_id, invoice_id) AS entity_id, updated_at AS at
				FROM conversations WHERE tenant_id = $1 AND contact_id = c.id AND num_nonnulls(booking_id, trip_id, invoice_id) = 1
				UNION ALL
				SELECT entity_type, entity_id, created_at FROM messages
				WHERE tenant_id = $1 AND contact_id = c.id AND entity_id IS NOT NULL
			) x GROUP BY entity_type, entity_id ORDER BY max(at) DESC, entity_id LIMIT $3
		) e ORDER BY c.id, e.last_at DESC, e.entity_id`, tenantID, uuidArray(ids), perContact)
	if err != nil {
		return nil, mapErr(err)
	}
	out := map[uuid.UUID][]app.EntityRef{}
	for _, r := range rows {
		out[r.ContactID] = append(out[r.ContactID], r.EntityRef)
	}
	return out, nil
}

// ContactsRecentMessages serves app.ContactSearchTx: each contact's newest
// messages, through messages_contact_idx.
func (t *Tx) ContactsRecentMessages(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, perContact int) (map[uuid.UUID][]*app.Message, error) {
	var ms []*app.Message
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+qualified("m", messageColumns)+` FROM unnest($2::uuid[]) AS c(id)
		CROSS JOIN LATERAL (
			SELECT * FROM messages WHERE tenant_id = $1 AND contact_id = c.id
			ORDER BY created_at DESC, id LIMIT $3
		) m ORDER BY m.contact_id, m.created_at DESC, m.id`, tenantID, uuidArray(ids), perContact)
	if err != nil {
		return nil, mapErr(err)
	}
	out := map[uuid.UUID][]*app.Message{}
	for _, m := range ms {
		out[*m.ContactID] = append(out[*m.ContactID], m)
	}
	return out, nil
}

// qualified prefixes each column of a list with a table alias: "c.id, c.name".
func qualified(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}
