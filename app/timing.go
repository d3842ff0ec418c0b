package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The time rules of bookings and trips: quiet hours in the recipient's
// zone, expiry of what is no longer worth sending, and send times relative
// to a time in the event's context (a departure) that move when it moves.

// Default quiet hours, in minutes after local midnight: 21:00 to 08:00.
const (
	DefaultQuietStart = 21 * 60
	DefaultQuietEnd   = 8 * 60
)

// ReasonExpired is the failed_reason of a message, and the error of an
// event, that expired before it was sent.
const ReasonExpired = "expired"

// DeferQuietHours is the timeline reason of a message held by quiet hours.
const DeferQuietHours = "quiet_hours"

// QuietHours is a tenant's nightly window in which non-urgent messages
// wait: from Start to End, minutes after local midnight, read in each
// recipient's zone. A window may span midnight (21:00-08:00); Start equal to
// End means the tenant has none.
type QuietHours struct {
	Start, End int
}

// Off reports whether the window is empty.
func (q QuietHours) Off() bool { return q.Start == q.End }

// String shows the window as "21:00-08:00", or "off".
func (q QuietHours) String() string {
	if q.Off() {
		return "off"
	}
	return FormatClock(q.Start) + "-" + FormatClock(q.End)
}

func (q QuietHours) contains(minute int) bool {
	if q.Start < q.End {
		return minute >= q.Start && minute < q.End
	}
	return minute >= q.Start || minute < q.End
}

// Until returns when the window around t ends in loc, or the zero time when
// t is outside it. The end is a wall-clock time in loc, so across a change
// to or from summer time the window is an hour shorter or longer, as the
// recipient's night is.
func (q QuietHours) Until(t time.Time, loc *time.Location) time.Time {
	if q.Off() {
		return time.Time{}
	}
	local := t.In(loc)
	if !q.contains(local.Hour()*60 + local.Minute()) {
		return time.Time{}
	}
	y, m, d := local.Date()
	end := time.Date(y, m, d, q.End/60, q.End%60, 0, 0, loc)
	if !end.After(t) {
		end = time.Date(y, m, d+1, q.End/60, q.End%60, 0, 0, loc)
	}
	return end
}

// QuietHours returns the tenant's window.
func (t *Tenant) QuietHours() QuietHours {
	return QuietHours{Start: t.QuietStart, End: t.QuietEnd}
}

// Location is the tenant's time zone, UTC if it is not one.
func (t *Tenant) Location() *time.Location {
	if loc, err := RecipientLocation(t.Timezone); err == nil {
		return loc
	}
	return time.UTC
}

var clockPattern = regexp.MustCompile(`^([01]?[0-9]|2[0-3]):([0-5][0-9])$`)

// ParseClock reads a time of day, "21:00", as minutes after midnight.
func ParseClock(s string) (int, error) {
	m := clockPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a time of day such as 21:00", s)
	}
	h, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	return h*60 + mi, nil
}

// FormatClock shows minutes after midnight as "08:00".
func FormatClock(minutes int) string {
	return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60)
}

// ParseQuietHours reads a window from its two times of day as typed; the
// error names the field at fault (quiet_hours.start or quiet_hours.end).
func ParseQuietHours(start, end string) (QuietHours, error) {
	s, err := ParseClock(start)
	if err != nil {
		return QuietHours{}, Invalid("invalid_quiet_hours", "quiet_hours.start", "Quiet hours start: %s.", err.Error())
	}
	e, err := ParseClock(end)
	if err != nil {
		return QuietHours{}, Invalid("invalid_quiet_hours", "quiet_hours.end", "Quiet hours end: %s.", err.Error())
	}
	return QuietHours{Start: s, End: e}, nil
}

// RecipientZone is the zone a recipient's quiet hours are read in: the
// recipient's own time zone, else the tenant's.
func RecipientZone(rc Recipient, tenant *Tenant) *time.Location {
	if rc.Timezone != "" {
		if loc, err := RecipientLocation(rc.Timezone); err == nil {
			return loc
		}
	}
	return tenant.Location()
}

// QuietDeferral returns when a message of the event for the recipient may
// go if it is due at now: the end of the tenant's quiet hours in the
// recipient's zone when now falls inside them and the event is not urgent,
// else the zero time.
func QuietDeferral(now time.Time, def *EventDef, tenant *Tenant, rc Recipient) (time.Time, *time.Location) {
	if def.Urgent {
		return time.Time{}, nil
	}
	loc := RecipientZone(rc, tenant)
	return tenant.QuietHours().Until(now, loc), loc
}

