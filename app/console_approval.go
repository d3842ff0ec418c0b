package app

import (
	"context"
	"strings"

	"github.com/google/uuid"
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
	Channel Channel
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
}

// Pending returns one page of the tenant's events awaiting approval, each
// with what it would send to its first maxRecipients recipients.
func (s *Schedules) Pending(ctx context.Context, u *User, tenantID uuid.UUID, page PageRequest, maxRecipients int) ([]*ApprovalPreview, bool, error) {
	if err := RequirePermission(u, PermSchedules); err != nil {
		return nil, false, err
	}
	var out []*ApprovalPreview
	var more bool
	err := s.Store.InTenant(ctx, tenantID, func(tx Tx) error {
		rows, err := tx.EventsAwaitingApproval(ctx, tenantID, page)
		if err != nil {
			return err
		}
		rows, more = Page(rows, page)
		for _, e := range rows {
			p, err := s.preview(ctx, tx, u, e, maxRecipients)
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// Preview returns one event (in any status) with what it would send when
// approved, for its first maxRecipients recipients.
func (s *Schedules) Preview(ctx context.Context, u *User, tenantID, eventID uuid.UUID, maxRecipients int) (*ApprovalPreview, error) {
	if err := RequirePermission(u, PermSchedules); err != nil {
		return nil, err
	}
	var out *ApprovalPreview
	err := s.Store.InTenant(ctx, tenantID, func(tx Tx) error {
		e, err := tx.EventByID(ctx, tenantID, eventID, false)
		if err != nil {
			return err
		}
		rs, err := e.DecodeRecipients()
		if err != nil {
			return err
		}
		out, err = s.preview(ctx, tx, u, &ScheduledEvent{Event: *e, RecipientCount: len(rs)}, maxRecipients)
		return err
	})
	return out, err
}

// preview plans an event's messages without writing anything. An event
// awaiting approval has no messages yet (routing creates them only after
// approval), so they are rendered here with the router's own planning:
// the same channels and fallback chain, contact lookup, template over the
// locale chain, active-account and address checks, and variables.
func (s *Schedules) preview(ctx context.Context, tx Tx, u *User, se *ScheduledEvent, maxRecipients int) (*ApprovalPreview, error) {
	e := &se.Event
	p := &ApprovalPreview{Event: se}
	if e.Status == EventRouted {
		return s.stored(ctx, tx, u, p, maxRecipients)
	}
	def, err := e.Def()
	if err != nil {
		return nil, err
	}
	tenant, err := tx.TenantByID(ctx, e.TenantID)
	if err != nil {
		return nil, err
	}
	recipients, err := e.DecodeRecipients()
	if err != nil {
		return nil, err
	}
	if maxRecipients > 0 && len(recipients) > maxRecipients {
		p.Hidden = len(recipients) - maxRecipients
		recipients = recipients[:maxRecipients]
	}
	channels, chain := routeChannels(e, def)
	p.Chain = chain
	showAddresses := u.Can(PermAddresses)
	for _, rc := range recipients {
		contact, known, err := previewContact(ctx, tx, tenant.ID, rc)
		if err != nil {
			return nil, err
		}
		rp := RecipientPlan{Name: rc.Name, Known: known}
		sending, skipped := false, []string{}
		for _, ch := range channels {
			m, skip, err := s.Router.plan(ctx, tx, tenant, e, def, contact, nil, ch, nil)
			if err != nil {
				return nil, err
			}
			if skip != "" {
				rp.Messages = append(rp.Messages, PlannedMessage{Channel: ch, Role: PlanSkipped, Skip: skip})
				skipped = append(skipped, skip)
				continue
			}
			pm := PlannedMessage{Channel: ch, Role: PlanSend, To: m.ToAddress, Subject: m.Subject, Body: m.Body, HTML: ch == Email}
			if m.Locale != nil {
				pm.Locale = *m.Locale
			}
			if chain && sending {
				pm.Role = PlanFallback
			} else if dup, err := tx.MessageKeyExists(ctx, tenant.ID, m.IdempotencyKey); err != nil {
				return nil, err
			} else if dup {
				pm.Role = PlanDuplicate
			}
			sending = sending || pm.Role == PlanSend
			if !showAddresses {
				pm.To = MaskAddress(pm.To)
				pm.Subject = maskAddressesIn(pm.Subject, rc)
				pm.Body = maskAddressesIn(pm.Body, rc)
			}
			rp.Messages = append(rp.Messages, pm)
		}
		if len(skipped) == len(channels) {
			// As routing does: the most telling reason wins.
			rp.Nothing = ReasonNoTemplates
			for _, r := range skipped {
				if r == ReasonNoActiveChannels || r == ReasonNoAddress {
					rp.Nothing = r
				}
			}
		}
		p.Recipients = append(p.Recipients, rp)
	}
	return p, nil
}

// stored fills the preview of a routed event from its stored messages, one
// recipient per contact, in the order the messages were created.
func (s *Schedules) stored(ctx context.Context, tx Tx, u *User, p *ApprovalPreview, maxRecipients int) (*ApprovalPreview, error) {
	e := &p.Event.Event
	p.Stored = true
	ms, err := tx.MessagesByEvent(ctx, e.TenantID, e.ID)
	if err != nil {
		return nil, err
	}
	showAddresses := u.Can(PermAddresses)
	index := map[uuid.UUID]int{}
	// who holds each recipient's addresses, to mask them where texts quote them.
	var who []Recipient
	for _, m := range ms {
		var key uuid.UUID
		if m.ContactID != nil {
			key = *m.ContactID
		}
		i, ok := index[key]
		if !ok {
			if maxRecipients > 0 && len(p.Recipients) >= maxRecipients {
				p.Hidden++
				index[key] = -1
				continue
			}
			rp, rc := RecipientPlan{Known: true}, Recipient{}
			if m.ContactID != nil {
				c, err := tx.ContactByID(ctx, e.TenantID, *m.ContactID)
				if err != nil && ErrorCode(err) != ENOTFOUND {
					return nil, err
				} else if err == nil {
					rp.Name, rc = c.Name, c.Recipient()
				}
			}
			p.Recipients = append(p.Recipients, rp)
			who = append(who, rc)
			i = len(p.Recipients) - 1
			index[key] = i
		}
		if i < 0 {
			continue
		}
		pm := PlannedMessage{Channel: m.Channel, Role: PlanStored, Status: m.Status, To: m.ToAddress, Subject: m.Subject, Body: m.Body, HTML: m.Channel == Email}
		if m.Locale != nil {
			pm.Locale = *m.Locale
		}
		if !showAddresses {
			rc := who[i]
			if m.ToAddress == "" || m.Channel == Webhook {
				// Nothing more to mask: no address, or a tenant's endpoint.
			} else if m.Channel == Email {
				rc.Email = m.ToAddress
			} else {
				rc.Phone = m.ToAddress
			}
			pm.To = MaskAddress(pm.To)
			pm.Subject = maskAddressesIn(pm.Subject, rc)
			pm.Body = maskAddressesIn(pm.Body, rc)
		}
		p.Recipients[i].Messages = append(p.Recipients[i].Messages, pm)
	}
	return p, nil
}

// previewContact is the contact routing would use for a recipient, without
// storing anything: the stored contact with the request's newer details, or
// a new one made from the request.
func previewContact(ctx context.Context, tx Tx, tenantID uuid.UUID, rc Recipient) (*Contact, bool, error) {
	c, err := tx.FindContact(ctx, tenantID, rc.PassengerProfileID, rc.Phone, rc.Email)
	switch {
	case ErrorCode(err) == ENOTFOUND:
		c = &Contact{TenantID: tenantID}
	case err != nil:
		return nil, false, err
	}
	known := err == nil
	// Empty fields never overwrite, as in the contact update of routing.
	set := func(dst **string, v string) {
		if v != "" {
			*dst = &v
		}
	}
	if rc.Name != "" {
		c.Name = rc.Name
	}
	set(&c.Phone, rc.Phone)
	set(&c.Email, rc.Email)
	set(&c.Locale, rc.Locale)
	if c.PassengerProfileID == nil {
		set(&c.PassengerProfileID, rc.PassengerProfileID)
	}
	return c, known, nil
}

// maskAddressesIn masks the recipient's own phone number and e-mail address
// where a text quotes them ({{recipient_phone}}, {{recipient_email}}).
func maskAddressesIn(text string, rc Recipient) string {
	for _, addr := range []string{rc.Phone, rc.Email} {
		if addr != "" {
			text = strings.ReplaceAll(text, addr, MaskAddress(addr))
		}
	}
	return text
}

// SkipReasonText explains a routing skip reason to a person.
func SkipReasonText(reason string) string {
	switch reason {
	case ReasonNoTemplates:
		return "No active template for this event and channel in the recipient's locales."
	case ReasonNoActiveChannels:
		return "No active channel account for this channel."
	case ReasonNoAddress:
		return "The recipient has no address for this channel (or complained about e-mail)."
	}
	return reason
}
