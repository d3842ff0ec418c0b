package console

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// MessageTx holds the console's reads of messages, events and
// replies: the booking panel and the messages explorer.
type MessageTx interface {
	app.EventReader
	app.PlanTx
	app.InsertTx
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*app.Contact, error)
	InsertMessageEvent(ctx context.Context, e *app.MessageEvent) error
	TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*app.Template, error)
	MessagesByEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*app.Message, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*app.Tenant, error)
	EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.Event, error)
	// EventWithRouting returns an event with its route decisions.
	EventWithRouting(ctx context.Context, tenantID, id uuid.UUID) (*app.Event, error)
	MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.Message, error)
	// ExplorerMessages returns the tenant's messages matching f, newest first.
	ExplorerMessages(ctx context.Context, tenantID uuid.UUID, f MessageFilter, page PageRequest) ([]*app.Message, error)
	// PanelEvents returns the events about a booking, trip or invoice,
	// newest first.
	PanelEvents(ctx context.Context, tenantID uuid.UUID, entityType, entityID string, limit int) ([]*app.Event, error)
	// ConversationMessages returns a conversation's messages, newest first.
	ConversationMessages(ctx context.Context, tenantID, conversationID uuid.UUID, limit int) ([]*app.Message, error)
	// MessageTimelines returns the timelines of several messages, oldest entry first.
	MessageTimelines(ctx context.Context, tenantID uuid.UUID, messageIDs []uuid.UUID) (map[uuid.UUID][]*app.MessageEvent, error)
	// ConversationReplies returns the replies received on the
	// conversations, newest first.
	ConversationReplies(ctx context.Context, tenantID uuid.UUID, conversationIDs []uuid.UUID, limit int) ([]*app.InboundMessage, error)
	// ResendTemplates returns the tenant's active templates of the
	// trigger events.
	ResendTemplates(ctx context.Context, tenantID uuid.UUID, triggers []string) ([]*app.Template, error)
	// TriggeredByLabels names the users and API keys among ids (the triggered_by
	// of manual sends); ids it cannot name are left out.
	TriggeredByLabels(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error)
	// MessageByIdempotencyKey returns the message with the key.
	MessageByIdempotencyKey(ctx context.Context, tenantID uuid.UUID, key string) (*app.Message, error)
	// CancelQueuedMessage moves one QUEUED message to CANCELLED; false when it
	// was no longer QUEUED.
	CancelQueuedMessage(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error)
}

// EntityTypes are the kinds of entity the booking panel looks up.
var EntityTypes = []string{app.EntityBooking, app.EntityTrip, app.EntityInvoice}

// IsEntityType reports whether s is a booking, trip or invoice.
func IsEntityType(s string) bool {
	return slices.Contains(EntityTypes, s)
}

// MessageFilter narrows the messages explorer. Zero fields do not filter.
type MessageFilter struct {
	Status  string
	Channel app.Channel
	Trigger string
	EventID *uuid.UUID
	// From and To bound created_at: From <= created_at < To.
	From, To *time.Time
	// Address matches to_address exactly (E.164 phone or lower-case e-mail).
	Address string
	// Stale keeps SENT messages that maintenance flagged stale.
	Stale bool
	// Reason matches failed_reason exactly (quota_exceeded, meta_131026).
	Reason string
	// EntityType and EntityID keep the messages about one booking, trip
	// or invoice (the API's message list; the console has its panel).
	EntityType, EntityID string
}

// MessageFilterInput is the explorer's filter form as typed.
type MessageFilterInput struct {
	Status, Channel, Event, EventID, From, To, Address, Stale, Reason string
}

// failedReasonPattern is what failed reasons look like: Herald's codes,
// providers' codes made lower case, fallback_triggered:EMAIL.
var failedReasonPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)

