package app

import "time"

// Job priorities. River fetches a queue's available jobs by priority first
// (1 before 4), then by when they became due, so a priority decides who
// goes first whenever a queue has a backlog and costs nothing when it has
// none. Every route and dispatch job carries one:
//
//   - PriorityUrgent: events the registry marks urgent (departure changes,
//     cancelled legs, incidents). They pass any backlog of other messages.
//   - PriorityTransactional: confirmations, payments, documents: what a
//     passenger waits for.
//   - PriorityOptional: reminders, offers, reviews; and a tenant's urgent
//     and transactional messages beyond its fair share (a burst of events,
//     or an event's recipients beyond the first FanoutShare): behind every
//     other tenant's confirmations, ahead of the tenant's own optional
//     messages.
//   - PriorityBulk: a tenant's optional messages beyond its fair share.
//
// Fair share is how one tenant's burst never stands in front of another
// tenant's everyday messages: the burst's messages still go at the
// machine's full rate when nobody else is waiting, and yield to the others
// when someone is. Within one priority a queue stays first in, first out.
const (
	PriorityUrgent        = 1
	PriorityTransactional = 2
	PriorityOptional      = 3
	PriorityBulk          = 4
)

// BurstWindow and BurstShare define a tenant's burst: BurstShare events or
// more accepted within BurstWindow, counted at the event's priority or a
// more urgent one, among the tenant's BurstLookback latest events. An
// operator's tenants send hundreds to thousands of messages a month, so a
// hundred in ten seconds is a campaign, an import or a runaway loop, never
// a passenger waiting on a confirmation. Counting by priority keeps a
// tenant's own burst of reminders from demoting its next departure change
// or confirmation; the lookback bounds what intake reads for it.
// FanoutShare is the same share for one event's recipients: a trip's first
// hundred passengers go at the event's priority, the rest behind other
// tenants' everyday messages.
const (
	BurstWindow   = 10 * time.Second
	BurstShare    = 100
	BurstLookback = 2 * BurstShare
	FanoutShare   = 100
)

// SharePeers lists the trigger events whose events count towards this
// event's share: those at its priority or a more urgent one. nil means
// every event (an optional event shares with all of them).
func (e *EventDef) SharePeers() []string {
	p := e.Priority()
	if p == PriorityOptional {
		return nil
	}
	return sharePeers[p]
}

// sharePeers holds SharePeers by priority.
var sharePeers = func() map[int][]string {
	out := map[int][]string{}
	for _, d := range eventList {
		for p := d.Priority(); p <= PriorityOptional; p++ {
			out[p] = append(out[p], d.Name)
		}
	}
	return out
}()

// Priority is the priority of an event's messages within the tenant's fair
// share.
func (e *EventDef) Priority() int {
	switch {
	case e == nil:
		return PriorityTransactional
	case e.Urgent:
		return PriorityUrgent
	case e.Optional():
		return PriorityOptional
	}
	return PriorityTransactional
}

// beyondShare is the priority of a message past its tenant's fair share:
// it yields to every other tenant's urgent and transactional messages,
// and a confirmation still passes the tenant's own reminders (River has
// four priorities, so urgent and transactional share one level there).
func beyondShare(p int) int {
	if p == PriorityOptional {
		return PriorityBulk
	}
	return PriorityOptional
}

// RoutePriority is the priority of a newly accepted event's route job;
// recent is how many events its tenant had accepted within BurstWindow
// before it.
func RoutePriority(def *EventDef, recent int) int {
	if recent >= BurstShare {
		return beyondShare(def.Priority())
	}
	return def.Priority()
}

// fanoutPriority is the priority of the n-th message (from 0) an event's
// route job makes, when that job ran at routePriority: the first
// FanoutShare keep it; the rest are beyond the share.
func fanoutPriority(def *EventDef, routePriority, n int) int {
	if routePriority < PriorityUrgent || routePriority > PriorityBulk {
		routePriority = def.Priority()
	}
	if n < FanoutShare {
		return routePriority
	}
	return max(routePriority, beyondShare(def.Priority()))
}

// priority is the priority of the event's route job when it is routed
// again or later (rescheduled, approved, moved with its booking): its
// event's own.
func (e *Event) priority() int { return triggerPriority(e.TriggerEvent) }

// messagePriority is the priority of a job that sends m again or instead
// (a fallback, a resend, a retry after a provider's rate limit): its
// event's own.
func messagePriority(m *Message) int { return triggerPriority(m.TriggerEvent) }

// triggerPriority is a trigger event's priority within its share;
// PriorityTransactional for one the built-in registry does not know (a
// STOP/START confirmation, and a tenant's own event, whose first route
// job had its own priority: a job queued again has no transaction to read
// the tenant's registry in).
func triggerPriority(trigger string) int {
	def, _ := BuiltInEvent(trigger)
	return def.Priority()
}
