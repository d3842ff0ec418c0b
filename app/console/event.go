package console

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// eventMessageLimit caps the messages an event's page lists; an event with
// more (a broadcast) links to the messages explorer for the rest.
const eventMessageLimit = 200

// EventView is one event's page: the event, its recipients, the route
// decisions made for each, and the messages it made.
type EventView struct {
	Event      *app.Event
	Recipients []EventRecipient
	// Unplaced holds decisions whose recipient the event no longer names.
	Unplaced []app.RouteDecision
	Messages []*app.Message
	// MoreMessages is set when the event made more messages than are listed.
	MoreMessages bool
}

// EventRecipient is one recipient of an event with its route decisions in
// the order they were made (routing first, then any fallback chain).
type EventRecipient struct {
	Index     int
	Recipient app.Recipient
	Decisions []app.RouteDecision
}

// Event gathers an event's page; another tenant's event is ENOTFOUND.
func (s *MessageConsole) Event(ctx context.Context, tenantID, id uuid.UUID) (*EventView, error) {
	v := &EventView{}
	err := s.Store.InTenant(ctx, tenantID, func(tx MessageTx) (err error) {
		if v.Event, err = tx.EventWithRouting(ctx, tenantID, id); err != nil {
			return err
		}
		v.Messages, err = tx.ExplorerMessages(ctx, tenantID, MessageFilter{EventID: &id}, PageRequest{Limit: eventMessageLimit + 1})
		return err
	})
	if err != nil {
		return nil, err
	}
	v.Messages, v.MoreMessages = Page(v.Messages, PageRequest{Limit: eventMessageLimit + 1})
	recipients, err := v.Event.DecodeRecipients()
	if err != nil {
		return nil, err
	}
	for i, rc := range recipients {
		v.Recipients = append(v.Recipients, EventRecipient{Index: i, Recipient: rc})
	}
	for _, d := range v.Event.RouteDecisions() {
		if d.Recipient >= 0 && d.Recipient < len(v.Recipients) {
			v.Recipients[d.Recipient].Decisions = append(v.Recipients[d.Recipient].Decisions, d)
		} else {
			v.Unplaced = append(v.Unplaced, d)
		}
	}
	return v, nil
}
