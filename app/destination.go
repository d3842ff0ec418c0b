package app

import (
	"context"
	"slices"
	"sort"
	"time"
)

// DestinationTx lists the statements routing runs to hold an SMS to the
// tenant's destination rules.
type DestinationTx interface {
	LimitTx
	// Savepoint runs fn so that its writes roll back when it fails, and the
	// transaction carries on.
	Savepoint(ctx context.Context, fn func() error) (fnErr, err error)
}

// refuseDestination holds a planned SMS whose number intake never saw (a
// trip audience's passenger, whose phone Herald learnt from earlier
// bookings) to the rules intake holds inline numbers to: the tenant's SMS
// countries, its daily cap of SMS abroad and its daily cap per number.
// The SMS counts against the caps in routing's transaction, with the
// conditional upsert intake uses, so concurrent routings never pass a cap
// together. A refused SMS becomes FAILED with the rule as its reason, and
// the returned detail (reason and the refusal's text) is its timeline's
// first entry; nil means the SMS may go.
func (r *Router) refuseDestination(ctx context.Context, tx DestinationTx, tenant *Tenant, e *Event, m *Message) (map[string]any, error) {
	if m.Channel != SMS || e.TripAudience() == "" {
		// Inline numbers were held to the rules, and counted, at intake.
		return nil, nil
	}
	reason, text, err := smsDestination(ctx, tx, tenant, m.ToAddress, r.Now())
	if err != nil || reason == "" {
		return nil, err
	}
	now := r.Now()
	m.Status, m.FailedReason, m.FailedAt, m.UpdatedAt = MessageFailed, &reason, &now, now
	m.DeferredUntil, m.DeferredZone = nil, nil
	return map[string]any{"reason": reason, "error": text}, nil
}

// smsDestination checks one SMS to phone against the tenant's destination
// rules and takes it from the day's counters, all or none of them; it
// returns the reason and text of the rule that refuses it, or "".
func smsDestination(ctx context.Context, tx DestinationTx, tenant *Tenant, phone string, now time.Time) (reason, text string, err error) {
	set, err := tx.LimitSettings(ctx, tenant.ID)
	if err != nil {
		return "", "", err
	}
	l, region := set.Effective(tenant), regionOf(phone)
	if !slices.Contains(l.SMSCountries, region) {
		return ReasonSMSCountry, countryRefusal(region, l), nil
	}
	takes := []DayTake{{Counter: CounterSMSRecipient + numberHash(tenant.ID.String(), phone), N: 1,
		Setting: settingRecipient, Default: DefaultSMSRecipientDaily}}
	if region != TenantCountry(tenant) {
		takes = append(takes, DayTake{Counter: counterInternational, N: 1, Setting: settingInternational, Default: DefaultSMSInternationalDaily})
	}
	sort.Slice(takes, func(i, j int) bool { return takes[i].Counter < takes[j].Counter })
	var refused []string
	// A savepoint gives back the counter that was taken when the other
	// refuses: a refused SMS counts against no cap.
	fnErr, err := tx.Savepoint(ctx, func() (err error) {
		if _, refused, err = tx.TakeDayCounts(ctx, tenant.ID, DayOf(now, tenant.Timezone), takes); err != nil || len(refused) == 0 {
			return err
		}
		return errRefused
	})
	if err != nil {
		return "", "", err
	}
	if fnErr != nil && fnErr != errRefused {
		return "", "", fnErr
	}
	for _, tk := range takes {
		if slices.Contains(refused, tk.Counter) {
			reason, text = capRefusal(tk, l, tenant.Timezone)
			return reason, text, nil
		}
	}
	return "", "", nil
}

// errRefused rolls a refused SMS's counters back to their savepoint.
var errRefused = Errorf(ETOOMANY, "a day cap refused the SMS")