// ParseMessageFilter validates the explorer's filters. Dates are days in
// loc (the tenant's timezone); "to" includes its whole day. A bad value is
// left out of the filter and reported in errs under its field, so the page
// can say what it ignored instead of failing.
func ParseMessageFilter(in MessageFilterInput, loc *time.Location) (f MessageFilter, errs map[string]string) {
	errs = map[string]string{}
	if loc == nil {
		loc = time.UTC
	}
	if s := strings.ToUpper(strings.TrimSpace(in.Status)); s != "" {
		if slices.Contains(MessageStatuses, s) {
			f.Status = s
		} else {
			errs["status"] = "Unknown status \"" + in.Status + "\"; choose one of " + strings.Join(MessageStatuses, ", ") + ". Showing every status."
		}
	}
	if s := strings.TrimSpace(in.Channel); s != "" {
		if ch, ok := app.ParseChannel(s); ok {
			f.Channel = ch
		} else {
			errs["channel"] = "Unknown channel \"" + s + "\"; choose WHATSAPP, EMAIL, SMS or WEBHOOK. Showing every channel."
		}
	}
	if s := strings.ToUpper(strings.TrimSpace(in.Event)); s != "" {
		if _, ok := app.BuiltInEvent(s); ok {
			f.Trigger = s
		} else {
			errs["event"] = "Unknown event \"" + in.Event + "\". Showing every event."
		}
	}
	if s := strings.TrimSpace(in.EventID); s != "" {
		if id, err := uuid.Parse(s); err == nil {
			f.EventID = &id
		} else {
			errs["event_id"] = "\"" + s + "\" is not a notification id. Showing every notification."
		}
	}
	day := func(field, s string) *time.Time {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil
		}
		d, err := time.ParseInLocation("2006-01-02", s, loc)
		if err != nil {
			errs[field] = "\"" + s + "\" is not a date; use YYYY-MM-DD. This bound is ignored."
			return nil
		}
		return &d
	}
	f.From = day("from", in.From)
	if to := day("to", in.To); to != nil {
		end := to.AddDate(0, 0, 1)
		f.To = &end
	}
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		errs["to"] = "\"From\" is after \"to\"; both dates are ignored."
		f.From, f.To = nil, nil
	}
	if s := strings.TrimSpace(in.Address); s != "" {
		switch addr, ok := normalizeAddress(s); {
		case ok:
			f.Address = addr
		default:
			errs["address"] = "Type a full phone number with country code (+49…) or a full e-mail address. The address filter is ignored."
		}
	}
	if s := strings.TrimSpace(in.Reason); s != "" {
		if failedReasonPattern.MatchString(s) {
			f.Reason = s
		} else {
			errs["reason"] = "\"" + s + "\" is not a failure reason; reasons are codes such as quota_exceeded or meta_131026. Showing every reason."
		}
	}
	switch strings.ToLower(strings.TrimSpace(in.Stale)) {
	case "", "0", "false", "off":
	case "1", "true", "on", "yes":
		f.Stale = true
	default:
		errs["stale"] = "stale is 1 or empty. Showing messages whether stale or not."
	}
	return f, errs
}

// normalizeAddress turns a typed phone number or e-mail address into the
// form messages store it in.
func normalizeAddress(s string) (string, bool) {
	if strings.Contains(s, "@") {
		e, err := app.NormalizeEmail("address", s)
		return e, err == nil
	}
	p, err := app.NormalizePhone(s)
	return p, err == nil
}

// MessageTrail is a message with its timeline and the passenger's replies
// that answer it.
type MessageTrail struct {
	*app.Message
	Timeline []*app.MessageEvent
	Replies  []*app.InboundMessage
}

// BookingPanel is everything Herald did for one booking, trip or invoice:
// its notifications (events, scheduled ones included), every message with
// its timeline, and what the passenger wrote back.
type BookingPanel struct {
	EntityType string
	EntityID   string
	Events     []*app.Event
	// Messages is one page of the entity's messages, newest first, with
	// their timelines; MessageCount counts them all and More says whether
	// older ones follow.
	Messages     []*MessageTrail
	MessageCount int
	More         bool
	Replies      []*app.InboundMessage
	// Retried holds the failed messages a retry was sent for, on any page.
	Retried map[uuid.UUID]bool
	// Actors names whoever triggered manual sends, by id.
	Actors map[uuid.UUID]string
	// Templates are the active templates of the entity's events: what a
	// resend may use.
	Templates []*app.Template
	// Superseding are the events that superseded (cancelled) events or
	// messages of the panel, by id (see app.SupersedingID).
	Superseding map[uuid.UUID]*app.Event
}

// RefusedAddress is an address a provider refused on a channel, by the
// latest message the panel shows to it there.
type RefusedAddress struct {
	Channel app.Channel
	To      string
	// Why is app.AddressRefusal's sentence.
	Why string
}

