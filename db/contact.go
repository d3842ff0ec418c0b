package db

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const contactColumns = `id, tenant_id, passenger_profile_id, name, phone, email, locale, email_complained_at, opted_out, opt_out_at, whatsapp_window_until, created_at, updated_at`

// contactReadColumns are contactColumns and whether and why the contact's
// personal data was erased, which only EraseContacts writes.
const contactReadColumns = contactColumns + `, erased_at, erasure`

// FindContact looks a sender up by profile id, else phone, else e-mail.
// It serves app.InboundTx (replies come from a phone number, and any
// contact with it can answer the conversation).
func (t *Tx) FindContact(ctx context.Context, tenantID uuid.UUID, profileID, phone, email string) (*app.Contact, error) {
	var c app.Contact
	var err error
	switch {
	case profileID != "":
		err = t.tx.GetContext(ctx, &c, `SELECT `+contactColumns+` FROM contacts WHERE tenant_id = $1 AND passenger_profile_id = $2`, tenantID, profileID)
		if err == nil || !errors.Is(err, sql.ErrNoRows) {
			break
		}
		// A profile id seen for the first time may belong to a contact known
		// by address, but only one without a profile id of its own.
		fallthrough
	default:
		err = t.tx.GetContext(ctx, &c, `
			SELECT `+contactColumns+` FROM contacts
			WHERE tenant_id = $1 AND (($2 <> '' AND phone = $2) OR ($3 <> '' AND email = $3))
			  AND ($4 = '' OR passenger_profile_id IS NULL)
			ORDER BY (phone = $2) DESC NULLS LAST, created_at LIMIT 1`, tenantID, phone, email, profileID)
	}
	if err != nil {
		return nil, notFound(err, "Contact not found.")
	}
	return &c, nil
}

// ContactByID serves app.FallbackTx, app.RouteTx and console.MessageTx.
func (t *Tx) ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*app.Contact, error) {
	var c app.Contact
	if err := t.tx.GetContext(ctx, &c, `SELECT `+contactReadColumns+` FROM contacts WHERE tenant_id = $1 AND id = $2`, tenantID, id); err != nil {
		return nil, notFound(err, "Contact %s not found.", id)
	}
	return &c, nil
}

// CreateContact stores c, or returns the contact that won a race for the
// same profile id. It serves app.InboundTx and app.RouteTx.
func (t *Tx) CreateContact(ctx context.Context, c *app.Contact) (*app.Contact, error) {
	if c.OptedOut == nil {
		c.OptedOut = app.StringList{}
	}
	res, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO contacts (`+contactColumns+`)
		VALUES (:id, :tenant_id, :passenger_profile_id, :name, :phone, :email, :locale, :email_complained_at, :opted_out, :opt_out_at, :whatsapp_window_until, :created_at, :updated_at)
		ON CONFLICT (tenant_id, passenger_profile_id) WHERE passenger_profile_id IS NOT NULL DO NOTHING`, c)
	if err != nil {
		return nil, mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return c, nil
	}
	return t.FindContact(ctx, c.TenantID, *c.PassengerProfileID, "", "")
}

// LockContactKeys takes a transaction-scoped advisory lock per key, in
// sorted order so that two transactions never wait on each other in a
// cycle. It serves app.ContactResolveTx.
func (t *Tx) LockContactKeys(ctx context.Context, tenantID uuid.UUID, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	// One statement for all the keys: unnest yields them in the array's
	// order, the sorted one, and the select list takes each row's lock as
	// the row comes.
	_, err := t.tx.ExecContext(ctx, `
		SELECT pg_advisory_xact_lock(hashtextextended($1 || ':contact:' || k, 0))
		FROM unnest($2::text[]) AS k`, tenantID.String(), app.StringList(sorted))
	return mapErr(err)
}

// InsertContact stores a new contact. It serves app.ContactResolveTx.
func (t *Tx) InsertContact(ctx context.Context, c *app.Contact) error {
	if c.OptedOut == nil {
		c.OptedOut = app.StringList{}
	}
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO contacts (`+contactColumns+`)
		VALUES (:id, :tenant_id, :passenger_profile_id, :name, :phone, :email, :locale, :email_complained_at, :opted_out, :opt_out_at, :whatsapp_window_until, :created_at, :updated_at)`, c)
	return mapErr(err)
}

