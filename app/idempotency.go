package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"time"
)

// requestView is the part of an event its request decided, as plain JSON
// values in the request's field order, so that two events can be compared
// field by field. Both sides come from Event rows built the same way
// (normalised and redacted), so formatting, key order and whitespace do not
// count, and the stored row is all a comparison needs.
func requestView(e *Event) ([]viewField, error) {
	recipients, err := decodeLoose(e.Recipients)
	if err != nil {
		return nil, fmt.Errorf("event %s recipients: %w", e.ID, err)
	}
	context, err := decodeLoose(e.Context)
	if err != nil {
		return nil, fmt.Errorf("event %s context: %w", e.ID, err)
	}
	var conv any
	if e.EntityType != nil {
		conv = map[string]any{"type": *e.EntityType, "id": deref(e.EntityID)}
	}
	var audience any
	if len(e.Audience) > 0 {
		// An audience's recipients are the passengers routing expanded
		// it to, not part of the request.
		if audience, err = decodeLoose(e.Audience); err != nil {
			return nil, fmt.Errorf("event %s audience: %w", e.ID, err)
		}
		recipients = nil
	}
	var sendAt any
	if e.SendAt != nil {
		// Postgres keeps microseconds.
		sendAt = e.SendAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	if len(e.SendAtRule) > 0 {
		// A relative send_at is the request's rule, not the time it
		// resolved to.
		if sendAt, err = decodeLoose(e.SendAtRule); err != nil {
			return nil, fmt.Errorf("event %s send_at_rule: %w", e.ID, err)
		}
	}
	var expiresAt any
	if e.ExpiresAt != nil && e.ExpiresRule == nil {
		expiresAt = e.ExpiresAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	return []viewField{
		{"trigger_event", e.TriggerEvent},
		{"recipients", recipients},
		{"audience", audience},
		{"context", context},
		{"conversation_context", conv},
		{"channels", stringsAny(e.Channels)},
		{"fallback_chain", stringsAny(e.FallbackChain)},
		{"send_at", sendAt},
		{"expires_at", expiresAt},
		{"locale", deref(e.Locale)},
	}, nil
}

type viewField struct {
	name  string
	value any
}

// firstRequestDifference names the first field in which the request that
// would make event b differs from the one that made event a, or returns ""
// when they are the same request.
func firstRequestDifference(a, b *Event) (string, error) {
	va, err := requestView(a)
	if err != nil {
		return "", err
	}
	vb, err := requestView(b)
	if err != nil {
		return "", err
	}
	for i := range va {
		// A reschedule (which raises the version) replaced the stored
		// send_at; the request's own is no longer known, so it cannot count.
		if va[i].name == "send_at" && a.Version > 1 {
			continue
		}
		if va[i].name == "context" && a.Version > 1 {
			// A move gave the context its anchor's new time (see
			// moveRelativeSchedules).
			forgetMovedAnchor(a, va[i].value, vb[i].value)
		}
		if p := firstDifference(va[i].name, va[i].value, vb[i].value); p != "" {
			return p, nil
		}
	}
	return "", nil
}

// firstDifference walks two decoded JSON values and returns the path of the
// first difference: object keys in sorted order, array elements in order.
func firstDifference(path string, a, b any) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, dup := x[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			xv, xok := x[k]
			yv, yok := y[k]
			if xok != yok {
				return path + "." + k
			}
			if p := firstDifference(path+"."+k, xv, yv); p != "" {
				return p
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok {
			return path
		}
		for i := 0; i < len(x) && i < len(y); i++ {
			if p := firstDifference(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); p != "" {
				return p
			}
		}
		if len(x) != len(y) {
			return fmt.Sprintf("%s[%d]", path, min(len(x), len(y)))
		}
		return ""
	case json.Number:
		y, ok := b.(json.Number)
		if !ok || !sameNumber(x, y) {
			return path
		}
		return ""
	default:
		if a != b {
			return path
		}
		return ""
	}
}

// sameNumber compares numbers by value: Postgres's jsonb writes 1e2 as 100.
func sameNumber(a, b json.Number) bool {
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	if !okx || !oky {
		return a == b
	}
	return x.Cmp(y) == 0
}

// decodeLoose decodes JSON keeping numbers exact; empty input and null are nil.
func decodeLoose(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// stringsAny turns a list into JSON's []any; an empty list is no list, as
// the request's omitempty fields make it.
func stringsAny(ss []string) any {
	if len(ss) == 0 {
		return nil
	}
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// forgetMovedAnchor drops the context time a relative schedule follows from
// both contexts when a's schedule may have moved: the stored time is the new
// one, the request had the old.
func forgetMovedAnchor(a *Event, ctxA, ctxB any) {
	rule, err := a.Rule()
	if err != nil || rule == nil {
		return
	}
	for _, c := range []any{ctxA, ctxB} {
		if m, ok := c.(map[string]any); ok {
			delete(m, rule.Anchor())
		}
	}
}
