package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// PlanTx lists the statements planning a message runs (Router.Plan): its channel account and template.
type PlanTx interface {
	Tx
	ActiveAccount(ctx context.Context, tenantID uuid.UUID, ch Channel) (*ChannelAccount, error)
	FindTemplate(ctx context.Context, tenantID uuid.UUID, event string, ch Channel, locales []string) (*Template, error)
}

// InsertTx lists the statements storing a planned message runs (Router.Insert).
type InsertTx interface {
	Tx
	InsertMessage(ctx context.Context, m *Message, first *MessageEvent) (bool, error)
}

// FallbackTx lists the statements queueing a failed message's fallback runs (Router.Plan, Router.Insert and the event, contact and tenant they need).
type FallbackTx interface {
	PlanTx
	InsertTx
	// The status changes that run a fallback make their callbacks too.
	CallbackEnqueueTx
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Event, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
}

// RouteTx lists the statements Router runs.
type RouteTx interface {
	PlanTx
	InsertTx
	EventForRouting(ctx context.Context, tenantID, id uuid.UUID) (*Event, *Tenant, error)
	OpenConversation(ctx context.Context, tenantID, contactID uuid.UUID, entityType, entityID string, at time.Time) (*Conversation, error)
	SetEventStatus(ctx context.Context, e *Event) error
	FindContact(ctx context.Context, tenantID uuid.UUID, profileID, phone, email string) (*Contact, error)
	CreateContact(ctx context.Context, c *Contact) (*Contact, error)
	UpdateContact(ctx context.Context, c *Contact, r Recipient, at time.Time) error
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
}

// Router turns a stored event into messages: it resolves contacts and
// conversations, picks a template per channel over the locale chain, gates
// on an ACTIVE channel account, renders, and stores the messages with their
// dispatch jobs in one transaction.
type Router struct {
	Store Store[RouteTx]
	Queue Queue
	Now   Clock
	Log   *slog.Logger
}

// Route routes the event if job.Version is still its version and it is
// waiting to be routed; otherwise it does nothing (a reschedule, cancel or
// approval made this job stale).
func (r *Router) Route(ctx context.Context, job RouteJob) error {
	return r.Store.InTenant(ctx, job.TenantID, func(tx RouteTx) error {
		e, tenant, err := tx.EventForRouting(ctx, job.TenantID, job.EventID)
		if err != nil {
			return err
		}
		if e.Version != job.Version || (e.Status != EventReceived && e.Status != EventScheduled) {
			r.Log.InfoContext(ctx, "route job is stale; skipping", "event_id", e.ID, "job_version", job.Version,
				"event_version", e.Version, "status", e.Status)
			return nil
		}
		recipients, err := e.DecodeRecipients()
		if err != nil {
			return fmt.Errorf("event %s recipients: %w", e.ID, err)
		}
		def, err := e.Def()
		if err != nil {
			return err
		}

		var dispatch []DispatchJob
		for _, rc := range recipients {
			contact, err := r.resolveContact(ctx, tx, tenant.ID, rc)
			if err != nil {
				return err
			}
			var conversationID *uuid.UUID
			if e.EntityType != nil {
				conv, err := tx.OpenConversation(ctx, tenant.ID, contact.ID, *e.EntityType, *e.EntityID, r.Now())
				if err != nil {
					return err
				}
				conversationID = &conv.ID
			}
			jobs, err := r.routeRecipient(ctx, tx, tenant, e, def, contact, conversationID)
			if err != nil {
				return err
			}
			dispatch = append(dispatch, jobs...)
		}
		e.Status, e.UpdatedAt = EventRouted, r.Now()
		e.RoutedAt = &e.UpdatedAt
		if err := tx.SetEventStatus(ctx, e); err != nil {
			return err
		}
		return r.Queue.EnqueueDispatch(ctx, tx, dispatch...)
	})
}

func (r *Router) resolveContact(ctx context.Context, tx RouteTx, tenantID uuid.UUID, rc Recipient) (*Contact, error) {
	c, err := tx.FindContact(ctx, tenantID, rc.PassengerProfileID, rc.Phone, rc.Email)
	switch {
	case err == nil:
		// The request carries the newest details; keep them (a write only
		// when something changed: most events repeat what is known).
		if contactChanged(c, rc) {
			return c, tx.UpdateContact(ctx, c, rc, r.Now())
		}
		return c, nil
	case ErrorCode(err) != ENOTFOUND:
		return nil, err
	}
	now := r.Now()
	c = &Contact{ID: uuid.New(), TenantID: tenantID, Name: rc.Name, CreatedAt: now, UpdatedAt: now}
	if rc.PassengerProfileID != "" {
		c.PassengerProfileID = &rc.PassengerProfileID
	}
	if rc.Phone != "" {
		c.Phone = &rc.Phone
	}
	if rc.Email != "" {
		c.Email = &rc.Email
	}
	if rc.Locale != "" {
		c.Locale = &rc.Locale
	}
	return tx.CreateContact(ctx, c)
}

