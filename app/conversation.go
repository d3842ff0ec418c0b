package app

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Conversation statuses (seed 000 §10): OPEN until staff snooze or resolve
// it; a passenger writing again makes it OPEN once more.
const (
	ConversationOpen     = "OPEN"
	ConversationSnoozed  = "SNOOZED"
	ConversationResolved = "RESOLVED"
)

// ConversationStatuses lists the statuses in the order pages show them.
var ConversationStatuses = []string{ConversationOpen, ConversationSnoozed, ConversationResolved}

// conversationMoves is every status change a conversation may make.
var conversationMoves = map[string][]string{
	ConversationOpen:     {ConversationSnoozed, ConversationResolved},
	ConversationSnoozed:  {ConversationOpen, ConversationResolved},
	ConversationResolved: {ConversationOpen},
}

// CanMoveConversation reports whether a conversation may go from one
// status to another.
func CanMoveConversation(from, to string) bool { return slices.Contains(conversationMoves[from], to) }

// Conversation links a contact's messages to a booking, trip or invoice,
// and holds what the inbox knows of it: who works on it, when the
// passenger last wrote and when staff last answered.
type Conversation struct {
	ID        uuid.UUID `db:"id" json:"id"`
	TenantID  uuid.UUID `db:"tenant_id" json:"-"`
	ContactID uuid.UUID `db:"contact_id" json:"contact_id"`
	BookingID *string   `db:"booking_id" json:"booking_id"`
	TripID    *string   `db:"trip_id" json:"trip_id"`
	InvoiceID *string   `db:"invoice_id" json:"invoice_id"`
	Status    string    `db:"status" json:"status"`
	// AssignedTo is the tenant's user who answers it, if anyone.
	AssignedTo *uuid.UUID `db:"assigned_to" json:"assigned_to"`
	// LastInboundAt is when Herald received the passenger's last message
	// that asks for an answer (not a STOP or START, not a quick-reply button).
	LastInboundAt *time.Time `db:"last_inbound_at" json:"last_inbound_at"`
	// LastReplyAt is when staff last answered.
	LastReplyAt *time.Time `db:"last_reply_at" json:"last_reply_at"`
	// StatusAt is when the status last changed.
	StatusAt  *time.Time `db:"status_at" json:"status_at"`
	CreatedAt time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt time.Time  `db:"updated_at" json:"updated_at"`
	// ErasedAt is when retention or an erasure of the contact removed the
	// conversation's personal content (what the passenger wrote).
	ErasedAt *time.Time `db:"erased_at" json:"erased_at,omitempty"`
}

// Unanswered reports whether the passenger wrote last in an open
// conversation: someone owes them an answer.
func (c *Conversation) Unanswered() bool {
	return c.Status == ConversationOpen && c.LastInboundAt != nil && (c.LastReplyAt == nil || c.LastReplyAt.Before(*c.LastInboundAt))
}

// Entity is what the conversation is about, or nil.
func (c *Conversation) Entity() *Entity {
	switch {
	case c.BookingID != nil:
		return &Entity{Type: EntityBooking, ID: *c.BookingID}
	case c.TripID != nil:
		return &Entity{Type: EntityTrip, ID: *c.TripID}
	case c.InvoiceID != nil:
		return &Entity{Type: EntityInvoice, ID: *c.InvoiceID}
	}
	return nil
}

// InboxItem is one conversation in an inbox list: the conversation, its
// passenger, who it is assigned to and the passenger's last message.
type InboxItem struct {
	Conversation
	ContactName   *string    `db:"contact_name" json:"contact_name"`
	ContactPhone  *string    `db:"contact_phone" json:"contact_phone"`
	AssignedEmail *string    `db:"assigned_email" json:"assigned_to_email"`
	LastBody      *string    `db:"last_body" json:"last_body"`
	LastChannel   *string    `db:"last_channel" json:"last_channel"`
	LastAt        *time.Time `db:"last_at" json:"last_at"`
	// Waiting is how many of the passenger's messages came after the last
	// answer.
	Waiting int `db:"waiting" json:"waiting"`
}

