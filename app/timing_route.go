package app

import (
	"context"
	"fmt"
	"time"
)

// applyTimeRules gives a planned message its event's expiry and, when it is
// due inside the tenant's quiet hours in the recipient's zone and its event
// is not urgent, the time those hours end: it waits until then.
func applyTimeRules(m *Message, e *Event, def *EventDef, tenant *Tenant, rc Recipient, now time.Time) {
	m.ExpiresAt = e.ExpiresAt
	until, loc := QuietDeferral(now, def, tenant, rc)
	if until.IsZero() {
		return
	}
	zone := loc.String()
	m.DeferredUntil, m.DeferredZone = &until, &zone
}

// expireWhileDeferred marks a message EXPIRED before it is stored when it
// would expire while it waits for quiet hours to end: it would never go.
func expireWhileDeferred(m *Message) {
	if m.Status != MessageQueued || m.DeferredUntil == nil || m.ExpiresAt == nil || m.DeferredUntil.Before(*m.ExpiresAt) {
		return
	}
	reason := ReasonExpired
	m.Status, m.FailedReason = MessageExpired, &reason
}

// DispatchJob is the message's dispatch job: due when quiet hours end for a
// deferred message, at once otherwise.
func (m *Message) DispatchJob() DispatchJob {
	job := DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel, Priority: messagePriority(m)}
	if m.DeferredUntil != nil {
		job.NotBefore = *m.DeferredUntil
	}
	return job
}

// withTimeDetail adds to a new message's first timeline entry why it waits
// or expired at once.
func withTimeDetail(m *Message, detail map[string]any) map[string]any {
	if m.DeferredUntil == nil && m.Status != MessageExpired {
		return detail
	}
	out := make(map[string]any, len(detail)+4)
	for k, v := range detail {
		out[k] = v
	}
	if m.DeferredUntil != nil {
		out["deferred"] = DeferQuietHours
		out["deferred_until"] = m.DeferredUntil.UTC().Format(time.RFC3339)
		out["note"] = m.DeferralNote()
	}
	if m.Status == MessageExpired && m.ExpiresAt != nil {
		out["reason"] = ReasonExpired
		out["note"] = fmt.Sprintf("expires at %s, before quiet hours end; never sent", m.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return out
}

// expireEvent marks an event that reached its expiry before it was routed
// EXPIRED: it makes no messages.
func (r *Router) expireEvent(ctx context.Context, tx RouteTx, e *Event) error {
	msg := fmt.Sprintf("%s: the notification expired at %s before it was sent", ReasonExpired, e.ExpiresAt.UTC().Format(time.RFC3339))
	e.Status, e.Error, e.UpdatedAt = EventExpired, &msg, r.Now()
	r.Log.InfoContext(ctx, "event expired before routing", "event_id", e.ID, "expires_at", e.ExpiresAt)
	return tx.SetEventStatus(ctx, e)
}

// expiresBefore reports whether the message expires before a send again
// after wait.
func (d *Dispatcher) expiresBefore(m *Message, wait time.Duration) bool {
	return m.ExpiresAt != nil && !d.Now().Add(wait).Before(*m.ExpiresAt)
}

// expire marks a QUEUED message EXPIRED instead of sending it (again), with
// its timeline entry and the job's completion; the quota it held goes back
// and no call of it is left in flight. The fallback chain does not go on: an
// expired message is not worth sending on any channel.
func (d *Dispatcher) expire(ctx context.Context, m *Message, detail map[string]any, complete CompleteFunc) (DispatchOutcome, error) {
	d.opts.Metrics.MessageOutcome(m.Channel, "expired")
	now := d.Now()
	err := d.stores.Settle.InTenant(ctx, m.TenantID, func(tx SettleTx) error {
		if err := tx.ReleaseQuota(ctx, m.TenantID, m.ID); err != nil {
			return err
		}
		if err := tx.ClearSendStarted(ctx, m.TenantID, m.ID); err != nil {
			return err
		}
		ok, err := tx.MarkExpired(ctx, m.TenantID, m.ID, now)
		if err != nil {
			return err
		}
		if ok {
			from, to := MessageQueued, MessageExpired
			detail["reason"] = ReasonExpired
			if m.ExpiresAt != nil {
				detail["expires_at"] = m.ExpiresAt.UTC().Format(time.RFC3339)
			}
			if err := tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, FromStatus: &from, ToStatus: &to,
				Source: SourceDispatch, At: now, Detail: detail}); err != nil {
				return err
			}
		}
		return complete(ctx, tx)
	})
	if err != nil {
		return DispatchOutcome{}, err
	}
	return DispatchOutcome{Done: true}, nil
}
