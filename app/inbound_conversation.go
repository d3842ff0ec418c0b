package app

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// CallbackMessageInbound is the callback event of a message a passenger
// sent: the tenant's systems get every reply the inbox gets.
const CallbackMessageInbound = "message.inbound"

// quietKinds are WhatsApp messages that answer without asking anything: a
// quick-reply button pressed, an emoji reaction. They are stored on the
// conversation but do not make it wait for staff.
var quietKinds = map[string]bool{"button": true, "interactive": true, "reaction": true}

// asksForAnswer reports whether an inbound message makes its conversation
// wait for staff: anything the passenger wrote but a STOP or START keyword
// (answered by Herald itself) and a quiet kind.
func asksForAnswer(m *InboundMessage) bool {
	if quietKinds[m.Kind] {
		return false
	}
	_, keyword := ParseKeyword(m.Body)
	return !keyword
}

// InboundConversationTx lists the statements that put an inbound message
// on its conversation.
type InboundConversationTx interface {
	ConversationTx
	// ReplyConversation is the contact's conversation an inbound message
	// belongs to: the newest one not resolved, else the newest resolved.
	ReplyConversation(ctx context.Context, tenantID, contactID uuid.UUID) (*Conversation, error)
	InsertConversation(ctx context.Context, c *Conversation) error
	ContactEntities(ctx context.Context, tenantID, contactID uuid.UUID, limit int) ([]EntityRef, error)
	// ConversationHeard records that Herald received a message of the
	// passenger's at at (it only moves later).
	ConversationHeard(ctx context.Context, tenantID, id uuid.UUID, at time.Time) error
	CallbackSubscribers(ctx context.Context, tenantID uuid.UUID, eventType string) ([]uuid.UUID, error)
	// InsertInboundCallbackDeliveries stores one delivery of an inbound
	// message per endpoint and returns the ids of the new ones.
	InsertInboundCallbackDeliveries(ctx context.Context, tenantID uuid.UUID, endpointIDs []uuid.UUID, inboundID uuid.UUID,
		eventType string, payload []byte, at time.Time) ([]uuid.UUID, error)
}

// conversationFor is the conversation an inbound message of the contact
// goes on: the one they have, or a new OPEN one about what Herald last
// wrote to them about (their latest booking), so that no reply is left
// outside a conversation.
func (s *Inbound) conversationFor(ctx context.Context, tx InboundConversationTx, tenantID, contactID uuid.UUID) (*Conversation, error) {
	c, err := tx.ReplyConversation(ctx, tenantID, contactID)
	if ErrorCode(err) != ENOTFOUND {
		return c, err
	}
	now := s.Now()
	c = &Conversation{ID: NewID(), TenantID: tenantID, ContactID: contactID, Status: ConversationOpen, StatusAt: &now, CreatedAt: now, UpdatedAt: now}
	ents, err := tx.ContactEntities(ctx, tenantID, contactID, 1)
	if err != nil {
		return nil, err
	}
	if len(ents) == 1 {
		id := ents[0].EntityID
		switch ents[0].EntityType {
		case EntityBooking:
			c.BookingID = &id
		case EntityTrip:
			c.TripID = &id
		case EntityInvoice:
			c.InvoiceID = &id
		}
	}
	return c, tx.InsertConversation(ctx, c)
}

// heard puts a new inbound message on its conversation: one that asks for
// an answer reopens a snoozed or resolved conversation and makes it wait
// for staff. Every inbound message goes to the tenant's message.inbound
// callback endpoints.
func (s *Inbound) heard(ctx context.Context, tx InboundConversationTx, c *Conversation, m *InboundMessage) error {
	if asksForAnswer(m) {
		if c.Status != ConversationOpen {
			actor := Actor{Type: ActorSystem, Label: "passenger wrote again"}
			if err := moveConversation(ctx, tx, c, ConversationOpen, actor, s.Now()); err != nil {
				return err
			}
		}
		// Herald's time of receipt, not the provider's timestamp: an answer
		// written before Herald had the message cannot have answered it.
		if err := tx.ConversationHeard(ctx, c.TenantID, c.ID, m.CreatedAt); err != nil {
			return err
		}
	}
	return s.notifyInbound(ctx, tx, c, m)
}

// InboundCallbackData is the data of a message.inbound callback.
type InboundCallbackData struct {
	InboundMessageID uuid.UUID       `json:"inbound_message_id"`
	ConversationID   uuid.UUID       `json:"conversation_id"`
	ContactID        uuid.UUID       `json:"contact_id"`
	Channel          Channel         `json:"channel"`
	From             string          `json:"from"`
	Kind             string          `json:"kind"`
	Body             string          `json:"body"`
	ReceivedAt       time.Time       `json:"received_at"`
	Entity           *CallbackEntity `json:"entity"`
}

// notifyInbound makes the message.inbound callbacks of an inbound message,
// through the same signed deliveries as status callbacks.
func (s *Inbound) notifyInbound(ctx context.Context, tx InboundConversationTx, c *Conversation, m *InboundMessage) error {
	if s.Callbacks == nil {
		return nil
	}
	endpoints, err := tx.CallbackSubscribers(ctx, m.TenantID, CallbackMessageInbound)
	if err != nil || len(endpoints) == 0 {
		return err
	}
	data := InboundCallbackData{InboundMessageID: m.ID, ConversationID: c.ID, ContactID: m.ContactID, Channel: m.Channel,
		From: m.From, Kind: m.Kind, Body: m.Body, ReceivedAt: m.ReceivedAt.UTC()}
	if e := c.Entity(); e != nil {
		data.Entity = &CallbackEntity{Type: e.Type, ID: e.ID}
	}
	now := s.Now()
	payload, err := json.Marshal(CallbackPayload{Type: CallbackMessageInbound, Timestamp: now.UTC(), Data: data})
	if err != nil {
		return err
	}
	ids, err := tx.InsertInboundCallbackDeliveries(ctx, m.TenantID, endpoints, m.ID, CallbackMessageInbound, payload, now)
	if err != nil || len(ids) == 0 {
		return err
	}
	return s.Callbacks.Queue.EnqueueCallbacks(ctx, tx, m.TenantID, ids...)
}
