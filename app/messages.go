package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// Messages answers questions about sent messages and resends them.
type Messages struct {
	Store  Store[PipelineTx]
	Queue  Queue
	Router *Router
	Now    Clock
}

// ByEntity returns the messages about a booking, trip or invoice, newest first.
func (s *Messages) ByEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*Message, error) {
	var ms []*Message
	err := s.Store.InTenant(ctx, tenantID, func(tx PipelineTx) (err error) {
		ms, err = tx.MessagesByEntity(ctx, tenantID, entityType, entityID)
		return err
	})
	return ms, err
}

// MessageDetail is a message with its timeline.
type MessageDetail struct {
	*Message
	Timeline []*MessageEvent `json:"timeline"`
}

// Get returns a message with its timeline.
func (s *Messages) Get(ctx context.Context, tenantID, id uuid.UUID) (*MessageDetail, error) {
	var d MessageDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx PipelineTx) (err error) {
		if d.Message, err = tx.MessageByID(ctx, tenantID, id, false); err != nil {
			return err
		}
		d.Timeline, err = tx.Timeline(ctx, tenantID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// ResendInput is a manual resend: the booking, the channel, and optionally
// the template to use instead of the one routing would pick.
type ResendInput struct {
	EntityType string
	EntityID   string
	Channel    string
	TemplateID *uuid.UUID
}

// Resend sends the booking's latest notification (of the template's event,
// when a template is named) again on the channel, as new messages: one per
// recipient, with the idempotency key manual:{entity}:{channel}:{template}:{request},
// triggered by the actor and audited. The original messages stay as they are.
func (s *Messages) Resend(ctx context.Context, actor Actor, tenantID uuid.UUID, in ResendInput) ([]*Message, error) {
	ch, ok := ParseChannel(in.Channel)
	if !ok {
		return nil, Invalid("unknown_channel", "channel", "%q is not a channel (WHATSAPP, EMAIL, SMS, WEBHOOK).", in.Channel)
	}
	if strings.TrimSpace(in.EntityID) == "" {
		return nil, Invalid("missing_entity", "id", "Name the booking to resend for.")
	}
	requestID := uuid.New()
	var out []*Message
	err := s.Store.InTenant(ctx, tenantID, func(tx PipelineTx) error {
		var tmpl *Template
		trigger := ""
		if in.TemplateID != nil {
			t, err := tx.TemplateByID(ctx, tenantID, *in.TemplateID)
			if err != nil {
				return err
			}
			if t.Channel != ch {
				return Invalid("template_channel_mismatch", "template_id", "Template %s is for %s, not %s.", t.ID, t.Channel, ch)
			}
			tmpl, trigger = t, t.TriggerEvent
		}
		e, err := tx.LatestEventForEntity(ctx, tenantID, in.EntityType, in.EntityID, trigger)
		if err != nil {
			return err
		}
		def, err := e.Def()
		if err != nil {
			return err
		}
		tenant, err := tx.TenantByID(ctx, tenantID)
		if err != nil {
			return err
		}
		recipients, err := e.DecodeRecipients()
		if err != nil {
			return err
		}
		var jobs []DispatchJob
		for _, rc := range recipients {
			contact, err := tx.FindContact(ctx, tenantID, rc.PassengerProfileID, rc.Phone, rc.Email)
			if err != nil {
				return err
			}
			m, skip, err := s.Router.Plan(ctx, tx, tenant, e, def, contact, nil, ch, tmpl)
			if err != nil {
				return err
			}
			if skip != "" {
				return Errorf(ECONFLICT, "Cannot resend on %s: %s.", ch, strings.ReplaceAll(skip, "_", " "))
			}
			m.IdempotencyKey = fmt.Sprintf("manual:%s:%s:%s:%s", in.EntityID, ch, *m.TemplateID, requestID)
			m.TriggeredBy = actor.ID
			source := SourceAPI
			if actor.Type == ActorUser {
				source = SourceConsole
			}
			if _, err := s.Router.Insert(ctx, tx, m, source, map[string]any{"manual_resend": true, "by": actor.Label, "request_id": requestID.String()}); err != nil {
				return err
			}
			jobs = append(jobs, DispatchJob{TenantID: tenantID, MessageID: m.ID, Channel: ch})
			out = append(out, m)
		}
		if err := tx.InsertAudit(ctx, actor.Entry(&tenantID, "message.resend", in.EntityType, in.EntityID,
			map[string]any{"channel": ch, "event_id": e.ID.String(), "request_id": requestID.String(), "messages": len(out)})); err != nil {
			return err
		}
		return s.Queue.EnqueueDispatch(ctx, tx, jobs...)
	})
	return out, err
}