// InboxFilter narrows an inbox: by status ("" is every conversation not
// resolved, "all" every one), by trip (the trip's own conversations and
// those about its bookings), by booking, by assignee, or to unanswered
// ones.
type InboxFilter struct {
	Status     string
	TripID     string
	BookingID  string
	AssignedTo *uuid.UUID
	Unanswered bool
	Limit      int
}

// InboxLimit is how many conversations one inbox page lists.
const InboxLimit = 100

// Validate checks the filter's status.
func (f *InboxFilter) Validate() error {
	f.Status = strings.ToUpper(strings.TrimSpace(f.Status))
	if f.Status != "" && f.Status != "ALL" && !slices.Contains(ConversationStatuses, f.Status) {
		return Invalid("unknown_status", "status", "%q is not a conversation status (OPEN, SNOOZED, RESOLVED, ALL).", f.Status)
	}
	if f.Limit <= 0 || f.Limit > InboxLimit {
		f.Limit = InboxLimit
	}
	return nil
}

// ConversationTx lists the statements that change a conversation.
type ConversationTx interface {
	Tx
	// MoveConversation changes the conversation's status from from to to,
	// only if it is still from; false when it is not.
	MoveConversation(ctx context.Context, tenantID, id uuid.UUID, from, to string, at time.Time) (bool, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// moveConversation is the one way a conversation's status changes, for
// staff and for passengers writing again alike: the move must be allowed,
// and is made only if the status is still the one read (a conditional
// UPDATE), so two people resolving and reopening at once cannot both win.
// It is audited as the actor's.
func moveConversation(ctx context.Context, tx ConversationTx, c *Conversation, to string, actor Actor, at time.Time) error {
	if c.Status == to {
		return nil
	}
	if !CanMoveConversation(c.Status, to) {
		return Errorf(ECONFLICT, "A %s conversation cannot become %s.", strings.ToLower(c.Status), strings.ToLower(to))
	}
	ok, err := tx.MoveConversation(ctx, c.TenantID, c.ID, c.Status, to, at)
	if err != nil {
		return err
	}
	if !ok {
		return Errorf(ECONFLICT, "The conversation changed while you were working on it; reload it.")
	}
	from := c.Status
	c.Status, c.StatusAt, c.UpdatedAt = to, &at, at
	return tx.InsertAudit(ctx, actor.Entry(&c.TenantID, "conversation.status", "conversation", c.ID.String(),
		map[string]any{"from": from, "to": to}))
}

// InboxTx lists the statements Inbox runs.
type InboxTx interface {
	// EventReader resolves the tenant's events (LookupEvent).
	EventReader
	ConversationTx
	PlanTx
	InsertTx
	ConversationByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Conversation, error)
	ListConversations(ctx context.Context, tenantID uuid.UUID, f InboxFilter) ([]*InboxItem, error)
	// AssignConversation sets or clears the assignee; false when the user
	// is not an active user of the tenant.
	AssignConversation(ctx context.Context, tenantID, id uuid.UUID, userID *uuid.UUID, at time.Time) (bool, error)
	MarkConversationReplied(ctx context.Context, tenantID, id uuid.UUID, at time.Time) error
	ConversationMessages(ctx context.Context, tenantID, conversationID uuid.UUID, limit int) ([]*Message, error)
	ConversationReplies(ctx context.Context, tenantID uuid.UUID, conversationIDs []uuid.UUID, limit int) ([]*InboundMessage, error)
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*Template, error)
	WhatsAppTemplates(ctx context.Context, tenantID uuid.UUID) ([]*Template, error)
	MetaTemplate(ctx context.Context, tenantID, accountID uuid.UUID, name, language string) (*MetaTemplate, error)
	LastWhatsAppInbound(ctx context.Context, tenantID, accountID uuid.UUID, contactID *uuid.UUID, address string) (*time.Time, error)
	LatestEventForEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID, trigger string) (*Event, error)
	MessageByIdempotencyKey(ctx context.Context, tenantID uuid.UUID, key string) (*Message, error)
	AssignableUsers(ctx context.Context, tenantID uuid.UUID) ([]*User, error)
	// UnansweredConversations counts the tenant's open conversations whose
	// passenger wrote last, before before.
	UnansweredConversations(ctx context.Context, tenantID uuid.UUID, before time.Time) (int, error)
}

