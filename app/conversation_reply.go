package app

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// ReplyTrigger is the trigger event of a message staff wrote to a
// passenger from the inbox or the booking panel.
const ReplyTrigger = "STAFF_REPLY"

// MaxReplyLength bounds a free-text reply: WhatsApp's text limit, and ten
// SMS parts.
const MaxReplyLength = 4096

// replyThreadLimit is how many messages of each side a conversation page
// shows.
const replyThreadLimit = 50

// ConversationDetail is one conversation with its thread and how staff can
// answer it.
type ConversationDetail struct {
	Conversation *Conversation `json:"conversation"`
	Contact      *Contact      `json:"-"`
	// Messages are Herald's messages in the conversation, newest first;
	// Inbound the passenger's, newest first.
	Messages []*Message        `json:"messages"`
	Inbound  []*InboundMessage `json:"inbound"`
	Options  []ReplyChannel    `json:"reply_options"`
	// Users are whom the conversation may be assigned to.
	Users []*User `json:"-"`
}

// ThreadEntry is one message of a conversation's thread: the passenger's
// (In) or Herald's (Out).
type ThreadEntry struct {
	At  time.Time
	In  *InboundMessage
	Out *Message
}

// Thread is the conversation's messages both ways, oldest first.
func (d *ConversationDetail) Thread() []ThreadEntry {
	out := make([]ThreadEntry, 0, len(d.Messages)+len(d.Inbound))
	for _, m := range d.Messages {
		out = append(out, ThreadEntry{At: m.CreatedAt, Out: m})
	}
	for _, r := range d.Inbound {
		out = append(out, ThreadEntry{At: r.ReceivedAt, In: r})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// ReplyChannel is how staff can answer on one channel now: free text, a
// chosen approved template, or not at all, and why.
type ReplyChannel struct {
	Channel Channel `json:"channel"`
	// FreeText: a written answer goes out as it is.
	FreeText bool `json:"free_text"`
	// WindowClosesAt is, on WhatsApp, when the passenger's 24-hour window
	// closes (or closed).
	WindowClosesAt *time.Time `json:"window_closes_at,omitempty"`
	// Why says, in words, why the channel takes what it takes.
	Why string `json:"why"`
	// Unavailable says why no answer can go on this channel; empty when
	// one can.
	Unavailable string          `json:"unavailable,omitempty"`
	Templates   []ReplyTemplate `json:"templates,omitempty"`
	account     *ChannelAccount
	to          string
}

// ReplyTemplate is a WhatsApp template an answer outside the window may
// take, and whether it can now.
type ReplyTemplate struct {
	ID           uuid.UUID `json:"id"`
	TriggerEvent string    `json:"trigger_event"`
	Locale       string    `json:"locale"`
	MetaName     string    `json:"meta_template"`
	Usable       bool      `json:"usable"`
	Why          string    `json:"why,omitempty"`
	event        *Event
	template     *Template
}

// ReplyInput is an answer to a conversation: free text (Body) or, on
// WhatsApp outside the window, an approved template (TemplateID). Key
// makes it idempotent: the same key sends once.
type ReplyInput struct {
	Channel    string     `json:"channel"`
	Body       string     `json:"body"`
	TemplateID *uuid.UUID `json:"template_id"`
	Key        string     `json:"idempotency_key"`
}

// Get returns a conversation with its thread and reply options.
func (s *Inbox) Get(ctx context.Context, p Principal, tenantID, id uuid.UUID) (*ConversationDetail, error) {
	if err := RequirePermission(p, PermMessages); err != nil {
		return nil, err
	}
	var d ConversationDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx InboxTx) (err error) {
		if d.Conversation, err = tx.ConversationByID(ctx, tenantID, id, false); err != nil {
			return err
		}
		if d.Contact, err = tx.ContactByID(ctx, tenantID, d.Conversation.ContactID); err != nil {
			return err
		}
		if d.Messages, err = tx.ConversationMessages(ctx, tenantID, id, replyThreadLimit); err != nil {
			return err
		}
		if d.Inbound, err = tx.ConversationReplies(ctx, tenantID, []uuid.UUID{id}, replyThreadLimit); err != nil {
			return err
		}
		if d.Users, err = tx.AssignableUsers(ctx, tenantID); err != nil {
			return err
		}
		d.Options, err = s.replyOptions(ctx, tx, d.Conversation, d.Contact, d.Inbound)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// replyOptions says how an answer can go on WhatsApp and on SMS now.
func (s *Inbox) replyOptions(ctx context.Context, tx InboxTx, c *Conversation, contact *Contact, inbound []*InboundMessage) ([]ReplyChannel, error) {
	var out []ReplyChannel
	for _, ch := range []Channel{WhatsApp, SMS} {
		o := ReplyChannel{Channel: ch, to: replyAddress(ch, contact, inbound)}
		acct, err := tx.ActiveAccount(ctx, c.TenantID, ch)
		switch {
		case ErrorCode(err) == ENOTFOUND:
			o.Unavailable = fmt.Sprintf("The tenant has no active %s account.", channelWord(ch))
		case err != nil:
			return nil, err
		case o.to == "":
			o.Unavailable = "The passenger has no phone number Herald knows."
		case contact.OptedOutOf(ch):
			o.Unavailable = fmt.Sprintf("The passenger opted out of %s (STOP); they must send START before anyone writes to them there.", channelWord(ch))
		case ch == SMS && acct.Provider == "sns" && acct.Config["origination_number"] == "":
			o.Unavailable = "The SMS account has no phone number of its own, so it cannot hold a two-way conversation."
		default:
			o.account = acct
			if ch == SMS {
				o.FreeText, o.Why = true, "SMS takes free text at any time."
			} else if err := s.whatsAppOption(ctx, tx, c, contact, &o); err != nil {
				return nil, err
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// whatsAppOption fills in WhatsApp's rule: free text inside the 24-hour
// window the passenger's last message opened on this number, an approved
// template outside it.
func (s *Inbox) whatsAppOption(ctx context.Context, tx InboxTx, c *Conversation, contact *Contact, o *ReplyChannel) error {
	last, err := tx.LastWhatsAppInbound(ctx, c.TenantID, o.account.ID, &contact.ID, o.to)
	if err != nil {
		return err
	}
	now := s.Now()
	if last != nil {
		closes := last.Add(WhatsAppWindow)
		o.WindowClosesAt = &closes
		if now.Before(closes) {
			o.FreeText = true
			o.Why = fmt.Sprintf("The passenger wrote on WhatsApp less than 24 hours ago: free text until %s UTC.", closes.UTC().Format("2 Jan 15:04"))
			return nil
		}
	}
	o.Why = "The passenger has not written on WhatsApp in the last 24 hours, so WhatsApp delivers only a template Meta approved."
	o.Templates, err = s.replyTemplates(ctx, tx, c, o.account)
	return err
}

// replyTemplates are the tenant's active WhatsApp templates, each usable
// when it names a Meta template approved for the account and the
// conversation's booking has a notification of its event to fill it from.
func (s *Inbox) replyTemplates(ctx context.Context, tx InboxTx, c *Conversation, acct *ChannelAccount) ([]ReplyTemplate, error) {
	ts, err := tx.WhatsAppTemplates(ctx, c.TenantID)
	if err != nil {
		return nil, err
	}
	events := map[string]*Event{}
	var out []ReplyTemplate
	for _, t := range ts {
		spec, err := t.Spec()
		if err != nil || spec == nil || !t.IsActive {
			continue
		}
		rt := ReplyTemplate{ID: t.ID, TriggerEvent: t.TriggerEvent, Locale: t.Locale, MetaName: spec.Name, template: t}
		e, seen := events[t.TriggerEvent]
		if ent := c.Entity(); ent != nil && !seen {
			e, err = tx.LatestEventForEntity(ctx, c.TenantID, ent.Type, ent.ID, t.TriggerEvent)
			if err != nil && ErrorCode(err) != ENOTFOUND {
				return nil, err
			}
			events[t.TriggerEvent] = e
		}
		rt.event = e
		if rt.Why, err = templateUnusable(ctx, tx, acct, spec, e); err != nil {
			return nil, err
		}
		rt.Usable = rt.Why == ""
		out = append(out, rt)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Usable && !out[j].Usable })
	return out, nil
}

// templateUnusable says why a template cannot answer now, or "".
func templateUnusable(ctx context.Context, tx InboxTx, acct *ChannelAccount, spec *WhatsAppTemplateSpec, e *Event) (string, error) {
	if e == nil {
		return "This conversation's booking had no notification of this event to fill the template from.", nil
	}
	if acct.Provider != "meta" {
		return "", nil
	}
	mt, err := tx.MetaTemplate(ctx, acct.TenantID, acct.ID, spec.Name, spec.Language)
	switch {
	case ErrorCode(err) == ENOTFOUND:
		return fmt.Sprintf("Meta template %s (%s) does not exist for this number.", spec.Name, spec.Language), nil
	case err != nil:
		return "", err
	case !mt.Approved():
		return fmt.Sprintf("Meta template %s (%s) is %s.", spec.Name, spec.Language, strings.ToLower(mt.Status)), nil
	}
	return "", nil
}

// replyAddress is where an answer on ch goes: the number the passenger
// last wrote from on that channel, else the contact's phone.
func replyAddress(ch Channel, c *Contact, inbound []*InboundMessage) string {
	for _, r := range inbound {
		if r.Channel == ch {
			return r.From
		}
	}
	return deref(c.Phone)
}

func channelWord(ch Channel) string {
	if ch == WhatsApp {
		return "WhatsApp"
	}
	return string(ch)
}

// replyKey is the idempotency key of an answer: one message per
// conversation and key, however often it is submitted.
func replyKey(conversationID uuid.UUID, key string) string {
	return "reply:" + conversationID.String() + ":" + key
}

// Reply answers a conversation as a new message through the usual path:
// planned (a template answer through routing's plan, free text as written),
// inserted with its first timeline entry and its dispatch job, triggered by
// the principal, audited, and the conversation marked answered, all in one
// transaction. The same Key sends once: a second submit returns the first
// answer. Free text goes on WhatsApp only inside the passenger's 24-hour
// window; outside it, the answer must name a usable template.
func (s *Inbox) Reply(ctx context.Context, p Principal, tenantID, id uuid.UUID, in ReplyInput) (*Message, error) {
	if err := RequirePermission(p, PermReply); err != nil {
		return nil, err
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	var sent *Message
	err := s.Store.InTenant(ctx, tenantID, func(tx InboxTx) error {
		c, err := tx.ConversationByID(ctx, tenantID, id, true)
		if err != nil {
			return err
		}
		if prior, err := tx.MessageByIdempotencyKey(ctx, tenantID, replyKey(c.ID, in.Key)); err == nil {
			sent = prior
			return nil
		} else if ErrorCode(err) != ENOTFOUND {
			return err
		}
		m, err := s.planReply(ctx, tx, c, in)
		if err != nil {
			return err
		}
		sent, err = s.storeReply(ctx, tx, p.Actor(), c, m, in)
		return err
	})
	return sent, err
}

// validate checks an answer's shape before anything is read.
func (in *ReplyInput) validate() error {
	in.Body = strings.TrimSpace(in.Body)
	in.Key = strings.TrimSpace(in.Key)
	switch {
	case in.Key == "" || len(in.Key) > 100:
		return Invalid("invalid_idempotency_key", "idempotency_key", "Give the answer an idempotency key of 1 to 100 characters.")
	case in.TemplateID == nil && in.Body == "":
		return Invalid("missing_body", "body", "Write an answer, or choose a template.")
	case in.TemplateID != nil && in.Body != "":
		return Invalid("body_with_template", "body", "An answer is either written text or a template, not both.")
	case utf8.RuneCountInString(in.Body) > MaxReplyLength:
		return Invalid("body_too_long", "body", "An answer is at most %d characters.", MaxReplyLength)
	}
	return nil
}

// planReply builds the answer's message on the chosen channel (the
// channel the passenger last wrote on, when none is chosen).
func (s *Inbox) planReply(ctx context.Context, tx InboxTx, c *Conversation, in ReplyInput) (*Message, error) {
	contact, err := tx.ContactByID(ctx, c.TenantID, c.ContactID)
	if err != nil {
		return nil, err
	}
	inbound, err := tx.ConversationReplies(ctx, c.TenantID, []uuid.UUID{c.ID}, replyThreadLimit)
	if err != nil {
		return nil, err
	}
	ch := WhatsApp
	if len(inbound) > 0 && inbound[0].Channel == SMS {
		ch = SMS
	}
	if in.Channel != "" {
		var ok bool
		if ch, ok = ParseChannel(in.Channel); !ok || (ch != WhatsApp && ch != SMS) {
			return nil, Invalid("unknown_channel", "channel", "Answer on WHATSAPP or SMS.")
		}
	}
	opts, err := s.replyOptions(ctx, tx, c, contact, inbound)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(opts, func(o ReplyChannel) bool { return o.Channel == ch })
	o := opts[i]
	if o.Unavailable != "" {
		return nil, &Error{Code: ECONFLICT, Reason: "channel_unavailable", Field: "channel", Message: o.Unavailable}
	}
	if in.TemplateID != nil {
		return s.planTemplateReply(ctx, tx, c, contact, o, *in.TemplateID)
	}
	if !o.FreeText {
		return nil, &Error{Code: ECONFLICT, Reason: "whatsapp_window_closed", Field: "template_id", Message: o.Why + " Choose an approved template."}
	}
	now := s.Now()
	ent := c.Entity()
	m := &Message{
		ID: NewID(), TenantID: c.TenantID, CorrelationID: "conversation:" + c.ID.String(), TriggerEvent: ReplyTrigger,
		Channel: ch, ChannelAccountID: &o.account.ID, ContactID: &contact.ID, ConversationID: &c.ID,
		ToAddress: o.to, Body: in.Body, Status: MessageQueued, Provider: &o.account.Provider, FallbackChain: StringList{},
		QueuedAt: now, CreatedAt: now, UpdatedAt: now,
	}
	if ent != nil {
		m.EntityType, m.EntityID = &ent.Type, &ent.ID
	}
	return m, nil
}

// planTemplateReply plans the chosen template through routing's plan, from
// the booking's latest notification of its event, to the address the
// passenger wrote from.
func (s *Inbox) planTemplateReply(ctx context.Context, tx InboxTx, c *Conversation, contact *Contact, o ReplyChannel, templateID uuid.UUID) (*Message, error) {
	i := slices.IndexFunc(o.Templates, func(t ReplyTemplate) bool { return t.ID == templateID })
	if i < 0 {
		return nil, Invalid("unknown_template", "template_id", "Choose one of the WhatsApp templates the page offers.")
	}
	rt := o.Templates[i]
	if !rt.Usable {
		return nil, &Error{Code: ECONFLICT, Reason: "template_unusable", Field: "template_id", Message: rt.Why}
	}
	tenant, err := tx.TenantByID(ctx, c.TenantID)
	if err != nil {
		return nil, err
	}
	def, err := rt.event.Def(ctx, tx)
	if err != nil {
		return nil, err
	}
	to := Addressee{Contact: contact, Recipient: contact.Recipient().WithAddress(o.Channel, o.to), Index: -1}
	if recipients, err := rt.event.DecodeRecipients(); err == nil {
		for j, rc := range recipients {
			if rc.Phone == o.to || (contact.PassengerProfileID != nil && rc.PassengerProfileID == *contact.PassengerProfileID) {
				to.Recipient, to.Index = rc.WithAddress(o.Channel, o.to), j
				break
			}
		}
	}
	m, skip, err := s.Router.Plan(ctx, tx, tenant, rt.event, def, to, &c.ID, o.Channel, rt.template)
	if err != nil {
		return nil, err
	}
	if skip != "" {
		return nil, Errorf(ECONFLICT, "Cannot answer with this template: %s.", strings.ReplaceAll(skip, "_", " "))
	}
	return m, nil
}

// storeReply stores the planned answer with its job, marks the
// conversation answered and audits it.
func (s *Inbox) storeReply(ctx context.Context, tx InboxTx, actor Actor, c *Conversation, m *Message, in ReplyInput) (*Message, error) {
	m.IdempotencyKey = replyKey(c.ID, in.Key)
	m.TriggeredBy = actor.ID
	// A person wrote it now: no expiry holds it back.
	m.ExpiresAt = nil
	source := SourceAPI
	if actor.Type == ActorUser {
		source = SourceConsole
	}
	inserted, err := s.Router.Insert(ctx, tx, m, source, map[string]any{"reply_to": c.ID.String(), "by": actor.Label})
	if err != nil {
		return nil, err
	}
	if !inserted {
		return tx.MessageByIdempotencyKey(ctx, c.TenantID, m.IdempotencyKey)
	}
	now := s.Now()
	if err := tx.MarkConversationReplied(ctx, c.TenantID, c.ID, now); err != nil {
		return nil, err
	}
	meta := map[string]any{"message_id": m.ID.String(), "channel": m.Channel, "template": m.TemplateID != nil}
	if err := tx.InsertAudit(ctx, actor.Entry(&c.TenantID, "conversation.reply", "conversation", c.ID.String(), meta)); err != nil {
		return nil, err
	}
	return m, s.Queue.EnqueueDispatch(ctx, tx, m.DispatchJob())
}
