package console_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// FuzzConsoleForms types anything into the console's filter and schedule
// fields. No parser panics; each refusal names its field; what is accepted
// is what the page will show and send back.
func FuzzConsoleForms(f *testing.F) {
	for _, seed := range []string{"", "30", " 400 ", "-1", "+7", "99999999999999999999", "2027-04-12T07:15", "2027-03-28T02:30", "2026-10-25 02:30",
		"2027-04-12T07:15:59", "completed", "pending", "7d", "SENT", "email", "BOOKING_CONFIRMED", "+49 151 1234 5678", "ann@example.com", "\x00", "2027-02-30"} {
		f.Add(seed, seed)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(f, err)
	fields := []string{"status", "channel", "event", "event_id", "from", "to", "address", "stale"}
	f.Fuzz(func(t *testing.T, a, b string) {
		if n, err := console.ParseRetention(a); err == nil && n != nil {
			require.NoError(t, app.ValidateRetention(n))
		} else if err != nil {
			require.Equal(t, "retention", app.ErrorField(err))
		}
		if id, err := console.ParseJobID(a); err == nil {
			require.GreaterOrEqual(t, id, int64(1))
		}
		if st, err := console.ParseJobState(a); err == nil && st != "" {
			require.True(t, slices.Contains(console.JobStates, st) || st == console.JobPending)
		}
		if _, err := console.ParseDashboardRange(a); err != nil {
			require.Equal(t, "range", app.ErrorField(err))
		}
		if at, err := console.ParseLocalTime("send_at", a, berlin); err == nil {
			require.Equal(t, berlin, at.Location())
			again, err := console.ParseLocalTime("send_at", at.Format("2006-01-02T15:04:05"), berlin)
			require.NoError(t, err, "the time the page shows parses again")
			require.True(t, at.Equal(again), "%s and %s", at, again)
		} else {
			require.Equal(t, "send_at", app.ErrorField(err))
		}

		filter, errs := console.ParseMessageFilter(console.MessageFilterInput{
			Status: a, Channel: a, Event: a, EventID: a, From: a, To: b, Address: a, Stale: b,
		}, berlin)
		for field, msg := range errs {
			require.Contains(t, fields, field)
			require.NotEmpty(t, strings.TrimSpace(msg))
		}
		if filter.From != nil && filter.To != nil {
			require.True(t, filter.From.Before(*filter.To), "an accepted range is not empty")
		}
		if filter.Address != "" {
			require.False(t, strings.ContainsAny(filter.Address, " \r\n\x00"))
		}
	})
}