// Refused lists the addresses a provider refused on a channel as the
// address's own fault (app.AddressRefusal), by the messages of the page
// shown: sending again to them will most likely fail the same way, which
// the resend form says before anyone sends. A later message that reached
// the address (DELIVERED or READ) clears it; one still on its way does not.
func (p *BookingPanel) Refused() []RefusedAddress {
	seen := map[[2]string]bool{}
	var out []RefusedAddress
	for _, m := range p.Messages { // newest first
		k := [2]string{string(m.Channel), m.ToAddress}
		if m.Test || m.ToAddress == "" || seen[k] {
			continue
		}
		switch why := app.AddressRefusal(m.Message); {
		case why != "":
			seen[k] = true
			out = append(out, RefusedAddress{Channel: m.Channel, To: m.ToAddress, Why: why})
		case m.Status == app.MessageDelivered || m.Status == app.MessageRead:
			seen[k] = true
		}
	}
	return out
}

// Files returns the files a message carries, as its event (one of the
// panel's) lists them: the event's own and the message's recipient's, in
// order. A message whose event is not on the panel lists none.
func (p *BookingPanel) Files(m *app.Message) []*app.Attachment {
	if m.EventID == nil {
		return nil
	}
	var out []*app.Attachment
	for _, e := range p.Events {
		if e.ID != *m.EventID {
			continue
		}
		for _, f := range e.Files {
			if f.RecipientIndex == nil || (m.RecipientIndex != nil && *f.RecipientIndex == *m.RecipientIndex) {
				out = append(out, f)
			}
		}
	}
	return out
}

// Found reports whether Herald knows anything about the entity.
func (p *BookingPanel) Found() bool { return len(p.Events) > 0 || p.MessageCount > 0 }

// Pending returns the events still waiting to be sent: scheduled or
// awaiting approval.
func (p *BookingPanel) Pending() []*app.Event {
	var out []*app.Event
	for _, e := range p.Events {
		if e.Status == app.EventScheduled || e.Status == app.EventAwaitingApproval || e.Status == app.EventReceived {
			out = append(out, e)
		}
	}
	return out
}

// MessageView is one message for its console page: the message, its
// timeline and replies, the messages linked to it, and who triggered it.
type MessageView struct {
	*MessageTrail
	Event *app.Event
	// RetryOf is the failed message this one retries; RetriedAs the
	// message that retried this one.
	RetryOf   *app.Message
	RetriedAs *app.Message
	// TriggeredBy names whoever sent the message by hand, if anyone did.
	TriggeredBy string
}

// Panel and detail sizes: a booking rarely has more than a few dozen
// messages; the caps keep a runaway entity from filling a page.
const (
	panelEventLimit   = 200
	panelReplyLimit   = 200
	detailReplyWindow = 200
)

// MessageConsole serves the console's booking panel and messages explorer,
// and its message actions: resend, retry and cancel.
type MessageConsole struct {
	Store    app.Store[MessageTx]
	Queue    app.Queue
	Router   *app.Router
	Messages *app.Messages
	Now      app.Clock
}

