package console

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// Roles a planned message plays in an approval preview.
const (
	// PlanSend: routing sends this message when the event is approved.
	PlanSend = "send"
	// PlanFallback: sent only if the channel before it in the fallback
	// chain fails permanently.
	PlanFallback = "fallback"
	// PlanSkipped: the channel cannot be used (no template, no active
	// account, no address); Skip says why.
	PlanSkipped = "skipped"
	// PlanDuplicate: the same message went out before (a once-per-entity
	// event), so routing does not send it again.
	PlanDuplicate = "duplicate"
	// PlanStored: the event was routed; this is the stored message, with
	// its Status.
	PlanStored = "stored"
)

// PlannedMessage is one message an event would send to one recipient on
// one channel, rendered as routing renders it.
type PlannedMessage struct {
	Channel app.Channel
	Role    string
	// Skip is the routing reason code when Role is PlanSkipped.
	Skip string
	// To is the address, masked for users who may not see addresses.
	To string
	// Locale is the locale of the template routing picks.
	Locale  string
	Subject string
	Body    string
	// HTML is true for e-mail bodies, which are HTML fragments.
	HTML bool
	// Status is the stored message's status (PlanStored only).
	Status string
}

// RecipientPlan is what one recipient of an event would receive.
type RecipientPlan struct {
	Name string
	// Known is true when the recipient matches a stored contact, whose
	// details (locale, complaint status) routing uses.
	Known    bool
	Messages []PlannedMessage
	// Nothing is set when no channel can be used for this recipient; routing
	// records one failed message with this reason.
	Nothing string
}

// ApprovalPreview is an event awaiting approval with what it would send.
type ApprovalPreview struct {
	Event *ScheduledEvent
	// Chain is true when the channels form a fallback chain: only the first
	// usable one is sent.
	Chain      bool
	Recipients []RecipientPlan
	// Hidden counts the recipients not previewed (only the first ones are).
	Hidden int
	// Stored is true when the event was routed: the messages shown are the
	// stored ones, not a plan.
	Stored bool
	// Estimate is what the event would cost, over all its recipients
	// (hidden ones too), by the price table and app.EstimateCost; nil for
	// a routed event or without prices.
	Estimate *app.Estimate
}

