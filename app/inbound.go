package app

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// WhatsAppWindow is how long after a person's last message a business may
// write to them freely on WhatsApp (outside it, only approved templates).
const WhatsAppWindow = 24 * time.Hour

// InboundMessage is a message a person sent to a tenant.
type InboundMessage struct {
	ID             uuid.UUID  `db:"id" json:"id"`
	TenantID       uuid.UUID  `db:"tenant_id" json:"-"`
	ContactID      uuid.UUID  `db:"contact_id" json:"contact_id"`
	ConversationID *uuid.UUID `db:"conversation_id" json:"conversation_id,omitempty"`
	// ChannelAccountID is the account whose number received the message:
	// the customer-service window it opens is that number's only.
	ChannelAccountID *uuid.UUID `db:"channel_account_id" json:"channel_account_id,omitempty"`
	// PhoneNumberID is, for Meta, the receiving number's Graph id, from
	// which Record finds ChannelAccountID when it is not given.
	PhoneNumberID string    `db:"-" json:"-"`
	Channel       Channel   `db:"channel" json:"channel"`
	Provider      string    `db:"provider" json:"provider"`
	ExternalID    string    `db:"external_id" json:"external_id"`
	From          string    `db:"from_address" json:"from"`
	Kind          string    `db:"kind" json:"kind"`
	Body          string    `db:"body" json:"body"`
	ReceivedAt    time.Time `db:"received_at" json:"received_at"`
	CreatedAt     time.Time `db:"created_at" json:"created_at"`
}

// InboundTx lists the statements Inbound runs.
type InboundTx interface {
	Tx
	FindContact(ctx context.Context, tenantID uuid.UUID, profileID, phone, email string) (*Contact, error)
	CreateContact(ctx context.Context, c *Contact) (*Contact, error)
	LockContactKeys(ctx context.Context, tenantID uuid.UUID, keys []string) error
	InsertContactChanges(ctx context.Context, changes []*ContactChange) error
	LatestOpenConversation(ctx context.Context, tenantID, contactID uuid.UUID) (*Conversation, error)
	InsertInbound(ctx context.Context, m *InboundMessage) (bool, error)
	OpenWhatsAppWindow(ctx context.Context, tenantID, contactID uuid.UUID, until time.Time) error
	AccountByPhoneNumberID(ctx context.Context, tenantID uuid.UUID, phoneNumberID string) (*ChannelAccount, error)
}

// Inbound records what people send back.
type Inbound struct {
	Store Store[InboundTx]
	Now   Clock
}

// Record stores an inbound message once (a replay is a no-op) on the
// sender's contact, created when unknown, and on their open conversation if
// they have one; a WhatsApp message opens the 24-hour window, recorded on
// the contact. It reports whether the message was new.
func (s *Inbound) Record(ctx context.Context, tenantID uuid.UUID, m InboundMessage) (bool, error) {
	if m.ReceivedAt.IsZero() {
		m.ReceivedAt = s.Now()
	}
	phone, err := NormalizePhone(m.From)
	if err != nil {
		phone = m.From
	}
	var fresh bool
	err = s.Store.InTenant(ctx, tenantID, func(tx InboundTx) error {
		// Locked as routing locks it, so that a reply and an event about
		// the same new number make one contact.
		if err := tx.LockContactKeys(ctx, tenantID, ContactKeys(Recipient{Phone: phone})); err != nil {
			return err
		}
		c, err := tx.FindContact(ctx, tenantID, "", phone, "")
		if ErrorCode(err) == ENOTFOUND {
			now := s.Now()
			c, err = tx.CreateContact(ctx, &Contact{ID: uuid.New(), TenantID: tenantID, Phone: &phone, CreatedAt: now, UpdatedAt: now})
			if err == nil {
				err = tx.InsertContactChanges(ctx, []*ContactChange{{TenantID: tenantID, ContactID: c.ID, Field: ChangeCreated,
					NewValue: strPtr(contactSummary(c)), Source: ChangeSourceInbound, ActorType: ActorSystem, ActorLabel: "a reply", At: now}})
			}
		}
		if err != nil {
			return err
		}
		m.ID, m.TenantID, m.ContactID, m.From, m.CreatedAt = uuid.New(), tenantID, c.ID, phone, s.Now()
		if m.ChannelAccountID == nil && m.PhoneNumberID != "" {
			// A number Herald does not know leaves the message without an
			// account: it opens no window for any of the tenant's numbers.
			if a, err := tx.AccountByPhoneNumberID(ctx, tenantID, m.PhoneNumberID); err == nil {
				m.ChannelAccountID = &a.ID
			} else if ErrorCode(err) != ENOTFOUND {
				return err
			}
		}
		if conv, err := tx.LatestOpenConversation(ctx, tenantID, c.ID); err == nil {
			m.ConversationID = &conv.ID
		} else if ErrorCode(err) != ENOTFOUND {
			return err
		}
		if fresh, err = tx.InsertInbound(ctx, &m); err != nil || !fresh {
			return err
		}
		if m.Channel == WhatsApp {
			return tx.OpenWhatsAppWindow(ctx, tenantID, c.ID, m.ReceivedAt.Add(WhatsAppWindow))
		}
		return nil
	})
	return fresh, err
}
