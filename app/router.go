package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	// InsertMessages stores each message unless its idempotency key
	// exists, a new one with its first timeline entry (firsts[i] for
	// ms[i]), all in one statement; inserted[i] reports whether ms[i] is
	// new. A message with OpenConversation gets its conversation.
	InsertMessages(ctx context.Context, ms []*Message, firsts []*MessageEvent) (inserted []bool, err error)
}

// InsertMessage is InsertMessages for one message: it reports whether m is
// new.
func InsertMessage(ctx context.Context, tx InsertTx, m *Message, first *MessageEvent) (bool, error) {
	return insertMessage(ctx, tx, m, first, nil)
}

// insertMessage is InsertMessage counting an SMS with the acknowledgement
// link acks will add (prepareSMS).
func insertMessage(ctx context.Context, tx InsertTx, m *Message, first *MessageEvent, acks *AckLinks) (bool, error) {
	m.prepareSMS(acks)
	if err := priceMessages(ctx, tx, []*Message{m}); err != nil {
		return false, err
	}
	inserted, err := tx.InsertMessages(ctx, []*Message{m}, []*MessageEvent{first})
	if err != nil {
		return false, err
	}
	return inserted[0], nil
}

// FallbackTx lists the statements queueing a failed message's fallback runs (Router.Plan, Router.Insert and the event, contact and tenant they need).
type FallbackTx interface {
	PlanTx
	InsertTx
	DestinationTx
	// The status changes that run a fallback make their callbacks too.
	CallbackEnqueueTx
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Event, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	// AppendEventRouting adds the chain's route decisions to the event's.
	AppendEventRouting(ctx context.Context, tenantID, id uuid.UUID, decisions JSON) error
}

// RouteTx lists the statements Router runs.
type RouteTx interface {
	// EventReader resolves the tenant's events (LookupEvent).
	EventReader
	PlanTx
	InsertTx
	DestinationTx
	ContactResolveTx
	EventForRouting(ctx context.Context, tenantID, id uuid.UUID) (*Event, *Tenant, error)
	SetEventStatus(ctx context.Context, e *Event) error
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	// Trip audiences (entity.go).
	AudienceTx
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
	// Files makes the short links an SMS carries its files as; nil: an
	// SMS carries none (its timeline says attachments_not_sent).
	Files *FileLinks
	// Acks makes the acknowledgement links dispatch adds to SMS, which
	// the stored count of parts includes; nil: none.
	Acks *AckLinks
	// Registry resolves a failed message's event for its fallback, whose
	// transaction (FallbackTx) reads no registry itself.
	Registry *Registry
}

// Route routes the event if job.Version is still its version and it is
// waiting to be routed; otherwise it does nothing (a reschedule, cancel or
// approval made this job stale). The messages and their dispatch jobs are
// stored in one transaction: the dispatch jobs send them.
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
		// Bookings and trips (entity.go): a superseded event is not
		// routed; an audience becomes the trip's passengers.
		if e.Superseding != nil {
			return r.cancelSuperseded(ctx, tx, e)
		}
		if e.ExpiresAt != nil && !r.Now().Before(*e.ExpiresAt) {
			return r.expireEvent(ctx, tx, e)
		}
		recipients, ok, err := r.eventRecipients(ctx, tx, e)
		if err != nil || !ok {
			return err
		}
		return r.routeEvent(ctx, tx, tenant, e, recipients, job.Priority)
	})
}

