package views

import (
	"fmt"
	"html"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// BookingSearch is the booking panel's search form as typed.
type BookingSearch struct {
	Type string
	ID   string
	Errs FormErrors
}

// ResendForm is the panel's resend form as submitted.
type ResendForm struct {
	Channel    string
	TemplateID string
}

// BookingPanelView is what the booking communications panel shows.
type BookingPanelView struct {
	Panel *console.BookingPanel
	// Base is the tenant's path prefix (/t/acme); Path the panel's own URL.
	Base      string
	Path      string
	CanResend bool
	CanCancel bool
	// CanReply shows the answer form under the passengers' replies; ReplyKey
	// is its idempotency key, fresh on every page.
	CanReply bool
	ReplyKey string
	Form     ResendForm
	Errs     FormErrors
	// Pager pages the messages section (newest first).
	Pager Pager
}

// MessageListView is the messages explorer: the filters as typed, what
// was wrong with them, and one page of messages.
type MessageListView struct {
	Base     string
	Messages []*app.Message
	Pager    Pager
	Input    console.MessageFilterInput
	Errs     map[string]string
	// Filtered is true when any filter narrowed the list.
	Filtered bool
}

// MessageDetailView is one message's page.
type MessageDetailView struct {
	View      *console.MessageView
	Base      string
	CanResend bool
	CanCancel bool
}

// msgTimelineItem is one line of a message's timeline: a status change or
// note, or a reply from the passenger.
type msgTimelineItem struct {
	At     time.Time
	Source string
	From   string
	To     string
	Detail []msgDetailPair
	Reply  *app.InboundMessage
}

type msgDetailPair struct{ Key, Value string }

// msgTimelineOf merges a message's timeline and the replies that answer it,
// oldest first, masking addresses in the details for roles that see them
// only masked.
func msgTimelineOf(p Page, m *console.MessageTrail) []msgTimelineItem {
	out := make([]msgTimelineItem, 0, len(m.Timeline)+len(m.Replies))
	for _, e := range m.Timeline {
		it := msgTimelineItem{At: e.At, Source: e.Source}
		if e.FromStatus != nil {
			it.From = *e.FromStatus
		}
		if e.ToStatus != nil {
			it.To = *e.ToStatus
		}
		keys := make([]string, 0, len(e.Detail))
		for k := range e.Detail {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := app.Stringify(e.Detail[k])
			if v == "" {
				continue
			}
			if k != "by" {
				// "by" names a console user or API key, not a passenger.
				v = msgMask(p, v, m.ToAddress)
			}
			it.Detail = append(it.Detail, msgDetailPair{Key: strings.ReplaceAll(k, "_", " "), Value: v})
		}
		out = append(out, it)
	}
	for _, r := range m.Replies {
		out = append(out, msgTimelineItem{At: r.ReceivedAt, Source: "reply", Reply: r})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// msgMask returns free text as the page's role may see it: unchanged for
// roles that see addresses, with every address masked for the others.
func msgMask(p Page, s string, known ...string) string {
	if p.ShowAddresses {
		return s
	}
	return console.MaskText(s, known...)
}

var (
	msgBreakTags = regexp.MustCompile(`(?i)<\s*(br|/p|/div|/tr|/h[1-6]|/li|/table)\b[^>]*>`)
	msgAnyTag    = regexp.MustCompile(`(?s)<[^>]*>`)
	msgStyleBody = regexp.MustCompile(`(?is)<(style|script|head)\b.*?</(style|script|head)\s*>`)
	msgBlankRuns = regexp.MustCompile(`\n[ \t]*(\n[ \t]*)+`)
)

// msgEmailText renders an HTML e-mail body as the plain text a reader sees,
// for the preview: the console never injects a message's HTML into a page.
func msgEmailText(body string) string {
	s := msgStyleBody.ReplaceAllString(body, "")
	s = msgBreakTags.ReplaceAllString(s, "\n")
	s = msgAnyTag.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	s = strings.Join(lines, "\n")
	return strings.TrimSpace(msgBlankRuns.ReplaceAllString(s, "\n\n"))
}

// msgPanelPath links to an entity's communications panel.
func msgPanelPath(base string, entityType, entityID *string) string {
	if entityType == nil || entityID == nil {
		return ""
	}
	return base + "/bookings/" + *entityType + "/" + url.PathEscape(*entityID)
}

func msgPath(base string, id uuid.UUID) string {
	return base + "/messages/" + id.String()
}

// msgEventPath links to an event: its place in the entity's panel, else the
// explorer filtered to its messages.
func msgEventPath(base string, e *app.Event) string {
	if p := msgPanelPath(base, e.EntityType, e.EntityID); p != "" {
		return p + "#event-" + e.ID.String()
	}
	return base + "/messages?event_id=" + e.ID.String()
}

func msgEventIDPath(base string, m *app.Message) string {
	if m.EventID == nil {
		return ""
	}
	if p := msgPanelPath(base, m.EntityType, m.EntityID); p != "" {
		return p + "#event-" + m.EventID.String()
	}
	return base + "/messages?event_id=" + m.EventID.String()
}

func msgStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func msgShortID(id uuid.UUID) string { return id.String()[:8] }

func msgTitle(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// msgRecipients lists an event's recipients (names and addresses).
// msgSupersedingID returns the superseding event a cancel reason names.
func msgSupersedingID(reason *string) (uuid.UUID, bool) {
	if reason == nil {
		return uuid.Nil, false
	}
	return app.SupersedingID(*reason)
}

// msgIsSuperseded reports whether a reason is a supersession (shown by
// msgSupersededNote, not as the raw reason).
func msgIsSuperseded(reason *string) bool {
	_, ok := msgSupersedingID(reason)
	return ok
}

func msgRecipients(e *app.Event) []app.Recipient {
	rs, err := e.DecodeRecipients()
	if err != nil {
		return nil
	}
	return rs
}

// msgSkips are the channels routing passed over for the event's recipient
// at index i, each as "SMS: the recipient opted out of this channel".
func msgSkips(e *app.Event, i int) []app.EventSkip {
	var out []app.EventSkip
	for _, s := range e.Skips() {
		if s.Recipient == i {
			out = append(out, s)
		}
	}
	return out
}

// msgApproval describes where an event stands on approval.
func msgApproval(e *app.Event) string {
	switch {
	case e.Status == app.EventAwaitingApproval:
		return "Awaiting approval"
	case e.Status == app.EventRejected:
		return "Rejected: " + msgStr(e.DecisionReason)
	case e.DecidedAt != nil:
		return "Approved"
	}
	return ""
}

// msgTemplateGroups groups resend templates by channel, in channel order.
func msgTemplateGroups(ts []*app.Template) []msgTemplateGroup {
	var out []msgTemplateGroup
	for _, ch := range app.Channels {
		g := msgTemplateGroup{Channel: string(ch)}
		for _, t := range ts {
			if t.Channel == ch {
				g.Templates = append(g.Templates, t)
			}
		}
		if len(g.Templates) > 0 {
			out = append(out, g)
		}
	}
	return out
}

type msgTemplateGroup struct {
	Channel   string
	Templates []*app.Template
}

// msgStatusOptions are the explorer's status choices.
func msgStatusOptions() []string { return console.MessageStatuses }

func msgEventNames() []string {
	var out []string
	for _, e := range app.Events() {
		out = append(out, e.Name)
	}
	return out
}

func msgChannelNames() []string {
	out := make([]string, len(app.Channels))
	for i, c := range app.Channels {
		out[i] = string(c)
	}
	return out
}

// msgFilterErrors lists the explorer's filter problems in the form's order.
func msgFilterErrors(errs map[string]string) []string {
	var out []string
	for _, f := range []string{"status", "channel", "event", "event_id", "from", "to", "address", "stale", "reason", "cursor"} {
		if msg, ok := errs[f]; ok {
			out = append(out, msg)
		}
	}
	return out
}

func msgEntityLabel(m *app.Message) string {
	if m.EntityType == nil || m.EntityID == nil {
		return ""
	}
	return *m.EntityType + " " + *m.EntityID
}

// msgRetried reports whether one of the panel's messages retries the
// message id: a failed message is retried once, then its retry carries on.
// resendConfirm is the question the resend form asks before it sends:
// with a warning when a provider refused one of the panel's addresses.
func resendConfirm(p *console.BookingPanel) string {
	if refused := p.Refused(); len(refused) > 0 {
		names := make([]string, len(refused))
		for i, r := range refused {
			names[i] = string(r.Channel)
		}
		slices.Sort(names)
		return "The provider refused an address on " + strings.Join(slices.Compact(names), ", ") +
			" before; sending there again will most likely fail the same way. Send this message to the passenger again anyway?"
	}
	return "Send this message to the passenger again?"
}

func msgRetried(p *console.BookingPanel, id uuid.UUID) bool {
	return p.Retried[id]
}

// msgTemplateName names the template a message was rendered from as people
// do (event, channel, locale, version), from the message's own fields.
func msgTemplateName(m *app.Message) string {
	s := m.TriggerEvent + " · " + channelLabel(m.Channel)
	if m.Locale != nil {
		s += " · " + *m.Locale
	}
	if m.TemplateVersion != nil {
		s += " · version " + strconv.Itoa(*m.TemplateVersion)
	}
	return s
}

// msgTemplatePath is the editor of a message's template.
func msgTemplatePath(base string, m *app.Message) string {
	return base + "/templates/" + m.TemplateID.String()
}

// msgSMSCount describes what an SMS cost, "2 parts · GSM-7"; "" for other
// channels and for SMS stored before Herald counted parts.
func msgSMSCount(m *app.Message) string {
	if m.SMSParts == nil || m.SMSEncoding == nil {
		return ""
	}
	parts := "1 part"
	if *m.SMSParts != 1 {
		parts = strconv.Itoa(*m.SMSParts) + " parts"
	}
	return parts + " · " + app.EncodingLabel(*m.SMSEncoding)
}

// msgFileFacts describes a message's file on the booking panel: its type,
// size and the start of its SHA-256 (enough to match the timeline's proof
// of what was sent); "not fetched yet" for a file by URL no send fetched.
func msgFileFacts(f *app.Attachment) string {
	if f.Size == nil || f.SHA256 == nil {
		return f.ContentType + " · not fetched yet"
	}
	size := fmt.Sprintf("%d bytes", *f.Size)
	if *f.Size >= 1024 {
		size = fmt.Sprintf("%.1f KiB", float64(*f.Size)/1024)
	}
	return fmt.Sprintf("%s · %s · sha256 %s", f.ContentType, size, (*f.SHA256)[:12])
}

// retryLimitNote says why a failed message's retry needs forcing.
func retryLimitNote(retries int) string {
	return fmt.Sprintf("Retried %d times already.", retries)
}

// retryLimitQuestion is the confirmation of a forced retry.
func retryLimitQuestion(refusal string, retries int) string {
	q := fmt.Sprintf("This message was retried %d times already, the most Herald retries unless you insist. ", retries)
	if refusal != "" {
		q += refusal + " "
	}
	return q + "Send it once more?"
}

// msgRemovedText says why a message's personal data is gone, up to the
// date that follows it.
func msgRemovedText(m *app.Message) string {
	if m.Redaction != nil && *m.Redaction == app.RemovedByErasure {
		return "This message's personal data (address, subject, text, timeline) was erased at the contact's request on"
	}
	return "This message's personal data (address, subject, text, timeline) was removed by the tenant's retention on"
}
