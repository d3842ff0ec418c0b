package app

import (
	"context"
	"fmt"
	"log/slog"
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
	InboundConversationTx
	InsertInbound(ctx context.Context, m *InboundMessage) (bool, error)
	OpenWhatsAppWindow(ctx context.Context, tenantID, contactID uuid.UUID, until time.Time) error
	AccountByPhoneNumberID(ctx context.Context, tenantID uuid.UUID, phoneNumberID string) (*ChannelAccount, error)
	// A keyword changes the contact's preferences and is answered.
	LockContact(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	SaveContact(ctx context.Context, c *Contact) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
	AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*ChannelAccount, error)
	InsertMessages(ctx context.Context, ms []*Message, firsts []*MessageEvent) ([]bool, error)
}

// Inbound records what people send back, and acts on their STOP and START
// keywords.
type Inbound struct {
	Store Store[InboundTx]
	// Queue sends the confirmation of a keyword; nil sends none.
	Queue Queue
	Now   Clock
	// Log, when set, notes keywords that changed nothing.
	Log *slog.Logger
	// Callbacks posts message.inbound to the tenant's endpoints; nil posts
	// none.
	Callbacks *Callbacks
}

// Record stores an inbound message once (a replay is a no-op) on the
// sender's contact, created when unknown, and on their conversation, opened
// when they have none and reopened when it asks for an answer (heard); a WhatsApp message opens the 24-hour window, recorded on
// the contact. A message that is a preference keyword (ParseKeyword),
// received on a number of the tenant's own channel accounts, opts the
// contact out of that channel or back in (see keyword). It reports whether
// the message was new.
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
			c, err = tx.CreateContact(ctx, &Contact{ID: NewID(), TenantID: tenantID, Phone: &phone, CreatedAt: now, UpdatedAt: now})
			if err == nil {
				err = tx.InsertContactChanges(ctx, []*ContactChange{{TenantID: tenantID, ContactID: c.ID, Field: ChangeCreated,
					NewValue: strPtr(contactSummary(c)), Source: ChangeSourceInbound, ActorType: ActorSystem, ActorLabel: "a reply", At: now}})
			}
		}
		if err != nil {
			return err
		}
		m.ID, m.TenantID, m.ContactID, m.From, m.CreatedAt = NewID(), tenantID, c.ID, phone, s.Now()
		if m.ChannelAccountID == nil && m.PhoneNumberID != "" {
			// A number Herald does not know leaves the message without an
			// account: it opens no window for any of the tenant's numbers.
			if a, err := tx.AccountByPhoneNumberID(ctx, tenantID, m.PhoneNumberID); err == nil {
				m.ChannelAccountID = &a.ID
			} else if ErrorCode(err) != ENOTFOUND {
				return err
			}
		}
		conv, err := s.conversationFor(ctx, tx, tenantID, c.ID)
		if err != nil {
			return err
		}
		m.ConversationID = &conv.ID
		if fresh, err = tx.InsertInbound(ctx, &m); err != nil || !fresh {
			return err
		}
		if err := s.heard(ctx, tx, conv, &m); err != nil {
			return err
		}
		if m.Channel == WhatsApp {
			if err := tx.OpenWhatsAppWindow(ctx, tenantID, c.ID, m.ReceivedAt.Add(WhatsAppWindow)); err != nil {
				return err
			}
		}
		if k, ok := ParseKeyword(m.Body); ok && m.ChannelAccountID != nil && (m.Channel == WhatsApp || m.Channel == SMS) {
			return s.keyword(ctx, tx, c.ID, &m, k)
		}
		return nil
	})
	return fresh, err
}

// keyword applies a passenger's STOP or START to the channel it came on,
// decided by the provider's timestamp of the message: a keyword older than
// the channel's latest decision (a START sent before a STOP but delivered
// after it, or before a console change) changes nothing and is not
// answered. A decided keyword is on the contact's history (when it changed
// the opt-outs) and answered on the same channel through the account that
// received it. On WhatsApp the answer is free-form text, which the
// passenger's message allows for 24 hours: a keyword processed after that
// window closed is not answered (WhatsApp would take only a template).
func (s *Inbound) keyword(ctx context.Context, tx InboundTx, contactID uuid.UUID, m *InboundMessage, k Keyword) error {
	c, err := tx.LockContact(ctx, m.TenantID, contactID)
	if err != nil {
		return err
	}
	source, via := ChangeSourceSMSKeyword, "SMS"
	if m.Channel == WhatsApp {
		source, via = ChangeSourceWhatsAppKeyword, "WhatsApp"
	}
	actor := Actor{Type: ActorSystem, Label: fmt.Sprintf("passenger: %s by %s", k.Word, via)}
	change, decided := ApplyPreference(c, PreferenceChange{Channels: []Channel{m.Channel}, OptOut: k.OptOut,
		At: m.ReceivedAt, Source: source, Actor: actor, IfNewer: true})
	if !decided {
		if s.Log != nil {
			s.Log.InfoContext(ctx, "keyword older than the channel's latest preference; ignored", "contact_id", c.ID,
				"keyword", k.Word, "channel", m.Channel, "sent_at", m.ReceivedAt)
		}
		return nil
	}
	c.UpdatedAt = s.Now()
	if err := tx.SaveContact(ctx, c); err != nil {
		return err
	}
	if change != nil {
		if err := tx.InsertContactChanges(ctx, []*ContactChange{change}); err != nil {
			return err
		}
		action := "contact.opt_in"
		if k.OptOut {
			action = "contact.opt_out"
		}
		if err := tx.InsertAudit(ctx, actor.Entry(&m.TenantID, action, "contact", c.ID.String(),
			map[string]any{"channels": []string{string(m.Channel)}, "keyword": k.Word, "inbound_message_id": m.ID.String()})); err != nil {
			return err
		}
	}
	return s.confirm(ctx, tx, c, m, k)
}

// confirm queues the answer to a decided keyword, once per inbound message.
func (s *Inbound) confirm(ctx context.Context, tx InboundTx, c *Contact, m *InboundMessage, k Keyword) error {
	now := s.Now()
	if s.Queue == nil || (m.Channel == WhatsApp && now.Sub(m.ReceivedAt) >= WhatsAppWindow) {
		return nil
	}
	acct, err := tx.AccountByID(ctx, m.TenantID, *m.ChannelAccountID)
	if err != nil {
		return err
	}
	if acct.Status != AccountActive || acct.Channel != m.Channel {
		return nil
	}
	reply := &Message{
		ID: NewID(), TenantID: m.TenantID, CorrelationID: "inbound:" + m.ExternalID,
		IdempotencyKey: "preference:" + string(m.Channel) + ":" + m.ExternalID, TriggerEvent: PreferenceTrigger,
		Channel: m.Channel, ChannelAccountID: &acct.ID, ContactID: &c.ID, ConversationID: m.ConversationID,
		ToAddress: m.From, Body: confirmationText(k, m.Channel, deref(c.Locale)), Status: MessageQueued,
		Provider: &acct.Provider, FallbackChain: StringList{}, QueuedAt: now, CreatedAt: now, UpdatedAt: now,
	}
	inserted, err := InsertMessage(ctx, tx, reply, &MessageEvent{TenantID: m.TenantID, MessageID: reply.ID, ToStatus: &reply.Status,
		Source: SourceSystem, At: now, Detail: map[string]any{"keyword": k.Word, "inbound_message_id": m.ID.String()}})
	if err != nil || !inserted {
		return err
	}
	return s.Queue.EnqueueDispatch(ctx, tx, reply.DispatchJob())
}