// routeEvent stores the messages of the event's recipients with their
// dispatch jobs and marks the event routed, with its routing decisions.
// The dispatch jobs take the route job's priority, up to the tenant's fair
// share of them (priority.go).
func (r *Router) routeEvent(ctx context.Context, tx RouteTx, tenant *Tenant, e *Event, recipients []Recipient, priority int) error {
	def, err := e.Def(ctx, tx)
	if err != nil {
		return err
	}
	contacts, err := ResolveContacts(ctx, tx, tenant.ID, recipients, eventActor(e), ChangeSourceEvent, &e.ID, r.Now())
	if err != nil {
		return err
	}
	routing := NewRouting(r.Now())
	var planned []plannedMessage
	for i, rc := range recipients {
		ps, err := r.routeRecipient(ctx, tx, tenant, e, def, Addressee{Contact: contacts[i], Recipient: rc, Index: i}, routing)
		if err != nil {
			return err
		}
		planned = append(planned, ps...)
	}
	// Every recipient's messages go in at once; each recipient's
	// conversation about the event's entity is found or opened by the
	// same statement.
	ms, firsts := make([]*Message, len(planned)), make([]*MessageEvent, len(planned))
	for i, p := range planned {
		ms[i], firsts[i] = p.m, p.first
		ms[i].prepareSMS(r.Acks)
	}
	if err := priceMessages(ctx, tx, ms); err != nil {
		return err
	}
	inserted, err := tx.InsertMessages(ctx, ms, firsts)
	if err != nil {
		return err
	}
	var dispatch []DispatchJob
	for i, p := range planned {
		if p.decision >= 0 && !inserted[i] {
			routing.Existed(p.decision)
		}
		if inserted[i] && p.m.Status == MessageQueued {
			dispatch = append(dispatch, p.m.DispatchJob())
		}
	}
	for i := range dispatch {
		dispatch[i].Priority = fanoutPriority(def, priority, i)
	}
	e.Status, e.UpdatedAt = EventRouted, r.Now()
	e.RoutedAt = &e.UpdatedAt
	// The decisions ride on the UPDATE that marks the event routed.
	e.Routing = routing.JSON()
	if err := tx.SetEventStatus(ctx, e); err != nil {
		return err
	}
	return r.Queue.EnqueueDispatch(ctx, tx, dispatch...)
}

// plannedMessage is a message routing will insert, with its first timeline
// entry and the index of its decision in the event's Routing (-1 for the
// FAILED message of a recipient no channel could reach).
type plannedMessage struct {
	m        *Message
	first    *MessageEvent
	decision int
}

// routeRecipient plans the messages of one recipient: every usable channel
// without a fallback chain, the first usable one with it. When nothing is
// usable, one FAILED message records why. Each channel's decision goes to
// routing: a channel given up on is routing.Skip with its reason, a
// message is routing.Queued until its insert finds it existed already.
func (r *Router) routeRecipient(ctx context.Context, tx RouteTx, tenant *Tenant, e *Event, def *EventDef, to Addressee, routing *Routing) ([]plannedMessage, error) {
	contact := to.Contact
	channels, chain := RouteChannels(e, def)
	var planned []plannedMessage
	var passed []SkippedChannel
	for i, ch := range channels {
		m, acct, skip, err := r.plan(ctx, tx, tenant, e, def, to, nil, ch, nil)
		if err != nil {
			return nil, err
		}
		if skip != "" {
			routing.Skip(to.Index, ch, skip).Tried(to.localeChain(e, tenant))
			passed = append(passed, SkippedChannel{Channel: ch, Reason: skip})
			r.Log.WarnContext(ctx, "channel skipped", "event_id", e.ID, "channel", ch, "reason", skip)
			continue
		}
		refused, err := r.refuseDestination(ctx, tx, tenant, e, m)
		if err != nil {
			return nil, err
		}
		if refused != nil {
			// The SMS fails with the rule's reason on its own timeline; the
			// recipient's other channels (or the chain's next) go on.
			routing.Skip(to.Index, ch, *m.FailedReason).Tried(to.localeChain(e, tenant))
			passed = append(passed, SkippedChannel{Channel: ch, Reason: *m.FailedReason})
			openConversation(m, e)
			planned = append(planned, plannedMessage{m: m, first: firstEntry(m, SourceRouting, refused), decision: -1})
			continue
		}
		if chain {
			m.FallbackChain = channelStrings(channels[i+1:])
		}
		expireWhileDeferred(m)
		openConversation(m, e)
		routing.Queued(to.Index, m, acct, true).Tried(to.localeChain(e, tenant))
		planned = append(planned, plannedMessage{m: m, first: firstEntry(m, SourceRouting, skippedDetail(nil, passed)), decision: len(routing.Decisions) - 1})
		if chain {
			return planned, nil
		}
	}
	if len(planned) > 0 {
		return planned, nil
	}
	skipped := make([]string, len(passed))
	for i, p := range passed {
		skipped[i] = p.Reason
	}
	reason := MostTellingSkip(skipped)
	now := r.Now()
	failed := &Message{
		ID: NewID(), TenantID: tenant.ID, EventID: &e.ID, CorrelationID: e.SourceEventID,
		IdempotencyKey: fmt.Sprintf("%s:%s:NONE:none:%s", scopeOf(e, def), e.TriggerEvent, contact.ID),
		TriggerEvent:   e.TriggerEvent, Channel: channels[0], ContactID: &contact.ID,
		Status: MessageFailed, FailedReason: &reason, EntityType: e.EntityType, EntityID: e.EntityID,
		RecipientIndex: to.index(), FallbackChain: StringList{}, QueuedAt: now, FailedAt: &now, CreatedAt: now, UpdatedAt: now,
	}
	openConversation(failed, e)
	return []plannedMessage{{m: failed, first: firstEntry(failed, SourceRouting, map[string]any{"reason": reason, "skipped": skipped}), decision: -1}}, nil
}

