package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// moveRelativeSchedules runs in the transaction that accepts an event whose
// registry entry Moves context times (DEPARTURE_CHANGED moves departure_at):
// every event of the same entity that is not routed yet and whose send_at
// is relative to one of those times gets the new time in its context, its
// send_at computed again, an expiry read from that time moved with it, its
// version raised and a new route job (seed 003's reschedule rule: the old
// job finds a stale version and does nothing). Each move is audited.
//
// The events are locked before they are read, and routing locks an event
// too, so a move and the event's due time never both win: either the event
// was routed (at its old time, before the move) and is left alone, or it is
// moved and its old job does nothing. A new send time already past sends
// now; an event whose moved expiry has passed expires.
func moveRelativeSchedules(ctx context.Context, tx IntakeTx, q Queue, key *APIKey, changed *Event, def *EventDef, now time.Time) error {
	if changed.EntityID == nil {
		return nil
	}
	ctxVars, err := changed.DecodeContext()
	if err != nil {
		return err
	}
	times := map[string]string{}
	for _, k := range def.Moves {
		if s, ok := ctxVars[k].(string); ok {
			if _, err := time.Parse(time.RFC3339, s); err == nil {
				times[k] = s
			}
		}
	}
	if len(times) == 0 {
		return nil
	}
	pending, err := tx.PendingRelativeEvents(ctx, changed.TenantID, *changed.EntityType, *changed.EntityID)
	if err != nil {
		return err
	}
	actor := Actor{Type: ActorAPIKey, ID: &key.ID, Label: key.Name}
	for _, e := range pending {
		if e.ID == changed.ID {
			continue
		}
		rule, err := e.Rule()
		if err != nil {
			return err
		}
		if rule == nil {
			continue
		}
		value, ok := times[rule.Anchor()]
		if !ok {
			continue
		}
		if err := moveSchedule(e, rule, value, now); err != nil {
			return err
		}
		if err := tx.UpdateEventSchedule(ctx, e); err != nil {
			return err
		}
		if err := tx.InsertAudit(ctx, actor.Entry(&e.TenantID, "notification.reschedule", "event", e.ID.String(), map[string]any{
			"send_at": e.SendAt, "version": e.Version, "moved_by": changed.ID.String(), "moved_by_event": changed.SourceEventID,
			"anchor": rule.Anchor(), "anchor_time": value, "status": e.Status,
		})); err != nil {
			return err
		}
		if e.Status != EventScheduled {
			// Awaiting approval routes once approved; an expired event
			// never does.
			continue
		}
		if err := q.EnqueueRoute(ctx, tx, RouteJob{TenantID: e.TenantID, EventID: e.ID, Version: e.Version, At: *e.SendAt, Priority: e.priority()}); err != nil {
			return err
		}
	}
	return nil
}

// moveSchedule gives e the anchor time value: in its context, its send_at
// and, when its default expiry was read from that time, its expiry.
func moveSchedule(e *Event, rule *SendAtRule, value string, now time.Time) error {
	at, _ := time.Parse(time.RFC3339, value)
	sendAt, err := rule.resolve(at)
	if err != nil {
		return fmt.Errorf("event %s: %w", e.ID, err)
	}
	ctxVars, err := e.DecodeContext()
	if err != nil {
		return err
	}
	ctxVars[rule.Anchor()] = value
	if e.Context, err = json.Marshal(ctxVars); err != nil {
		return err
	}
	if e.ExpiresRule != nil && *e.ExpiresRule == rule.Anchor() {
		e.ExpiresAt = &at
	}
	if sendAt.Before(now) {
		// The new time leaves less notice than the rule asked for: the
		// notice goes now rather than not at all.
		sendAt = now
	}
	e.Version++
	e.SendAt, e.UpdatedAt = &sendAt, now
	if e.Status == EventReceived {
		e.Status = EventScheduled
	}
	if e.ExpiresAt != nil && !now.Before(*e.ExpiresAt) {
		msg := fmt.Sprintf("%s: moved to %s, after its expiry", ReasonExpired, value)
		e.Status, e.Error = EventExpired, &msg
	}
	return nil
}