// List returns a page of the tenant's messages matching f, newest first:
// the first page, or the page next to page.Cursor.
func (s *MessageConsole) List(ctx context.Context, tenantID uuid.UUID, f MessageFilter, page PageRequest) ([]*app.Message, bool, error) {
	var ms []*app.Message
	err := s.Store.InTenant(ctx, tenantID, func(tx MessageTx) (err error) {
		ms, err = tx.ExplorerMessages(ctx, tenantID, f, page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	ms, more := KeysetPage(ms, page)
	return ms, more, nil
}

// Panel gathers the booking panel of an entity. An entity Herald never heard
// of is an empty panel, not an error: the person searching learns that
// nothing was sent.
func (s *MessageConsole) Panel(ctx context.Context, tenantID uuid.UUID, entityType, entityID string, page PageRequest) (*BookingPanel, error) {
	if !IsEntityType(entityType) {
		return nil, app.Errorf(app.ENOTFOUND, "There are no %q records; look up a booking, trip or invoice.", entityType)
	}
	p := &BookingPanel{EntityType: entityType, EntityID: entityID}
	err := s.Store.InTenant(ctx, tenantID, func(tx MessageTx) error {
		var err error
		if p.Events, err = tx.PanelEvents(ctx, tenantID, entityType, entityID, panelEventLimit); err != nil {
			return err
		}
		all, err := tx.MessagesByEntity(ctx, tenantID, entityType, entityID)
		if err != nil {
			return err
		}
		p.MessageCount = len(all)
		p.Retried = map[uuid.UUID]bool{}
		for _, m := range all {
			if of, ok := RetriedMessageID(m.IdempotencyKey); ok {
				p.Retried[of] = true
			}
		}
		// Timelines only for the page shown; replies are the entity's and
		// answer the messages of every page.
		lo := min(page.Offset, len(all))
		ms, more := Page(all[lo:min(lo+page.Limit, len(all))], page)
		p.More = more
		if p.Messages, p.Replies, err = s.pageTrails(ctx, tx, tenantID, all, ms); err != nil {
			return err
		}
		if p.Actors, err = s.actors(ctx, tx, tenantID, ms); err != nil {
			return err
		}
		var triggers []string
		for _, e := range p.Events {
			if !slices.Contains(triggers, e.TriggerEvent) {
				triggers = append(triggers, e.TriggerEvent)
			}
		}
		if p.Templates, err = tx.ResendTemplates(ctx, tenantID, triggers); err != nil {
			return err
		}
		p.Superseding, err = supersedingEvents(ctx, tx, tenantID, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// supersedingEvents loads the events named by the superseded_by reasons
// of the panel's events and shown messages: usually the panel's own
// cancellation, else its trip's.
func supersedingEvents(ctx context.Context, tx MessageTx, tenantID uuid.UUID, p *BookingPanel) (map[uuid.UUID]*app.Event, error) {
	out := map[uuid.UUID]*app.Event{}
	var reasons []string
	for _, e := range p.Events {
		out[e.ID] = e
		if e.StatusReason != nil {
			reasons = append(reasons, *e.StatusReason)
		}
	}
	for _, m := range p.Messages {
		if m.FailedReason != nil {
			reasons = append(reasons, *m.FailedReason)
		}
	}
	for _, r := range reasons {
		id, ok := app.SupersedingID(r)
		if !ok || out[id] != nil {
			continue
		}
		e, err := tx.EventByID(ctx, tenantID, id, false)
		if app.ErrorCode(err) == app.ENOTFOUND {
			continue // pruned by retention: the reason alone is shown
		} else if err != nil {
			return nil, err
		}
		out[id] = e
	}
	return out, nil
}

// trails loads the timelines of messages and the replies on their
// conversations, and gives each reply to the message it answers.
func (s *MessageConsole) trails(ctx context.Context, tx MessageTx, tenantID uuid.UUID, ms []*app.Message) ([]*MessageTrail, []*app.InboundMessage, error) {
	return s.pageTrails(ctx, tx, tenantID, ms, ms)
}

// pageTrails is trails for the page shown of a longer list: timelines for
// the page's messages, replies on the conversations of all, each given to
// the message it answers among all.
func (s *MessageConsole) pageTrails(ctx context.Context, tx MessageTx, tenantID uuid.UUID, all, ms []*app.Message) ([]*MessageTrail, []*app.InboundMessage, error) {
	ids := make([]uuid.UUID, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	var conversations []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, m := range all {
		if m.ConversationID != nil && !seen[*m.ConversationID] {
			seen[*m.ConversationID] = true
			conversations = append(conversations, *m.ConversationID)
		}
	}
	timelines, err := tx.MessageTimelines(ctx, tenantID, ids)
	if err != nil {
		return nil, nil, err
	}
	var replies []*app.InboundMessage
	if len(conversations) > 0 {
		if replies, err = tx.ConversationReplies(ctx, tenantID, conversations, panelReplyLimit); err != nil {
			return nil, nil, err
		}
	}
	answered := AttributeReplies(all, replies)
	trails := make([]*MessageTrail, len(ms))
	for i, m := range ms {
		trails[i] = &MessageTrail{Message: m, Timeline: timelines[m.ID], Replies: answered[m.ID]}
	}
	return trails, replies, nil
}

// AttributeReplies gives each reply to the message it answers: the newest
// message on the same conversation and channel created before the reply
// arrived. Replies that answer none of the messages are left out.
func AttributeReplies(ms []*app.Message, replies []*app.InboundMessage) map[uuid.UUID][]*app.InboundMessage {
	out := map[uuid.UUID][]*app.InboundMessage{}
	for _, r := range replies {
		if r.ConversationID == nil {
			continue
		}
		var best *app.Message
		for _, m := range ms {
			if m.ConversationID == nil || *m.ConversationID != *r.ConversationID || m.Channel != r.Channel || m.CreatedAt.After(r.ReceivedAt) {
				continue
			}
			if best == nil || m.CreatedAt.After(best.CreatedAt) {
				best = m
			}
		}
		if best != nil {
			out[best.ID] = append(out[best.ID], r)
		}
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ReceivedAt.Before(rs[j].ReceivedAt) })
	}
	return out
}

// actors names the triggered_by ids of messages.
func (s *MessageConsole) actors(ctx context.Context, tx MessageTx, tenantID uuid.UUID, ms []*app.Message) (map[uuid.UUID]string, error) {
	var ids []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, m := range ms {
		if m.TriggeredBy != nil && !seen[*m.TriggeredBy] {
			seen[*m.TriggeredBy] = true
			ids = append(ids, *m.TriggeredBy)
		}
	}
	if len(ids) == 0 {
		return map[uuid.UUID]string{}, nil
	}
	labels, err := tx.TriggeredByLabels(ctx, tenantID, ids)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, ok := labels[id]; !ok {
			// Operators belong to no tenant, so the tenant's scope cannot
			// name them.
			labels[id] = "a Herald operator"
		}
	}
	return labels, nil
}

// Detail returns one message for its page: timeline, replies, the event,
// and the retries linked to it.
func (s *MessageConsole) Detail(ctx context.Context, tenantID, id uuid.UUID) (*MessageView, error) {
	v := &MessageView{}
	err := s.Store.InTenant(ctx, tenantID, func(tx MessageTx) error {
		m, err := tx.MessageByID(ctx, tenantID, id, false)
		if err != nil {
			return err
		}
		// The conversation's other messages decide which replies answer
		// this one.
		siblings := []*app.Message{m}
		if m.ConversationID != nil {
			others, err := tx.ConversationMessages(ctx, tenantID, *m.ConversationID, detailReplyWindow)
			if err != nil {
				return err
			}
			for _, o := range others {
				if o.ID != m.ID {
					siblings = append(siblings, o)
				}
			}
		}
		trails, _, err := s.trails(ctx, tx, tenantID, siblings)
		if err != nil {
			return err
		}
		v.MessageTrail = trails[0]
		if m.EventID != nil {
			if v.Event, err = tx.EventByID(ctx, tenantID, *m.EventID, false); err != nil && app.ErrorCode(err) != app.ENOTFOUND {
				return err
			}
		}
		if of, ok := RetriedMessageID(m.IdempotencyKey); ok {
			if v.RetryOf, err = tx.MessageByID(ctx, tenantID, of, false); err != nil && app.ErrorCode(err) != app.ENOTFOUND {
				return err
			}
		}
		if v.RetriedAs, err = tx.MessageByIdempotencyKey(ctx, tenantID, retryKey(m.ID)); err != nil && app.ErrorCode(err) != app.ENOTFOUND {
			return err
		}
		labels, err := s.actors(ctx, tx, tenantID, []*app.Message{m})
		if err != nil {
			return err
		}
		if m.TriggeredBy != nil {
			v.TriggeredBy = labels[*m.TriggeredBy]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// retryPrefix starts the idempotency key of a retry: retry:{failed message}.
// A failed message is retried at most once, so retrying twice (a double
// click, two people at once) queues one message; a retry that fails again
// is retried in its own turn, which keeps the chain readable.
const retryPrefix = "retry:"

func retryKey(failed uuid.UUID) string { return retryPrefix + failed.String() }

// RetriedMessageID returns the failed message a retry's idempotency key
// names.
func RetriedMessageID(key string) (uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(key, retryPrefix)
	if !ok {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(rest)
	return id, err == nil
}

var (
	emailPattern = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
	phonePattern = regexp.MustCompile(`\+[1-9][0-9]{6,14}`)
)

// MaskText masks the phone numbers and e-mail addresses in free text (a
// rendered body, a provider's raw receipt) for roles that see addresses
// only masked. Known addresses are also found without their leading plus,
// the form some providers report numbers in.
func MaskText(s string, known ...string) string {
	for _, k := range known {
		if k == "" || strings.HasPrefix(k, "http") {
			continue
		}
		s = strings.ReplaceAll(s, k, MaskAddress(k))
		if digits, ok := strings.CutPrefix(k, "+"); ok && len(digits) >= 7 {
			s = strings.ReplaceAll(s, digits, MaskAddress(k))
		}
	}
	s = emailPattern.ReplaceAllStringFunc(s, MaskEmail)
	return phonePattern.ReplaceAllStringFunc(s, MaskPhone)
}