// DeferralNote says why a message waits, for people:
// "waiting for quiet hours to end at 08:00 Europe/Berlin".
func DeferralNote(until time.Time, zone string) string {
	loc, err := RecipientLocation(zone)
	if err != nil {
		loc, zone = time.UTC, "UTC"
	}
	return "waiting for quiet hours to end at " + until.In(loc).Format("15:04") + " " + zone
}

// Deferred reports whether the message waits for quiet hours to end at now.
func (m *Message) Deferred(now time.Time) bool {
	return m.Status == MessageQueued && m.DeferredUntil != nil && m.DeferredUntil.After(now)
}

// DeferralNote says why the message waits, or "" when it does not.
func (m *Message) DeferralNote() string {
	if m.DeferredUntil == nil || m.DeferredZone == nil {
		return ""
	}
	return DeferralNote(*m.DeferredUntil, *m.DeferredZone)
}

// Expired reports whether the message, still QUEUED, is past its expiry at now.
func (m *Message) Expired(now time.Time) bool {
	return m.Status == MessageQueued && m.ExpiresAt != nil && !now.Before(*m.ExpiresAt)
}

// ExpiryRule is the registry's default expiry of an event that does not
// carry expires_at.
type ExpiryRule struct {
	// At names a time in the context (RFC 3339, such as departure_at) the
	// event expires at.
	At string
	// Date names a date in the context (YYYY-MM-DD, such as departure_date)
	// used when At is absent: the event expires when that date has ended
	// everywhere on earth (the next day 12:00 UTC, midnight at UTC-12),
	// because a date alone names no zone.
	Date string
	// After expires the event this long after it was due, when neither
	// context value is there.
	After time.Duration
}

// expiry returns the default expiry of an event due at due with the
// context, and where it came from (the context key, or "after:<duration>"),
// or the zero time when the rule gives none.
func (r *ExpiryRule) expiry(ctx map[string]any, due time.Time) (time.Time, string) {
	if r == nil {
		return time.Time{}, ""
	}
	if r.At != "" {
		if s, ok := ctx[r.At].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				return t, r.At
			}
		}
	}
	if r.Date != "" {
		if s, ok := ctx[r.Date].(string); ok {
			if d, err := time.Parse(time.DateOnly, s); err == nil {
				return d.Add(36 * time.Hour), r.Date
			}
		}
	}
	if r.After > 0 {
		return due.Add(r.After), "after:" + r.After.String()
	}
	return time.Time{}, ""
}

// SendAtRule is a send time relative to a time in the event's context:
// {"before": "departure_at", "offset": "48h"} sends 48 hours before the
// departure, {"after": ..., "offset": ...} after it. The offset is hours and
// minutes (exact durations) and days (calendar days: the same wall-clock
// time that many days earlier or later), such as "48h", "2d", "1d12h" or
// "90m". Days are counted in Zone, an IANA name, when given, else in the
// fixed offset the context time was written with.
type SendAtRule struct {
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	Offset string `json:"offset"`
	Zone   string `json:"zone,omitempty"`
}

// String shows the rule as "48h before context.departure_at".
func (r *SendAtRule) String() string {
	if r.Before != "" {
		return r.Offset + " before context." + r.Before
	}
	return r.Offset + " after context." + r.After
}

// Anchor is the context key the rule is relative to.
func (r *SendAtRule) Anchor() string {
	if r.Before != "" {
		return r.Before
	}
	return r.After
}

// offset is a parsed rule offset: calendar days and an exact duration.
type offset struct {
	days int
	dur  time.Duration
}

var offsetPattern = regexp.MustCompile(`^(?:(\d{1,3})d)?(?:(\d{1,4})h)?(?:(\d{1,5})m)?$`)

func parseOffset(s string) (offset, error) {
	m := offsetPattern.FindStringSubmatch(s)
	if s == "" || m == nil {
		return offset{}, fmt.Errorf("%q is not an offset such as 48h, 2d, 1d12h or 90m", s)
	}
	var o offset
	o.days, _ = strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	mi, _ := strconv.Atoi(m[3])
	o.dur = time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute
	return o, nil
}

// resolve is the send time of the rule for the anchor time at: the offset
// applied before or after it, calendar days in the rule's zone.
func (r *SendAtRule) resolve(at time.Time) (time.Time, error) {
	o, err := parseOffset(r.Offset)
	if err != nil {
		return time.Time{}, err
	}
	if r.Zone != "" {
		loc, err := RecipientLocation(r.Zone)
		if err != nil {
			return time.Time{}, err
		}
		at = at.In(loc)
	}
	sign := 1
	if r.Before != "" {
		sign = -1
	}
	return at.AddDate(0, 0, sign*o.days).Add(time.Duration(sign) * o.dur), nil
}