// InsertContacts serves app.ContactResolveTx: the contacts and the changes
// travel as JSON rows, and the changes' rows are inserted by the statement
// that inserts the contacts they may refer to (foreign keys are checked at
// its end).
func (t *Tx) InsertContacts(ctx context.Context, cs []*app.Contact, changes []*app.ContactChange) error {
	for _, c := range cs {
		if c.OptedOut == nil {
			c.OptedOut = app.StringList{}
		}
	}
	contacts, err := jsonRows(cs, contactColumns)
	if err != nil {
		return err
	}
	history, err := jsonRows(changes, contactChangeColumns)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, `
		WITH contact AS (
			INSERT INTO contacts (`+contactColumns+`)
			SELECT `+contactColumns+` FROM jsonb_populate_recordset(NULL::contacts, $1::jsonb)
		)
		INSERT INTO contact_changes (`+contactChangeColumns+`)
		SELECT `+contactChangeColumns+` FROM jsonb_populate_recordset(NULL::contact_changes, $2::jsonb)`,
		contacts, history)
	return mapErr(err)
}

// contactChangeColumns are the columns a new contact change sets.
const contactChangeColumns = `tenant_id, contact_id, field, old_value, new_value, source, event_id, actor_type, actor_id, actor_label, at`

// SaveContact writes a contact's details and opt-outs. It serves
// app.ContactResolveTx and app.ContactsTx.
func (t *Tx) SaveContact(ctx context.Context, c *app.Contact) error {
	if c.OptedOut == nil {
		c.OptedOut = app.StringList{}
	}
	res, err := t.tx.NamedExecContext(ctx, `
		UPDATE contacts SET passenger_profile_id = :passenger_profile_id, name = :name, phone = :phone, email = :email,
			locale = :locale, opted_out = :opted_out, opt_out_at = :opt_out_at, updated_at = :updated_at
		WHERE tenant_id = :tenant_id AND id = :id`, c)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return app.Errorf(app.ENOTFOUND, "Contact %s not found.", c.ID)
	}
	return nil
}

// InsertContactChanges appends to contacts' histories. It serves
// app.ContactResolveTx and app.ContactsTx.
func (t *Tx) InsertContactChanges(ctx context.Context, changes []*app.ContactChange) error {
	if len(changes) == 0 {
		return nil
	}
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO contact_changes (tenant_id, contact_id, field, old_value, new_value, source, event_id, actor_type, actor_id, actor_label, at)
		VALUES (:tenant_id, :contact_id, :field, :old_value, :new_value, :source, :event_id, :actor_type, :actor_id, :actor_label, :at)`, changes)
	return mapErr(err)
}

// ContactChanges returns a contact's history, newest first. It serves
// app.ContactsTx.
func (t *Tx) ContactChanges(ctx context.Context, tenantID, contactID uuid.UUID, limit int) ([]*app.ContactChange, error) {
	out := []*app.ContactChange{}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT id, tenant_id, contact_id, field, old_value, new_value, source, event_id, actor_type, actor_id, actor_label, at
		FROM contact_changes WHERE tenant_id = $1 AND contact_id = $2 ORDER BY id DESC LIMIT $3`, tenantID, contactID, limit)
	return out, mapErr(err)
}

// LockContact reads a contact for a change. It serves app.ContactsTx.
func (t *Tx) LockContact(ctx context.Context, tenantID, id uuid.UUID) (*app.Contact, error) {
	var c app.Contact
	if err := t.tx.GetContext(ctx, &c, `SELECT `+contactReadColumns+` FROM contacts WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id); err != nil {
		return nil, notFound(err, "Contact %s not found.", id)
	}
	return &c, nil
}

// ListContacts returns a page of the tenant's contacts matching f, newest
// first (one more than the limit, so the caller knows whether more follow).
// It serves app.ContactsTx.
func (t *Tx) ListContacts(ctx context.Context, tenantID uuid.UUID, f app.ContactFilter, limit, offset int) ([]*app.Contact, error) {
	where := []string{"tenant_id = ?"}
	args := []any{tenantID}
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Phone != "" {
		add("phone = ?", f.Phone)
	}
	if f.Email != "" {
		add("email = ?", f.Email)
	}
	if f.PassengerProfileID != "" {
		add("passenger_profile_id = ?", f.PassengerProfileID)
	}
	args = append(args, limit+1, offset)
	out := []*app.Contact{}
	err := t.tx.SelectContext(ctx, &out, t.tx.Rebind(`
		SELECT `+contactReadColumns+` FROM contacts WHERE `+strings.Join(where, " AND ")+`
		ORDER BY created_at DESC, id LIMIT ? OFFSET ?`), args...)
	return out, mapErr(err)
}

// ContactOtherWith returns another of the tenant's contacts holding the
// phone number, if any. It serves app.ContactsTx.
func (t *Tx) ContactOtherWith(ctx context.Context, tenantID, id uuid.UUID, phone string) (*app.Contact, error) {
	var c app.Contact
	err := t.tx.GetContext(ctx, &c, `
		SELECT `+contactColumns+` FROM contacts WHERE tenant_id = $1 AND id <> $2 AND phone = $3
		ORDER BY created_at LIMIT 1`, tenantID, id, phone)
	if err != nil {
		return nil, notFound(err, "No other contact has %s.", phone)
	}
	return &c, nil
}

// ContactMessages returns a page of a contact's messages, newest first (one
// more than the limit). It serves app.ContactsTx.
func (t *Tx) ContactMessages(ctx context.Context, tenantID, contactID uuid.UUID, limit, offset int) ([]*app.Message, error) {
	out := []*app.Message{}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT `+messageColumns+` FROM messages WHERE tenant_id = $1 AND contact_id = $2
		ORDER BY created_at DESC, id LIMIT $3 OFFSET $4`, tenantID, contactID, limit+1, offset)
	return out, mapErr(err)
}

