package db

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const contactColumns = `id, tenant_id, passenger_profile_id, name, phone, email, locale, email_complained_at, whatsapp_window_until, created_at, updated_at`

// FindContact looks a recipient up by profile id, else phone, else e-mail.
// It serves app.InboundTx, app.MessagesTx, app.RouteTx and
// console.ScheduleTx.
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
	if err := t.tx.GetContext(ctx, &c, `SELECT `+contactColumns+` FROM contacts WHERE tenant_id = $1 AND id = $2`, tenantID, id); err != nil {
		return nil, notFound(err, "Contact %s not found.", id)
	}
	return &c, nil
}

// CreateContact stores c, or returns the contact that won a race for the
// same profile id. It serves app.InboundTx and app.RouteTx.
func (t *Tx) CreateContact(ctx context.Context, c *app.Contact) (*app.Contact, error) {
	res, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO contacts (`+contactColumns+`)
		VALUES (:id, :tenant_id, :passenger_profile_id, :name, :phone, :email, :locale, :email_complained_at, :whatsapp_window_until, :created_at, :updated_at)
		ON CONFLICT (tenant_id, passenger_profile_id) WHERE passenger_profile_id IS NOT NULL DO NOTHING`, c)
	if err != nil {
		return nil, mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return c, nil
	}
	return t.FindContact(ctx, c.TenantID, *c.PassengerProfileID, "", "")
}

// UpdateContact serves app.RouteTx: the recipient's details fill in or
// replace the stored ones; empty fields keep what is stored.
func (t *Tx) UpdateContact(ctx context.Context, c *app.Contact, r app.Recipient, at time.Time) error {
	err := t.tx.GetContext(ctx, c, `
		UPDATE contacts SET
			name = coalesce(nullif($3, ''), name),
			phone = coalesce(nullif($4, ''), phone),
			email = coalesce(nullif($5, ''), email),
			locale = coalesce(nullif($6, ''), locale),
			passenger_profile_id = coalesce(passenger_profile_id, nullif($7, '')),
			updated_at = $8
		WHERE tenant_id = $1 AND id = $2
		RETURNING `+contactColumns, c.TenantID, c.ID, r.Name, r.Phone, r.Email, r.Locale, r.PassengerProfileID, at)
	return mapErr(err)
}

// OpenConversation returns the contact's open conversation about the entity,
// opening one when there is none. It serves app.RouteTx.
func (t *Tx) OpenConversation(ctx context.Context, tenantID, contactID uuid.UUID, entityType, entityID string, at time.Time) (*app.Conversation, error) {
	col := map[string]string{app.EntityBooking: "booking_id", app.EntityTrip: "trip_id", app.EntityInvoice: "invoice_id"}[entityType]
	if col == "" {
		return nil, app.Errorf(app.EINVALID, "Unknown conversation type %q.", entityType)
	}
	const cols = `id, tenant_id, contact_id, booking_id, trip_id, invoice_id, status, created_at, updated_at`
	// Found or opened in one statement: the insert runs only when the
	// lookup found nothing.
	var c app.Conversation
	err := t.tx.GetContext(ctx, &c, `
		WITH found AS (
			SELECT `+cols+` FROM conversations
			WHERE tenant_id = $1 AND contact_id = $2 AND `+col+` = $3 AND status <> 'RESOLVED'
			ORDER BY created_at DESC LIMIT 1
		), opened AS (
			INSERT INTO conversations (id, tenant_id, contact_id, `+col+`, status, created_at, updated_at)
			SELECT $4, $1, $2, $3, 'OPEN', $5, $5 WHERE NOT EXISTS (SELECT FROM found)
			RETURNING `+cols+`
		)
		SELECT `+cols+` FROM found UNION ALL SELECT `+cols+` FROM opened`, tenantID, contactID, entityID, uuid.New(), at)
	return &c, mapErr(err)
}

// MarkEmailComplained records a spam complaint: the address is not used for
// e-mail again. It serves app.ReceiptTx.
func (t *Tx) MarkEmailComplained(ctx context.Context, tenantID, contactID uuid.UUID, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE contacts SET email_complained_at = coalesce(email_complained_at, $3), updated_at = now()
		WHERE tenant_id = $1 AND id = $2`, tenantID, contactID, at)
	return mapErr(err)
}

// LatestOpenConversation returns the contact's newest conversation that is
// not resolved. It serves app.InboundTx.
func (t *Tx) LatestOpenConversation(ctx context.Context, tenantID, contactID uuid.UUID) (*app.Conversation, error) {
	var c app.Conversation
	err := t.tx.GetContext(ctx, &c, `
		SELECT id, tenant_id, contact_id, booking_id, trip_id, invoice_id, status, created_at, updated_at
		FROM conversations WHERE tenant_id = $1 AND contact_id = $2 AND status <> 'RESOLVED'
		ORDER BY updated_at DESC LIMIT 1`, tenantID, contactID)
	if err != nil {
		return nil, notFound(err, "No open conversation.")
	}
	return &c, nil
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
