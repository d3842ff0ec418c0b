package console_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/console"
)

func TestRedactBody(t *testing.T) {
	t.Parallel()

	t.Run("KeepsStructureMasksPeople", func(t *testing.T) {
		t.Parallel()
		got := console.RedactBody([]byte(`{"event_id":"BK-1-confirmed","trigger_event":"BOOKING_CONFIRMED",
			"recipients":[{"name":"Maria Schmidt","phone":"+49 151 2345 6789","email":"maria.schmidt@example.com","locale":"de-AT"}],
			"context":{"passenger_name":"Maria Schmidt","note":"call maria.schmidt@example.com or +4915123456789","seats":2,"paid":true,
			"departure":"2027-04-12T05:15:00Z"},"channels":["EMAIL","SMS"],"conversation_context":{"type":"booking","id":"BK-1"}}`))
		for _, want := range []string{
			`"event_id": "BK-1-confirmed"`, `"trigger_event": "BOOKING_CONFIRMED"`, `"locale": "de-AT"`,
			`"name": "••• (13 characters)"`, `"phone": "+49 ••• ••• 6789"`, `"email": "m•••@example.com"`,
			`"note": "••• (48 characters)"`, `"seats": 2`, `"paid": true`, `"departure": "2027-04-12T05:15:00Z"`,
			`"EMAIL"`, `"type": "booking"`, `"id": "BK-1"`,
		} {
			require.Contains(t, got, want)
		}
		for _, secret := range []string{"Maria", "Schmidt", "maria.schmidt", "2345", "151"} {
			require.NotContains(t, got, secret)
		}
	})

	t.Run("NotJSON", func(t *testing.T) {
		t.Parallel()
		got := console.RedactBody([]byte(`name=Maria&phone=+4915123456789`))
		require.Equal(t, "(31 bytes, not valid JSON: not kept)", got)
		require.Equal(t, "", console.RedactBody(nil))
	})

	t.Run("TooLarge", func(t *testing.T) {
		t.Parallel()
		got := console.RedactBody([]byte(`{"x":"` + strings.Repeat("a", console.MaxRedactInput) + `"}`))
		require.Contains(t, got, "too large to keep")
	})

	t.Run("CutAtLimit", func(t *testing.T) {
		t.Parallel()
		ids := make([]string, 3000)
		for i := range ids {
			ids[i] = `"EMAIL"`
		}
		got := console.RedactBody([]byte(`{"channels":[` + strings.Join(ids, ",") + `]}`))
		require.LessOrEqual(t, len(got), console.MaxRedactedBody+40)
		require.True(t, strings.HasSuffix(got, "(cut at 16 KiB)"))
	})
}

// TestRedactBody_TooDeep: a body nested deeper than app.MaxJSONDepth is
// described by its size and never decoded; a decoder would allocate at
// least one value per level, the description a handful in all. Not
// parallel: AllocsPerRun counts every allocation of the process.
func TestRedactBody_TooDeep(t *testing.T) {
	deep := []byte(`{"event_id":"deep-1","context":` + strings.Repeat(`{"a":`, 8000) + "1" + strings.Repeat("}", 8001))
	require.Greater(t, len(deep), 48_000)
	require.Equal(t, fmt.Sprintf("(%d bytes, nested more than 32 levels deep: not parsed)", len(deep)), console.RedactBody(deep))
	require.LessOrEqual(t, testing.AllocsPerRun(10, func() { _ = console.RedactBody(deep) }), 10.0)

	within := []byte(`{"event_id":"deep-2","context":` + strings.Repeat(`{"a":`, 30) + "1" + strings.Repeat("}", 31))
	require.Contains(t, console.RedactBody(within), `"event_id": "deep-2"`, "a body within the bound is redacted as before")
}