// Pending returns one page of the tenant's events awaiting approval, each
// with what it would send to its first maxRecipients recipients.
func (s *Schedules) Pending(ctx context.Context, u app.Principal, tenantID uuid.UUID, page PageRequest, maxRecipients int) ([]*ApprovalPreview, bool, error) {
	if err := app.RequirePermission(u, app.PermSchedules); err != nil {
		return nil, false, err
	}
	var out []*ApprovalPreview
	var more bool
	err := s.Store.InTenant(ctx, tenantID, func(tx ScheduleTx) error {
		rows, err := tx.EventsAwaitingApproval(ctx, tenantID, page)
		if err != nil {
			return err
		}
		rows, more = Page(rows, page)
		out, err = s.previews(ctx, newPreviewTx(tx), u, rows, maxRecipients)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// Preview returns one event (in any status) with what it would send when
// approved, for its first maxRecipients recipients.
func (s *Schedules) Preview(ctx context.Context, u app.Principal, tenantID, eventID uuid.UUID, maxRecipients int) (*ApprovalPreview, error) {
	if err := app.RequirePermission(u, app.PermSchedules); err != nil {
		return nil, err
	}
	var out *ApprovalPreview
	err := s.Store.InTenant(ctx, tenantID, func(tx ScheduleTx) error {
		e, err := tx.EventByID(ctx, tenantID, eventID, false)
		if err != nil {
			return err
		}
		rs, err := e.DecodeRecipients()
		if err != nil {
			return err
		}
		ps, err := s.previews(ctx, newPreviewTx(tx), u, []*ScheduledEvent{{Event: *e, RecipientCount: len(rs)}}, maxRecipients)
		if err != nil {
			return err
		}
		out = ps[0]
		return nil
	})
	return out, err
}

// PreviewRequests plans requests not stored yet (an upload's first rows)
// as routing would plan their events, each for its first maxRecipients
// recipients, writing nothing.
func (s *Schedules) PreviewRequests(ctx context.Context, u app.Principal, tenantID uuid.UUID, reqs []*app.NotificationRequest, maxRecipients int) ([]*ApprovalPreview, error) {
	if err := app.RequirePermission(u, app.PermSchedules); err != nil {
		return nil, err
	}
	events := make([]*ScheduledEvent, 0, len(reqs))
	for _, r := range reqs {
		e, err := app.PreviewEvent(tenantID, r, s.Now())
		if err != nil {
			return nil, err
		}
		events = append(events, &ScheduledEvent{Event: *e})
	}
	if len(events) == 0 {
		return nil, nil
	}
	var out []*ApprovalPreview
	err := s.Store.InTenant(ctx, tenantID, func(tx ScheduleTx) (err error) {
		out, err = s.previews(ctx, newPreviewTx(tx), u, events, maxRecipients)
		return err
	})
	return out, err
}

// previews plans the events' messages without writing anything, reading
// what the plans share once: the tenant, its active accounts, its templates
// per channel and locale chain, the recipients' contacts, and the
// idempotency keys of all planned messages in one query.
func (s *Schedules) previews(ctx context.Context, tx *previewTx, u app.Principal, events []*ScheduledEvent, maxRecipients int) ([]*ApprovalPreview, error) {
	out := make([]*ApprovalPreview, len(events))
	planned := make([]*plannedEvent, len(events))
	var recipients []app.Recipient
	for i, se := range events {
		p := &ApprovalPreview{Event: se}
		out[i] = p
		if se.Status == app.EventRouted {
			if err := s.stored(ctx, tx, u, p, maxRecipients); err != nil {
				return nil, err
			}
			continue
		}
		rs, err := audienceRecipients(ctx, tx.ScheduleTx, &se.Event)
		if err != nil {
			return nil, err
		}
		se.RecipientCount = len(rs)
		all := rs
		if maxRecipients > 0 && len(rs) > maxRecipients {
			p.Hidden = len(rs) - maxRecipients
			rs = rs[:maxRecipients]
		}
		planned[i] = &plannedEvent{recipients: rs, all: all}
		recipients = append(recipients, rs...)
	}
	if len(recipients) == 0 {
		return out, nil
	}
	tenantID := events[0].TenantID
	if err := tx.loadContacts(ctx, tenantID, recipients); err != nil {
		return nil, err
	}
	var keys []string
	for i, pe := range planned {
		if pe == nil {
			continue
		}
		if err := s.plan(ctx, tx, out[i], pe); err != nil {
			return nil, err
		}
		for _, rk := range pe.keys {
			for _, k := range rk {
				if k != "" {
					keys = append(keys, k)
				}
			}
		}
	}
	existing, err := tx.ExistingMessageKeys(ctx, tenantID, keys)
	if err != nil {
		return nil, err
	}
	sent := make(map[string]bool, len(existing))
	for _, k := range existing {
		sent[k] = true
	}
	showAddresses := u.Can(app.PermAddresses)
	for i, pe := range planned {
		if pe == nil {
			continue
		}
		p := out[i]
		for r := range p.Recipients {
			rp := &p.Recipients[r]
			sending := false
			for j := range rp.Messages {
				pm := &rp.Messages[j]
				if pm.Role == PlanSkipped {
					continue
				}
				switch {
				case p.Chain && sending:
					pm.Role = PlanFallback
				case sent[pe.keys[r][j]]:
					pm.Role = PlanDuplicate
				default:
					pm.Role = PlanSend
				}
				sending = sending || pm.Role == PlanSend
				if !showAddresses {
					known := pe.recipients[r]
					pm.To = MaskAddress(pm.To)
					pm.Subject = MaskText(pm.Subject, known.Phone, known.Email)
					pm.Body = MaskText(pm.Body, known.Phone, known.Email)
				}
			}
		}
	}
	return out, nil
}

// audienceRecipients returns the recipients an event not routed yet
// would go to: its own, or its trip audience's current passengers (as
// routing expands them).
func audienceRecipients(ctx context.Context, tx ScheduleTx, e *app.Event) ([]app.Recipient, error) {
	if trip := e.TripAudience(); trip != "" {
		ps, err := tx.TripPassengers(ctx, e.TenantID, trip)
		if err != nil {
			return nil, err
		}
		return app.AudienceRecipients(ps), nil
	}
	return e.DecodeRecipients()
}

// plannedEvent is an event being previewed: its recipients and the
// idempotency key of each planned message (per recipient, per channel; ""
// where the channel is skipped).
type plannedEvent struct {
	recipients []app.Recipient
	keys       [][]string
	// all are every recipient, previewed or hidden, which the estimate
	// counts.
	all []app.Recipient
}

// plan renders an event awaiting approval as routing would: the same
// channels and fallback chain, contact lookup, template over the locale
// chain, active-account and address checks, and variables. An event
// awaiting approval has no messages yet (routing creates them only after
// approval). Roles beyond skipped are settled by previews, once the
// idempotency keys are checked.
func (s *Schedules) plan(ctx context.Context, tx *previewTx, p *ApprovalPreview, pe *plannedEvent) error {
	e := &p.Event.Event
	def, err := e.Def(ctx, tx)
	if err != nil {
		return err
	}
	tenant, err := tx.TenantByID(ctx, e.TenantID)
	if err != nil {
		return err
	}
	channels, chain := app.RouteChannels(e, def)
	p.Chain = chain
	prices, err := s.priceTable(ctx, tx)
	if err != nil {
		return err
	}
	if prices != nil {
		p.Estimate = &app.Estimate{Currency: prices.Currency}
	}
	for i, rc := range pe.all {
		contact, known := tx.previewContact(tenant.ID, rc)
		if i >= len(pe.recipients) {
			// A hidden recipient counts in the estimate only.
			if err := s.estimate(ctx, tx, p, prices, tenant, e, def, app.Addressee{Contact: contact, Recipient: rc, Index: i}, channels); err != nil {
				return err
			}
			continue
		}
		rp := RecipientPlan{Name: rc.Name, Known: known}
		keys := make([]string, 0, len(channels))
		skipped := []string{}
		counted := false
		for _, ch := range channels {
			m, skip, err := s.Router.Plan(ctx, tx, tenant, e, def, app.Addressee{Contact: contact, Recipient: rc, Index: i}, nil, ch, nil)
			if err != nil {
				return err
			}
			if skip == "" && p.Estimate != nil && (!chain || !counted) {
				// A fallback chain sends its first usable channel.
				counted = true
				estimateMessage(p.Estimate, prices, m)
			}
			if skip != "" {
				rp.Messages = append(rp.Messages, PlannedMessage{Channel: ch, Role: PlanSkipped, Skip: skip})
				keys = append(keys, "")
				skipped = append(skipped, skip)
				continue
			}
			pm := PlannedMessage{Channel: ch, Role: PlanSend, To: m.ToAddress, Subject: m.Subject, Body: m.Body, HTML: ch == app.Email}
			if m.Locale != nil {
				pm.Locale = *m.Locale
			}
			rp.Messages = append(rp.Messages, pm)
			keys = append(keys, m.IdempotencyKey)
		}
		if len(skipped) == len(channels) {
			// As routing does: the most telling reason wins.
			rp.Nothing = app.MostTellingSkip(skipped)
		}
		p.Recipients = append(p.Recipients, rp)
		pe.keys = append(pe.keys, keys)
	}
	return nil
}

// priceTable reads the price table for an estimate; nil without prices.
func (s *Schedules) priceTable(ctx context.Context, tx *previewTx) (*app.PriceTable, error) {
	if s.Prices == nil {
		return nil, nil
	}
	return s.Prices.Table(ctx, tx)
}

// estimate adds what routing would send one hidden recipient to the
// preview's estimate: every usable channel, or a chain's first.
func (s *Schedules) estimate(ctx context.Context, tx *previewTx, p *ApprovalPreview, prices *app.PriceTable, tenant *app.Tenant, e *app.Event,
	def *app.EventDef, to app.Addressee, channels []app.Channel) error {
	if p.Estimate == nil {
		return nil
	}
	for _, ch := range channels {
		m, skip, err := s.Router.Plan(ctx, tx, tenant, e, def, to, nil, ch, nil)
		if err != nil {
			return err
		}
		if skip != "" {
			continue
		}
		estimateMessage(p.Estimate, prices, m)
		if p.Chain {
			return nil
		}
	}
	return nil
}

// estimateMessage counts a planned message in an estimate, its SMS parts
// counted as routing counts them when it stores the message.
func estimateMessage(est *app.Estimate, prices *app.PriceTable, m *app.Message) {
	if m.Channel == app.SMS {
		_, c := app.PrepareSMS(m.Body)
		m.SMSParts = &c.Parts
	}
	est.Add(prices, m)
}

// storedMessagesPerRecipient bounds the stored messages read per recipient
// previewed (its channels, fallbacks and retries).
const storedMessagesPerRecipient = 20

// stored fills the preview of a routed event from its stored messages, one
// recipient per contact, in the order the messages were created.
func (s *Schedules) stored(ctx context.Context, tx ScheduleTx, u app.Principal, p *ApprovalPreview, maxRecipients int) error {
	e := &p.Event.Event
	p.Stored = true
	if maxRecipients <= 0 || maxRecipients > app.MaxRecipients {
		maxRecipients = app.MaxRecipients
	}
	ms, total, err := tx.EventMessagesByContact(ctx, e.TenantID, e.ID, maxRecipients, maxRecipients*storedMessagesPerRecipient)
	if err != nil {
		return err
	}
	var ids []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, m := range ms {
		if m.ContactID != nil && !seen[*m.ContactID] {
			seen[*m.ContactID] = true
			ids = append(ids, *m.ContactID)
		}
	}
	cs, err := tx.ContactsByIDs(ctx, e.TenantID, ids)
	if err != nil {
		return err
	}
	contacts := make(map[uuid.UUID]*app.Contact, len(cs))
	for _, c := range cs {
		contacts[c.ID] = c
	}
	showAddresses := u.Can(app.PermAddresses)
	index := map[uuid.UUID]int{}
	// who holds each recipient's addresses, to mask them where texts quote them.
	var who []app.Recipient
	for _, m := range ms {
		var key uuid.UUID
		if m.ContactID != nil {
			key = *m.ContactID
		}
		i, ok := index[key]
		if !ok {
			rp, rc := RecipientPlan{Known: true}, app.Recipient{}
			if c := contacts[key]; m.ContactID != nil && c != nil {
				rp.Name, rc = c.Name, c.Recipient()
			}
			p.Recipients = append(p.Recipients, rp)
			who = append(who, rc)
			i = len(p.Recipients) - 1
			index[key] = i
		}
		pm := PlannedMessage{Channel: m.Channel, Role: PlanStored, Status: m.Status, To: m.ToAddress, Subject: m.Subject, Body: m.Body, HTML: m.Channel == app.Email}
		if m.Locale != nil {
			pm.Locale = *m.Locale
		}
		if !showAddresses {
			rc := who[i]
			pm.To = MaskAddress(pm.To)
			pm.Subject = MaskText(pm.Subject, rc.Phone, rc.Email, m.ToAddress)
			pm.Body = MaskText(pm.Body, rc.Phone, rc.Email, m.ToAddress)
		}
		p.Recipients[i].Messages = append(p.Recipients[i].Messages, pm)
	}
	p.Hidden = max(total-len(p.Recipients), 0)
	return nil
}

// previewTx reads, for the previews of one request, what many plans share
// only once: the tenant, the active account per channel, the template per
// event, channel and locale chain, and the recipients' contacts (loaded in
// one query by loadContacts). Everything else goes to the transaction.
type previewTx struct {
	ScheduleTx
	tenants   map[uuid.UUID]*app.Tenant
	accounts  map[app.Channel]cached[*app.ChannelAccount]
	templates map[string]cached[*app.Template]
	// candidates are the contacts loadContacts read.
	candidates []*app.Contact
}

type cached[T any] struct {
	v   T
	err error
}

func newPreviewTx(tx ScheduleTx) *previewTx {
	return &previewTx{
		ScheduleTx: tx, tenants: map[uuid.UUID]*app.Tenant{}, accounts: map[app.Channel]cached[*app.ChannelAccount]{},
		templates: map[string]cached[*app.Template]{},
	}
}

// TenantByID reads each tenant once.
func (t *previewTx) TenantByID(ctx context.Context, id uuid.UUID) (*app.Tenant, error) {
	if tn, ok := t.tenants[id]; ok {
		return tn, nil
	}
	tn, err := t.ScheduleTx.TenantByID(ctx, id)
	if err == nil {
		t.tenants[id] = tn
	}
	return tn, err
}

// ActiveAccount reads each channel's active account (or its absence) once;
// previews are of one tenant.
func (t *previewTx) ActiveAccount(ctx context.Context, tenantID uuid.UUID, ch app.Channel) (*app.ChannelAccount, error) {
	if c, ok := t.accounts[ch]; ok {
		return c.v, c.err
	}
	a, err := t.ScheduleTx.ActiveAccount(ctx, tenantID, ch)
	if err != nil && app.ErrorCode(err) != app.ENOTFOUND {
		return nil, err
	}
	t.accounts[ch] = cached[*app.ChannelAccount]{a, err}
	return a, err
}

// FindTemplate reads each event, channel and locale chain's template (or
// its absence) once.
func (t *previewTx) FindTemplate(ctx context.Context, tenantID uuid.UUID, event string, ch app.Channel, locales []string) (*app.Template, error) {
	key := event + "\x00" + string(ch) + "\x00" + strings.Join(locales, "\x00")
	if c, ok := t.templates[key]; ok {
		return c.v, c.err
	}
	tp, err := t.ScheduleTx.FindTemplate(ctx, tenantID, event, ch, locales)
	if err != nil && app.ErrorCode(err) != app.ENOTFOUND {
		return nil, err
	}
	t.templates[key] = cached[*app.Template]{tp, err}
	return tp, err
}

// loadContacts reads in one query every contact the recipients could be
// (those sharing an identifier with one of them).
func (t *previewTx) loadContacts(ctx context.Context, tenantID uuid.UUID, rs []app.Recipient) error {
	var profiles, phones, emails []string
	for _, rc := range rs {
		if rc.PassengerProfileID != "" {
			profiles = append(profiles, rc.PassengerProfileID)
		}
		if rc.Phone != "" {
			phones = append(phones, rc.Phone)
		}
		if rc.Email != "" {
			emails = append(emails, rc.Email)
		}
	}
	cs, err := t.ScheduleTx.ContactCandidates(ctx, tenantID, profiles, phones, emails)
	if err != nil {
		return err
	}
	t.candidates = cs
	return nil
}

// previewContact is the contact routing would use for a recipient, without
// storing anything: the stored contact app.MatchContact picks among the
// candidates, or a new one made from the request (known false). Addresses,
// name, locale and context come from the recipient either way; the
// contact's opt-outs and complaints count.
func (t *previewTx) previewContact(tenantID uuid.UUID, rc app.Recipient) (*app.Contact, bool) {
	if c := app.MatchContact(t.candidates, rc); c != nil {
		cp := *c
		return &cp, true
	}
	return app.NewContact(tenantID, rc, time.Time{}), false
}

// SkipReasonText explains a routing skip reason to a person.
func SkipReasonText(reason string) string {
	switch reason {
	case app.ReasonNoTemplates:
		return "No active template for this event and channel in the recipient's locales."
	case app.ReasonNoActiveChannels:
		return "No active channel account for this channel."
	case app.ReasonNoAddress:
		return "The recipient has no address for this channel (or complained about e-mail)."
	case app.ReasonOptedOut:
		return "The contact opted out of this channel."
	}
	return reason
}