// ContactEntities returns the bookings, trips and invoices a contact's
// conversations and messages are about, most recent first. It serves
// app.ContactsTx.
func (t *Tx) ContactEntities(ctx context.Context, tenantID, contactID uuid.UUID, limit int) ([]app.EntityRef, error) {
	out := []app.EntityRef{}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT entity_type, entity_id, max(at) AS last_at FROM (
			SELECT CASE WHEN booking_id IS NOT NULL THEN 'booking' WHEN trip_id IS NOT NULL THEN 'trip' ELSE 'invoice' END AS entity_type,
				coalesce(booking_id, trip_id, invoice_id) AS entity_id, updated_at AS at
			FROM conversations WHERE tenant_id = $1 AND contact_id = $2 AND num_nonnulls(booking_id, trip_id, invoice_id) = 1
			UNION ALL
			SELECT entity_type, entity_id, created_at FROM messages
			WHERE tenant_id = $1 AND contact_id = $2 AND entity_id IS NOT NULL
		) e GROUP BY entity_type, entity_id ORDER BY max(at) DESC, entity_id LIMIT $3`, tenantID, contactID, limit)
	return out, mapErr(err)
}

// EventRecipientContacts serves app.MessagesTx: the contact of each
// recipient index among the event's messages (the first message's, should
// they ever differ).
func (t *Tx) EventRecipientContacts(ctx context.Context, tenantID, eventID uuid.UUID) (map[int]uuid.UUID, error) {
	rows, err := t.tx.QueryContext(ctx, `
		SELECT DISTINCT ON (recipient_index) recipient_index, contact_id FROM messages
		WHERE tenant_id = $1 AND event_id = $2 AND recipient_index IS NOT NULL AND contact_id IS NOT NULL
		ORDER BY recipient_index, created_at, id`, tenantID, eventID)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := map[int]uuid.UUID{}
	for rows.Next() {
		var i int
		var id uuid.UUID
		if err := rows.Scan(&i, &id); err != nil {
			return nil, mapErr(err)
		}
		out[i] = id
	}
	return out, mapErr(rows.Err())
}

// conversationColumn is the conversations column of an entity type.
var conversationColumn = map[string]string{app.EntityBooking: "booking_id", app.EntityTrip: "trip_id", app.EntityInvoice: "invoice_id"}

// MarkEmailComplained records a spam complaint: the address is not used for
// e-mail again. It serves app.ReceiptTx.
func (t *Tx) MarkEmailComplained(ctx context.Context, tenantID, contactID uuid.UUID, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE contacts SET email_complained_at = coalesce(email_complained_at, $3), updated_at = now()
		WHERE tenant_id = $1 AND id = $2`, tenantID, contactID, at)
	return mapErr(err)
}

// InsertInbound stores an inbound message unless its provider id is known;
// it reports whether it stored it. It serves app.InboundTx.
func (t *Tx) InsertInbound(ctx context.Context, m *app.InboundMessage) (bool, error) {
	res, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO inbound_messages (id, tenant_id, contact_id, conversation_id, channel_account_id, channel, provider, external_id, from_address, kind, body, received_at, created_at)
		VALUES (:id, :tenant_id, :contact_id, :conversation_id, :channel_account_id, :channel, :provider, :external_id, :from_address, :kind, :body, :received_at, :created_at)
		ON CONFLICT (provider, external_id) DO NOTHING`, m)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// OpenWhatsAppWindow records until when the contact's WhatsApp window is
// open (it only ever moves later). It serves app.InboundTx.
func (t *Tx) OpenWhatsAppWindow(ctx context.Context, tenantID, contactID uuid.UUID, until time.Time) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE contacts SET whatsapp_window_until = greatest(coalesce(whatsapp_window_until, $3), $3), updated_at = now()
		WHERE tenant_id = $1 AND id = $2`, tenantID, contactID, until)
	return mapErr(err)
}