// contactChanged reports whether a recipient brings details the contact
// does not have yet; empty fields never count as a change.
func contactChanged(c *Contact, rc Recipient) bool {
	differs := func(stored *string, given string) bool { return given != "" && (stored == nil || *stored != given) }
	return (rc.Name != "" && rc.Name != c.Name) || differs(c.Phone, rc.Phone) || differs(c.Email, rc.Email) ||
		differs(c.Locale, rc.Locale) || (c.PassengerProfileID == nil && rc.PassengerProfileID != "")
}

// routeRecipient creates the messages of one recipient: every usable channel
// without a fallback chain, the first usable one with it. When nothing is
// usable, one FAILED message records why.
func (r *Router) routeRecipient(ctx context.Context, tx RouteTx, tenant *Tenant, e *Event, def *EventDef, contact *Contact, conversationID *uuid.UUID) ([]DispatchJob, error) {
	channels, chain := RouteChannels(e, def)
	var jobs []DispatchJob
	var skipped []string
	for i, ch := range channels {
		m, skip, err := r.Plan(ctx, tx, tenant, e, def, contact, conversationID, ch, nil)
		if err != nil {
			return nil, err
		}
		if skip != "" {
			skipped = append(skipped, skip)
			r.Log.WarnContext(ctx, "channel skipped", "event_id", e.ID, "channel", ch, "reason", skip)
			continue
		}
		if chain {
			m.FallbackChain = channelStrings(channels[i+1:])
		}
		inserted, err := r.Insert(ctx, tx, m, SourceRouting, nil)
		if err != nil {
			return nil, err
		}
		if inserted {
			jobs = append(jobs, DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel})
		}
		if chain {
			return jobs, nil
		}
	}
	if len(jobs) > 0 || len(skipped) < len(channels) {
		// Either something was queued, or every message already exists
		// (a once-per-entity event seen again).
		return jobs, nil
	}
	reason := ReasonNoTemplates
	for _, s := range skipped {
		if s == ReasonNoActiveChannels || s == ReasonNoAddress {
			reason = s
		}
	}
	now := r.Now()
	failed := &Message{
		ID: uuid.New(), TenantID: tenant.ID, EventID: &e.ID, CorrelationID: e.SourceEventID,
		IdempotencyKey: fmt.Sprintf("%s:%s:NONE:none:%s", scopeOf(e, def), e.TriggerEvent, contact.ID),
		TriggerEvent:   e.TriggerEvent, Channel: channels[0], ContactID: &contact.ID, ConversationID: conversationID,
		Status: MessageFailed, FailedReason: &reason, EntityType: e.EntityType, EntityID: e.EntityID,
		FallbackChain: StringList{}, QueuedAt: now, FailedAt: &now, CreatedAt: now, UpdatedAt: now,
	}
	_, err := r.Insert(ctx, tx, failed, SourceRouting, map[string]any{"reason": reason, "skipped": skipped})
	return nil, err
}

// RouteChannels returns the channels to try and whether they form a
// fallback chain.
func RouteChannels(e *Event, def *EventDef) ([]Channel, bool) {
	if len(e.FallbackChain) > 0 {
		return toChannels(e.FallbackChain), true
	}
	if len(e.Channels) > 0 {
		return toChannels(e.Channels), false
	}
	if len(def.Fallback) > 0 {
		return def.Fallback, true
	}
	return def.Channels, false
}

func toChannels(ss []string) []Channel {
	out := make([]Channel, len(ss))
	for i, s := range ss {
		out[i] = Channel(s)
	}
	return out
}