// Inbox is where staff read what passengers write and answer them: a
// tenant's conversations, one conversation with its thread, replies, and
// the conversation's status and assignee.
type Inbox struct {
	Store  Store[InboxTx]
	Router *Router
	Queue  Queue
	Now    Clock
}

// List returns the tenant's conversations a passenger wrote in: unanswered
// ones first, the longest waiting first, then the rest, newest first.
func (s *Inbox) List(ctx context.Context, p Principal, tenantID uuid.UUID, f InboxFilter) ([]*InboxItem, error) {
	if err := RequirePermission(p, PermMessages); err != nil {
		return nil, err
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var out []*InboxItem
	err := s.Store.InTenant(ctx, tenantID, func(tx InboxTx) (err error) {
		out, err = tx.ListConversations(ctx, tenantID, f)
		return err
	})
	return out, err
}

// Unanswered counts the tenant's open conversations whose passenger has
// waited longer than olderThan for an answer (the passenger wrote last).
// Staff alerts use it; the inbox lists the same conversations first.
func (s *Inbox) Unanswered(ctx context.Context, tenantID uuid.UUID, olderThan time.Duration) (int, error) {
	var n int
	err := s.Store.InTenant(ctx, tenantID, func(tx InboxTx) (err error) {
		n, err = tx.UnansweredConversations(ctx, tenantID, s.Now().Add(-olderThan))
		return err
	})
	return n, err
}

// SetStatus snoozes, resolves or reopens a conversation (moveConversation).
func (s *Inbox) SetStatus(ctx context.Context, p Principal, tenantID, id uuid.UUID, status string) (*Conversation, error) {
	if err := RequirePermission(p, PermReply); err != nil {
		return nil, err
	}
	status = strings.ToUpper(strings.TrimSpace(status))
	if !slices.Contains(ConversationStatuses, status) {
		return nil, Invalid("unknown_status", "status", "%q is not a conversation status (OPEN, SNOOZED, RESOLVED).", status)
	}
	var c *Conversation
	err := s.Store.InTenant(ctx, tenantID, func(tx InboxTx) (err error) {
		if c, err = tx.ConversationByID(ctx, tenantID, id, true); err != nil {
			return err
		}
		return moveConversation(ctx, tx, c, status, p.Actor(), s.Now())
	})
	return c, err
}

// Assign gives the conversation to one of the tenant's active users, or
// to nobody (userID nil); audited.
func (s *Inbox) Assign(ctx context.Context, p Principal, tenantID, id uuid.UUID, userID *uuid.UUID) (*Conversation, error) {
	if err := RequirePermission(p, PermReply); err != nil {
		return nil, err
	}
	var c *Conversation
	err := s.Store.InTenant(ctx, tenantID, func(tx InboxTx) (err error) {
		if c, err = tx.ConversationByID(ctx, tenantID, id, true); err != nil {
			return err
		}
		now := s.Now()
		ok, err := tx.AssignConversation(ctx, tenantID, id, userID, now)
		if err != nil {
			return err
		}
		if !ok {
			return Invalid("unknown_user", "user_id", "Choose one of this tenant's active users.")
		}
		c.AssignedTo, c.UpdatedAt = userID, now
		to := ""
		if userID != nil {
			to = userID.String()
		}
		return tx.InsertAudit(ctx, p.Actor().Entry(&tenantID, "conversation.assign", "conversation", id.String(),
			map[string]any{"assigned_to": to}))
	})
	return c, err
}