// ResolveSendAt computes the send time of rule from the context, with
// errors for people under the request's field names.
func ResolveSendAt(rule *SendAtRule, ctx map[string]any) (time.Time, error) {
	switch {
	case rule.Before != "" && rule.After != "":
		return time.Time{}, Invalid("invalid_send_at", "send_at", `send_at names either "before" or "after", not both.`)
	case rule.Anchor() == "":
		return time.Time{}, Invalid("invalid_send_at", "send_at", `A relative send_at names the context time it is relative to: {"before": "departure_at", "offset": "48h"} (or "after").`)
	}
	field := "send_at.after"
	if rule.Before != "" {
		field = "send_at.before"
	}
	if _, err := parseOffset(rule.Offset); err != nil {
		return time.Time{}, Invalid("invalid_offset", "send_at.offset", "send_at.offset: %s.", err.Error())
	}
	if rule.Zone != "" {
		if _, err := RecipientLocation(rule.Zone); err != nil {
			return time.Time{}, Invalid("invalid_timezone", "send_at.zone", "send_at.zone %q is not a time zone; use an IANA name such as Europe/Berlin.", rule.Zone)
		}
	}
	v, ok := ctx[rule.Anchor()]
	if !ok || v == nil {
		return time.Time{}, Invalid("unknown_context_key", field, "%s names context.%s, which the request's context does not have.", field, rule.Anchor())
	}
	s, ok := v.(string)
	at, err := time.Parse(time.RFC3339, s)
	if !ok || err != nil {
		return time.Time{}, Invalid("invalid_context_time", "context."+rule.Anchor(),
			"context.%s must be a time with its offset (RFC 3339), such as 2027-04-12T07:15:00+02:00, for send_at to be relative to it.", rule.Anchor())
	}
	return rule.resolve(at)
}

// Rule returns the event's relative schedule, nil when send_at is absolute.
func (e *Event) Rule() (*SendAtRule, error) {
	if len(e.SendAtRule) == 0 || string(e.SendAtRule) == "null" {
		return nil, nil
	}
	var r SendAtRule
	if err := json.Unmarshal(e.SendAtRule, &r); err != nil {
		return nil, fmt.Errorf("event %s send_at_rule: %w", e.ID, err)
	}
	return &r, nil
}

// decodeSendAt reads the request's send_at: a time (RFC 3339) or a
// relative rule (an object).
func decodeSendAt(raw json.RawMessage) (*time.Time, *SendAtRule, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	if raw[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var r SendAtRule
		if err := dec.Decode(&r); err != nil {
			return nil, nil, Invalid("invalid_send_at", "send_at",
				`A relative send_at is {"before" or "after": a context key, "offset": such as "48h", optional "zone": an IANA name}.`)
		}
		return nil, &r, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, invalidSendAt("send_at")
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, nil, invalidSendAt("send_at")
	}
	return &t, nil, nil
}

// EventExpiry decides an event's expiry at intake: the request's own
// expires_at, else the registry's default for the event. rule is where a
// default came from ("" for the request's own, or none). An expiry that is
// not after the time the event is due is refused: nothing would ever be
// sent.
func EventExpiry(def *EventDef, req *NotificationRequest, now time.Time) (*time.Time, string, error) {
	due := now
	if req.SendAt != nil {
		due = *req.SendAt
	}
	if req.ExpiresAt != nil {
		switch {
		case !req.ExpiresAt.After(now):
			return nil, "", Invalid("expires_at_in_past", "expires_at", "expires_at must be in the future; leave it out for the event's default expiry.")
		case !req.ExpiresAt.After(due):
			return nil, "", Invalid("expires_before_send_at", "expires_at", "expires_at (%s) must be after send_at (%s): the notification would expire before it is sent.",
				req.ExpiresAt.Format(time.RFC3339), due.Format(time.RFC3339))
		}
		return req.ExpiresAt, "", nil
	}
	at, rule := def.Expiry.expiry(req.Context, due)
	if at.IsZero() {
		return nil, "", nil
	}
	if !at.After(due) {
		field := "context." + rule
		if strings.HasPrefix(rule, "after:") {
			field = "send_at"
		}
		what := "send_at"
		if req.SendAt == nil {
			what = "now"
		}
		return nil, "", Invalid("expires_before_send_at", field,
			"%s expires at %s by default (%s), which is not after %s: it would never be sent. Correct %s, or set expires_at.",
			def.Name, at.Format(time.RFC3339), strings.TrimPrefix(field, "context."), what, field)
	}
	return &at, rule, nil
}
