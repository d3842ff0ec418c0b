package app

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
)

// RouteDecision is what routing decided for one recipient of an event on
// one channel: a message through an account with a template, or why the
// channel was skipped. An event keeps its decisions (Event.Routing), so
// that its console page answers "why was nothing sent?" without the log.
type RouteDecision struct {
	// Recipient is the recipient's index in the event's recipients.
	Recipient int     `json:"recipient"`
	Channel   Channel `json:"channel"`
	// Outcome is DecisionQueued, DecisionExists or DecisionSkipped.
	Outcome string `json:"outcome"`
	// Reason says why a channel was skipped (Reason* of message.go, or any
	// reason a newer router gives: the page shows unknown ones readably).
	Reason string `json:"reason,omitempty"`
	// Template is the template chosen, or for a channel without one, the
	// locales that were tried.
	Template *TemplateChoice `json:"template,omitempty"`
	// AccountID and AccountName are the channel account the message goes
	// through.
	AccountID   *uuid.UUID `json:"account_id,omitempty"`
	AccountName string     `json:"account_name,omitempty"`
	Provider    string     `json:"provider,omitempty"`
	MessageID   *uuid.UUID `json:"message_id,omitempty"`
	// FallbackOf is the failed message whose fallback chain this decision
	// continued; nil for the event's own routing.
	FallbackOf *uuid.UUID `json:"fallback_of,omitempty"`
	At         time.Time  `json:"at"`
}

// Route decision outcomes.
const (
	// DecisionQueued: a message was stored and queued.
	DecisionQueued = "queued"
	// DecisionExists: the message exists already (a once-per-entity event
	// seen again), so none was made.
	DecisionExists = "exists"
	// DecisionSkipped: the channel was not used; Reason says why.
	DecisionSkipped = "skipped"
)

// TemplateChoice is the template routing chose for a channel, with the
// locale fallback path it tried (de-AT -> de -> en): every locale up to the
// chosen one, or all of them when none had a template.
type TemplateChoice struct {
	ID      *uuid.UUID `json:"id,omitempty"`
	Name    string     `json:"name,omitempty"`
	Locale  string     `json:"locale,omitempty"`
	Version int        `json:"version,omitempty"`
	Tried   []string   `json:"tried,omitempty"`
}

// TemplateName names a template as people do: event/channel/locale.
func TemplateName(event string, ch Channel, locale string) string {
	return event + "/" + string(ch) + "/" + locale
}

// Routing collects an event's route decisions while its route transaction
// runs; the UPDATE that marks the event routed stores them, so recording
// costs no statement of its own. A nil *Routing records nothing.
type Routing struct {
	Decisions []RouteDecision
	now       time.Time
}

// NewRouting starts an event's decisions at time now.
func NewRouting(now time.Time) *Routing { return &Routing{Decisions: []RouteDecision{}, now: now} }

// Skip records that recipient's channel was not used, and why. Every place
// routing gives up on a channel calls it with its reason.
func (r *Routing) Skip(recipient int, ch Channel, reason string) *RouteDecision {
	return r.add(RouteDecision{Recipient: recipient, Channel: ch, Outcome: DecisionSkipped, Reason: reason})
}

// Queued records the message stored for recipient's channel (Outcome
// DecisionExists when it existed already).
func (r *Routing) Queued(recipient int, m *Message, acct *ChannelAccount, inserted bool) *RouteDecision {
	d := RouteDecision{Recipient: recipient, Channel: m.Channel, Outcome: DecisionQueued, MessageID: &m.ID}
	if !inserted {
		d.Outcome, d.MessageID = DecisionExists, nil
	}
	if acct != nil {
		d.AccountID, d.AccountName, d.Provider = &acct.ID, acct.Name, acct.Provider
	}
	if m.Locale != nil {
		d.Template = &TemplateChoice{ID: m.TemplateID, Locale: *m.Locale, Name: TemplateName(m.TriggerEvent, m.Channel, *m.Locale)}
		if m.TemplateVersion != nil {
			d.Template.Version = *m.TemplateVersion
		}
		if m.TemplateID == nil {
			// The WEBHOOK channel without a template of the tenant's sends
			// the event itself.
			d.Template.Name = "the event as JSON (no template)"
		}
	}
	return r.add(d)
}

// Existed turns decision i, a message recorded as queued before its insert,
// into DecisionExists: its idempotency key was stored already.
func (r *Routing) Existed(i int) {
	r.Decisions[i].Outcome, r.Decisions[i].MessageID = DecisionExists, nil
}

func (r *Routing) add(d RouteDecision) *RouteDecision {
	if r == nil {
		return &d
	}
	d.At = r.now
	r.Decisions = append(r.Decisions, d)
	return &r.Decisions[len(r.Decisions)-1]
}

// Tried sets the locales routing tried for d's template: chain up to the
// chosen locale, or all of it when no template was found. Decisions that
// did not look a template up (a skip for another reason, the WEBHOOK
// channel's event JSON) keep none.
func (d *RouteDecision) Tried(chain []string) {
	looked := (d.Outcome == DecisionSkipped && d.Reason == ReasonNoTemplates) || (d.Template != nil && d.Template.ID != nil)
	if len(chain) == 0 || !looked {
		return
	}
	if d.Template == nil {
		d.Template = &TemplateChoice{}
	}
	tried := chain
	for i, l := range chain {
		if l == d.Template.Locale {
			tried = chain[:i+1]
			break
		}
	}
	d.Template.Tried = append([]string(nil), tried...)
}

// JSON is the decisions as an event stores them; nil when there are none.
func (r *Routing) JSON() JSON {
	if r == nil || len(r.Decisions) == 0 {
		return nil
	}
	b, _ := json.Marshal(r.Decisions)
	return b
}

// RouteDecisions returns the decisions an event stored, in the order they
// were made; none for an event routed before decisions were kept.
func (e *Event) RouteDecisions() []RouteDecision {
	var ds []RouteDecision
	if len(e.Routing) > 0 {
		_ = json.Unmarshal(e.Routing, &ds)
	}
	return ds
}

// reasonTexts say what each skip reason means to the people who read an
// event's page.
var reasonTexts = map[string]string{
	ReasonNoTemplates:      "no active template for this event, channel and locale",
	ReasonNoActiveChannels: "no active channel account for this channel",
	ReasonNoAddress:        "the recipient has no address on this channel",
	ReasonOptedOut:         "the recipient opted out of this channel",
	ReasonChannelSuspended: "the channel account is suspended",
	ReasonQuotaExceeded:    "the tenant's monthly quota for this channel is used up",
	ReasonBudgetExceeded:   "the tenant's monthly budget for this channel is used up",
	ReasonSMSCountry:       "the tenant does not send SMS to this number's country",
	ReasonSMSInternational: "the tenant's daily cap of SMS abroad is used up",
	ReasonSMSRecipient:     "this number got the tenant's daily cap of SMS per number",
}

// ReasonText says what a skip reason means. A reason it does not know (a
// newer router's) is shown as words: "quiet_hours" reads "quiet hours".
func ReasonText(reason string) string {
	if t, ok := reasonTexts[reason]; ok {
		return t
	}
	t := strings.TrimSpace(strings.NewReplacer("_", " ", "-", " ", ":", ": ").Replace(reason))
	if t == "" {
		return "no reason given"
	}
	return t
}
