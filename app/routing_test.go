package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestRouting_Decisions(t *testing.T) {
	t.Parallel()

	t.Run("ReasonText", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "the recipient opted out of this channel", app.ReasonText(app.ReasonOptedOut))
		// Reasons a newer router gives read as words.
		require.Equal(t, "quiet hours", app.ReasonText("quiet_hours"))
		require.Equal(t, "superseded", app.ReasonText("superseded"))
		require.Equal(t, "no reason given", app.ReasonText(""))
	})

	t.Run("TriedUpToTheChosenLocale", func(t *testing.T) {
		t.Parallel()
		r := app.NewRouting(time.Unix(0, 0))
		id, v := uuid.New(), 3
		locale := "de"
		m := &app.Message{ID: uuid.New(), TriggerEvent: "BOOKING_CONFIRMED", Channel: app.Email, TemplateID: &id, TemplateVersion: &v, Locale: &locale}
		r.Queued(0, m, &app.ChannelAccount{ID: uuid.New(), Name: "Mail", Provider: "ses"}, true).Tried([]string{"de-AT", "de", "de-DE", "en"})
		r.Skip(0, app.SMS, app.ReasonNoTemplates).Tried([]string{"de-AT", "de"})
		r.Skip(0, app.WhatsApp, app.ReasonOptedOut).Tried([]string{"de-AT", "de"})
		e := &app.Event{Routing: r.JSON()}
		ds := e.RouteDecisions()
		require.Len(t, ds, 3)
		require.Equal(t, "BOOKING_CONFIRMED/EMAIL/de", ds[0].Template.Name)
		require.Equal(t, []string{"de-AT", "de"}, ds[0].Template.Tried)
		require.Equal(t, 3, ds[0].Template.Version)
		require.Equal(t, "Mail", ds[0].AccountName)
		require.Equal(t, []string{"de-AT", "de"}, ds[1].Template.Tried, "no template: every locale tried")
		require.Nil(t, ds[2].Template, "an opt-out looked no template up")
	})

	t.Run("NothingRecorded", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, app.NewRouting(time.Now()).JSON())
		require.Empty(t, (&app.Event{}).RouteDecisions())
	})
}