func channelStrings(cs []Channel) StringList {
	out := make(StringList, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// scopeOf is the first part of a message's idempotency key: the entity for
// once-per-entity events, so that a booking confirmed under two event ids
// still sends once, and the event itself for events that repeat.
func scopeOf(e *Event, def *EventDef) string {
	if def.OncePerEntity && e.EntityID != nil {
		return *e.EntityType + "/" + *e.EntityID
	}
	return "event/" + e.SourceEventID
}

// Plan builds the QUEUED message of one channel, or says why it cannot.
// A nil template is looked up over the locale chain.
func (r *Router) Plan(ctx context.Context, tx PlanTx, tenant *Tenant, e *Event, def *EventDef, contact *Contact, conversationID *uuid.UUID, ch Channel, t *Template) (*Message, string, error) {
	if t == nil {
		locale := contact.Recipient().Locale
		if locale == "" && e.Locale != nil {
			locale = *e.Locale
		}
		var err error
		t, err = tx.FindTemplate(ctx, tenant.ID, e.TriggerEvent, ch, LocaleChain(locale, tenant.DefaultLocale))
		switch {
		case ErrorCode(err) == ENOTFOUND && ch == Webhook:
			// A tenant's own system reads the event itself, not a text
			// written for people: without a template it gets the event.
			t = eventTemplate(tenant.ID, e)
		case ErrorCode(err) == ENOTFOUND:
			return nil, ReasonNoTemplates, nil
		case err != nil:
			return nil, "", err
		}
	}
	acct, err := tx.ActiveAccount(ctx, tenant.ID, ch)
	if ErrorCode(err) == ENOTFOUND {
		return nil, ReasonNoActiveChannels, nil
	} else if err != nil {
		return nil, "", err
	}
	to := contact.Address(ch)
	if ch == Webhook {
		to = acct.Config["url"]
	}
	if to == "" {
		return nil, ReasonNoAddress, nil
	}
	ctxVars, err := e.DecodeContext()
	if err != nil {
		return nil, "", err
	}
	vars := TemplateVars(ctxVars, contact.Recipient())
	body, missing := Render(t.Body, vars, ch == Email)
	subject, missingSubject := Render(t.Subject, vars, false)
	if missing = append(missing, missingSubject...); len(missing) > 0 {
		r.Log.WarnContext(ctx, "template variables missing; rendered empty", "event_id", e.ID, "template_id", t.ID, "missing", missing)
	}
	now := r.Now()
	var templateID *uuid.UUID
	var templateVersion *int
	if t.ID != uuid.Nil {
		templateID, templateVersion = &t.ID, &t.Version
	}
	return &Message{
		ID: uuid.New(), TenantID: tenant.ID, EventID: &e.ID, CorrelationID: e.SourceEventID,
		IdempotencyKey: fmt.Sprintf("%s:%s:%s:%s:%s", scopeOf(e, def), e.TriggerEvent, ch, t.ID, contact.ID),
		TriggerEvent:   e.TriggerEvent, Channel: ch, ChannelAccountID: &acct.ID, TemplateID: templateID,
		TemplateVersion: templateVersion, Locale: &t.Locale, ContactID: &contact.ID, ConversationID: conversationID,
		ToAddress: to, Subject: HeaderText(subject), Body: body, Status: MessageQueued,
		Provider: &acct.Provider, EntityType: e.EntityType, EntityID: e.EntityID, FallbackChain: StringList{},
		QueuedAt: now, CreatedAt: now, UpdatedAt: now,
	}, "", nil
}

// Insert stores a message unless its idempotency key exists, with the first
// timeline entry. It reports whether the message is new.
func (r *Router) Insert(ctx context.Context, tx InsertTx, m *Message, source string, detail map[string]any) (bool, error) {
	return tx.InsertMessage(ctx, m, &MessageEvent{
		TenantID: m.TenantID, MessageID: m.ID, ToStatus: &m.Status, Source: source, Detail: detail, At: m.CreatedAt,
	})
}

// fallback queues the next channel of a failed message's chain, skipping
// channels that cannot be used, and returns its dispatch job (nil when the
// chain is used up). The failed message's reason names the channel.
func (r *Router) fallback(ctx context.Context, tx FallbackTx, failed *Message) (*DispatchJob, string, error) {
	if len(failed.FallbackChain) == 0 || failed.EventID == nil || failed.ContactID == nil {
		return nil, "", nil
	}
	e, err := tx.EventByID(ctx, failed.TenantID, *failed.EventID, false)
	if err != nil {
		return nil, "", err
	}
	def, err := e.Def()
	if err != nil {
		return nil, "", err
	}
	tenant, err := tx.TenantByID(ctx, failed.TenantID)
	if err != nil {
		return nil, "", err
	}
	contact, err := tx.ContactByID(ctx, failed.TenantID, *failed.ContactID)
	if err != nil {
		return nil, "", err
	}
	chain := toChannels(failed.FallbackChain)
	for i, ch := range chain {
		m, skip, err := r.Plan(ctx, tx, tenant, e, def, contact, failed.ConversationID, ch, nil)
		if err != nil {
			return nil, "", err
		}
		if skip != "" {
			continue
		}
		m.FallbackOf, m.FallbackChain = &failed.ID, channelStrings(chain[i+1:])
		inserted, err := r.Insert(ctx, tx, m, SourceDispatch, map[string]any{"fallback_of": failed.ID.String()})
		if err != nil || !inserted {
			return nil, "", err
		}
		return &DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: ch}, string(ch), nil
	}
	return nil, "", nil
}

// eventTemplate is the stand-in template of the WEBHOOK channel: the body
// is the event as JSON (the recipient travels in the payload's "to").
func eventTemplate(tenantID uuid.UUID, e *Event) *Template {
	body, _ := json.Marshal(map[string]any{
		"event_id": e.SourceEventID, "trigger_event": e.TriggerEvent, "context": e.Context,
		"entity_type": e.EntityType, "entity_id": e.EntityID,
	})
	return &Template{TenantID: tenantID, TriggerEvent: e.TriggerEvent, Channel: Webhook, Locale: "und", Body: string(body), Subject: e.TriggerEvent}
}