// openConversation has the insert of a recipient's message without a
// conversation find or open the recipient's conversation about the event's
// entity (Message.OpenConversation).
func openConversation(m *Message, e *Event) {
	if m.ConversationID == nil && m.ContactID != nil && e.EntityType != nil {
		m.OpenConversation = &Entity{Type: *e.EntityType, ID: *e.EntityID}
	}
}

// SkippedChannel is a channel routing passed over for a message, with why.
type SkippedChannel struct {
	Channel Channel `json:"channel"`
	Reason  string  `json:"reason"`
}

// skippedDetail adds the channels passed over before a message's channel to
// its first timeline entry, so that the timeline says why the message went
// out on this channel (an opted-out WhatsApp, for instance); nil without any.
func skippedDetail(detail map[string]any, passed []SkippedChannel) map[string]any {
	if len(passed) == 0 {
		return detail
	}
	if detail == nil {
		detail = map[string]any{}
	}
	detail["skipped"] = passed
	return detail
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

// Addressee is one recipient of an event as a message is planned for it:
// the recipient as the event gave it (its addresses, name, locale and
// context are what the message uses) and the contact it resolved to (whose
// opt-outs and e-mail complaints count, and whose id the message carries).
type Addressee struct {
	Contact   *Contact
	Recipient Recipient
	// Index is the recipient's position in the event's recipients; -1 when
	// the event does not say (a message stored before messages recorded it).
	Index int
}

func (a Addressee) index() *int {
	if a.Index < 0 {
		return nil
	}
	i := a.Index
	return &i
}

// address is where a message on ch goes: the recipient's own address on
// the channel, never the contact's (which a later event may have changed),
// and no e-mail address once the contact complained about e-mail.
func (a Addressee) address(ch Channel) string {
	switch {
	case ch.Phone():
		return a.Recipient.Phone
	case ch == Email && (a.Contact == nil || a.Contact.EmailComplainedAt == nil):
		return a.Recipient.Email
	}
	return ""
}

// localeChain is the locales a template is looked for in, best first: the
// recipient's, the contact's or the event's locale, then the tenant's
// default and Herald's fallback, each followed by its base language.
func (a Addressee) localeChain(e *Event, tenant *Tenant) []string {
	locale := a.Recipient.Locale
	if locale == "" && a.Contact != nil && a.Contact.Locale != nil {
		locale = *a.Contact.Locale
	}
	if locale == "" && e.Locale != nil {
		locale = *e.Locale
	}
	return LocaleChain(locale, tenant.DefaultLocale)
}

// MostTellingSkip is the reason routing records when every channel was
// skipped: the one that says most about what to fix.
func MostTellingSkip(skipped []string) string {
	reason := ReasonNoTemplates
	for _, want := range []string{ReasonNoActiveChannels, ReasonNoAddress, ReasonOptedOut} {
		if slices.Contains(skipped, want) {
			reason = want
		}
	}
	return reason
}

// Plan builds the QUEUED message of one channel for one addressee, or says
// why it cannot. A nil template is looked up over the locale chain.
func (r *Router) Plan(ctx context.Context, tx PlanTx, tenant *Tenant, e *Event, def *EventDef, to Addressee, conversationID *uuid.UUID, ch Channel, t *Template) (*Message, string, error) {
	m, _, skip, err := r.plan(ctx, tx, tenant, e, def, to, conversationID, ch, t)
	return m, skip, err
}

// plan is Plan, with the channel account the message goes through.
func (r *Router) plan(ctx context.Context, tx PlanTx, tenant *Tenant, e *Event, def *EventDef, to Addressee, conversationID *uuid.UUID, ch Channel, t *Template) (*Message, *ChannelAccount, string, error) {
	contact := to.Contact
	// Transactional events reach the passenger whatever they opted out of;
	// an optional one skips the channel (dispatch checks again under the
	// send's claim, for an opt-out that commits after this read).
	if def.Optional() && contact.OptedOutOf(ch) {
		return nil, nil, ReasonOptedOut, nil
	}
	if t == nil {
		var err error
		t, err = tx.FindTemplate(ctx, tenant.ID, e.TriggerEvent, ch, to.localeChain(e, tenant))
		switch {
		case ErrorCode(err) == ENOTFOUND && ch == Webhook:
			// A tenant's own system reads the event itself, not a text
			// written for people: without a template it gets the event.
			t = eventTemplate(tenant.ID, e)
		case ErrorCode(err) == ENOTFOUND:
			return nil, nil, ReasonNoTemplates, nil
		case err != nil:
			return nil, nil, "", err
		}
	}
	acct, err := tx.ActiveAccount(ctx, tenant.ID, ch)
	if ErrorCode(err) == ENOTFOUND {
		return nil, nil, ReasonNoActiveChannels, nil
	} else if err != nil {
		return nil, nil, "", err
	}
	addr := to.address(ch)
	if ch == Webhook {
		addr = acct.Config["url"]
	}
	if addr == "" {
		return nil, nil, ReasonNoAddress, nil
	}
	rc := to.Recipient
	if rc.Name == "" {
		rc.Name = contact.Name
	}
	vars, err := RecipientVars(e, rc)
	if err != nil {
		return nil, nil, "", err
	}
	body, missing := Render(t.Body, vars, false)
	switch ch {
	case Email:
		body, missing = RenderEmailBody(t.Body, t.BodyFormat, vars)
	case SMS:
		body = r.smsFiles(e, to, t.Body, vars)
	}
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
	m := &Message{
		ID: NewID(), TenantID: tenant.ID, EventID: &e.ID, CorrelationID: e.SourceEventID,
		IdempotencyKey: fmt.Sprintf("%s:%s:%s:%s:%s", scopeOf(e, def), e.TriggerEvent, ch, t.ID, contact.ID),
		TriggerEvent:   e.TriggerEvent, Channel: ch, ChannelAccountID: &acct.ID, TemplateID: templateID,
		TemplateVersion: templateVersion, Locale: &t.Locale, ContactID: &contact.ID, ConversationID: conversationID,
		RecipientIndex: to.index(), ToAddress: addr, Subject: HeaderText(subject), Body: body, Status: MessageQueued,
		Provider: &acct.Provider, EntityType: e.EntityType, EntityID: e.EntityID, FallbackChain: StringList{},
		QueuedAt: now, CreatedAt: now, UpdatedAt: now,
	}
	applyTimeRules(m, e, def, tenant, rc, now)
	if ch == WhatsApp {
		if m.PriceCategory, err = metaCategory(t); err != nil {
			return nil, nil, "", err
		}
	}
	return m, acct, "", nil
}

// metaCategory is the Meta pricing category of the Meta template a
// WhatsApp template names, as the template declares it (the category it
// is submitted to Meta with), "" without one: what Meta bills the message
// as outside the customer service window.
func metaCategory(t *Template) (string, error) {
	spec, err := t.Spec()
	if err != nil || spec == nil {
		return "", err
	}
	if c := strings.ToUpper(spec.Category); slices.Contains(PriceCategories, c) {
		return c, nil
	}
	return "", nil
}

// priceMessages gives each queued message its estimated cost by the price
// table, read once for all of them; a message that fails before it is
// sent costs nothing. Every store's transaction reads prices (db.Tx
// does); the transaction interfaces that store messages leave the method
// out, as they are at their size, so it is asked for here.
func priceMessages(ctx context.Context, tx any, ms []*Message) error {
	pr, ok := tx.(PriceReader)
	if !ok {
		return fmt.Errorf("price messages: the transaction %T does not read prices", tx)
	}
	rows, err := pr.Prices(ctx)
	if err != nil {
		return err
	}
	t := NewPriceTable("", rows)
	for _, m := range ms {
		m.EstimatedCost = nil
		if m.Status == MessageQueued {
			m.EstimatedCost = EstimateCost(t, m)
		}
	}
	return nil
}

// RecipientVars are the template variables of one recipient of an event:
// the event's context with the recipient's own context over it (top-level
// keys), and the recipient's fields. A recipient without a name is greeted
// with the context's passenger_name. When the recipient has a time zone,
// every time in the context (a string in RFC 3339, such as
// 2027-04-12T05:15:00Z) is shown as that zone's local time,
// "2027-04-12 07:15 CEST"; without one, times render as the caller wrote
// them.
func RecipientVars(e *Event, rc Recipient) (map[string]string, error) {
	ctxVars, err := e.DecodeContext()
	if err != nil {
		return nil, err
	}
	for k, v := range rc.Context {
		ctxVars[k] = v
	}
	if rc.Timezone != "" {
		if loc, err := RecipientLocation(rc.Timezone); err == nil {
			for k, v := range ctxVars {
				if s, ok := v.(string); ok {
					if t, err := time.Parse(time.RFC3339, s); err == nil {
						ctxVars[k] = t.In(loc).Format(RecipientTimeLayout)
					}
				}
			}
		}
	}
	vars := TemplateVars(ctxVars, rc)
	if rc.Name == "" {
		vars["recipient_name"] = vars["passenger_name"]
	}
	return vars, nil
}

// RecipientTimeLayout is how a time in the context is shown to a recipient
// with a time zone.
const RecipientTimeLayout = "2006-01-02 15:04 MST"

// RecipientOf returns the recipient of the event a message was for, with
// its index: by the message's recipient index, else (a message stored
// before messages recorded it) the first recipient whose address on the
// message's channel is the one the message went to. ok is false when the
// event names no such recipient.
func RecipientOf(recipients []Recipient, m *Message) (Recipient, int, bool) {
	if m.RecipientIndex != nil {
		i := *m.RecipientIndex
		if i >= 0 && i < len(recipients) {
			return recipients[i], i, true
		}
		return Recipient{}, -1, false
	}
	for i, rc := range recipients {
		if a := (Addressee{Recipient: rc}).address(m.Channel); a != "" && a == m.ToAddress {
			return rc, i, true
		}
	}
	return Recipient{}, -1, false
}

// WithAddress returns the recipient with its address on ch set to addr: a
// retry goes to exactly the address the failed message went to.
func (rc Recipient) WithAddress(ch Channel, addr string) Recipient {
	switch {
	case ch.Phone():
		rc.Phone = addr
	case ch == Email:
		rc.Email = addr
	}
	return rc
}

// Insert stores a message unless its idempotency key exists, with the first
// timeline entry. It reports whether the message is new.
func (r *Router) Insert(ctx context.Context, tx InsertTx, m *Message, source string, detail map[string]any) (bool, error) {
	return insertMessage(ctx, tx, m, firstEntry(m, source, detail), r.Acks)
}

// firstEntry is the timeline entry a new message starts with.
func firstEntry(m *Message, source string, detail map[string]any) *MessageEvent {
	return &MessageEvent{
		TenantID: m.TenantID, MessageID: m.ID, ToStatus: &m.Status, Source: source, Detail: withTimeDetail(m, detail), At: m.CreatedAt,
	}
}

// nextInChain is what a failed message's chain goes on with: the next
// channel's dispatch job, or none, and the channels passed over on the way
// (no template, no address, opted out, ...), which the failed message's
// timeline names so that a chain that ends early says why.
type nextInChain struct {
	Job     *DispatchJob
	Channel string
	Skipped []SkippedChannel
}

// detail adds the chain's outcome to a failed message's timeline entry:
// the channel that takes over, or which channels were passed over and why.
func (n nextInChain) detail(d map[string]any) map[string]any {
	if n.Job != nil {
		d["fallback"] = n.Channel
		d["fallback_message_id"] = n.Job.MessageID.String()
	}
	if len(n.Skipped) > 0 {
		parts := make([]string, len(n.Skipped))
		for i, s := range n.Skipped {
			parts[i] = string(s.Channel) + ": " + strings.ReplaceAll(s.Reason, "_", " ")
		}
		d["fallback_skipped"] = strings.Join(parts, "; ")
		if n.Job == nil {
			d["fallback"] = "none: every channel left in the chain was passed over"
		}
	}
	return d
}

// fallback queues the next channel of a failed message's chain, skipping
// channels that cannot be used, and returns its dispatch job (none when the
// chain is used up) with the channels it passed over. The failed message's
// reason names the channel.
func (r *Router) fallback(ctx context.Context, tx FallbackTx, failed *Message) (nextInChain, error) {
	next, channel, passed, err := r.fallbackStep(ctx, tx, failed)
	return nextInChain{Job: next, Channel: channel, Skipped: passed}, err
}

// fallbackAddressee reads what a failed message's chain is planned from:
// its event (with only the message's file, when it is limited to one), the
// event's definition, the tenant, and the recipient as the event gave it.
// ok is false when the event no longer names the recipient.
func (r *Router) fallbackAddressee(ctx context.Context, tx FallbackTx, failed *Message) (e *Event, def *EventDef, tenant *Tenant, to Addressee, ok bool, err error) {
	if e, err = tx.EventByID(ctx, failed.TenantID, *failed.EventID, false); err != nil {
		return
	}
	if def, err = r.Registry.Lookup(ctx, e.TenantID, e.TriggerEvent); err != nil {
		return
	}
	if tenant, err = tx.TenantByID(ctx, failed.TenantID); err != nil {
		return
	}
	contact, err := tx.ContactByID(ctx, failed.TenantID, *failed.ContactID)
	if err != nil {
		return
	}
	// The next channel goes to the address the event gave this recipient
	// on it, not to whatever the contact holds now.
	recipients, err := e.DecodeRecipients()
	if err != nil {
		return
	}
	rc, index, found := RecipientOf(recipients, failed)
	if !found {
		r.Log.WarnContext(ctx, "fallback skipped: the event no longer names the message's recipient", "message_id", failed.ID)
		return e, def, tenant, to, false, nil
	}
	if failed.FileID != nil {
		// A message limited to one file hands on that file alone.
		e.Files = e.Files.Only(*failed.FileID)
	}
	return e, def, tenant, Addressee{Contact: contact, Recipient: rc, Index: index}, true, nil
}

func (r *Router) fallbackStep(ctx context.Context, tx FallbackTx, failed *Message) (*DispatchJob, string, []SkippedChannel, error) {
	if len(failed.FallbackChain) == 0 || failed.EventID == nil || failed.ContactID == nil {
		return nil, "", nil, nil
	}
	e, def, tenant, to, ok, err := r.fallbackAddressee(ctx, tx, failed)
	if err != nil || !ok {
		return nil, "", nil, err
	}
	chain := toChannels(failed.FallbackChain)
	// The chain's decisions are added to the event's in one statement, on
	// this path only: a message failed and its chain goes on.
	routing := NewRouting(r.Now())
	record := func(d *RouteDecision) { d.FallbackOf = &failed.ID; d.Tried(to.localeChain(e, tenant)) }
	var passed []SkippedChannel
	for i, ch := range chain {
		m, acct, skip, err := r.plan(ctx, tx, tenant, e, def, to, failed.ConversationID, ch, nil)
		if err != nil {
			return nil, "", nil, err
		}
		if skip != "" {
			record(routing.Skip(to.Index, ch, skip))
			passed = append(passed, SkippedChannel{Channel: ch, Reason: skip})
			continue
		}
		refused, err := r.refuseDestination(ctx, tx, tenant, e, m)
		if err != nil {
			return nil, "", nil, err
		}
		if refused != nil {
			m.FallbackOf = &failed.ID
			refused["fallback_of"] = failed.ID.String()
			if _, err := r.Insert(ctx, tx, m, SourceDispatch, refused); err != nil {
				return nil, "", nil, err
			}
			record(routing.Skip(to.Index, ch, *m.FailedReason))
			passed = append(passed, SkippedChannel{Channel: ch, Reason: *m.FailedReason})
			continue
		}
		m.FallbackOf, m.FallbackChain, m.FileID = &failed.ID, channelStrings(chain[i+1:]), failed.FileID
		expireWhileDeferred(m)
		inserted, err := r.Insert(ctx, tx, m, SourceDispatch, skippedDetail(map[string]any{"fallback_of": failed.ID.String()}, passed))
		if err != nil {
			return nil, "", nil, err
		}
		record(routing.Queued(to.Index, m, acct, inserted))
		if err := tx.AppendEventRouting(ctx, e.TenantID, e.ID, routing.JSON()); err != nil || !inserted || m.Status != MessageQueued {
			return nil, "", nil, err
		}
		job := m.DispatchJob()
		return &job, string(ch), passed, nil
	}
	if len(routing.Decisions) > 0 {
		return nil, "", passed, tx.AppendEventRouting(ctx, e.TenantID, e.ID, routing.JSON())
	}
	return nil, "", passed, nil
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
