package app_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestLimitInput_Settings(t *testing.T) {
	t.Parallel()
	id := uuid.New()

	t.Run("EmptyIsDefault", func(t *testing.T) {
		t.Parallel()
		s, err := app.LimitInput{}.Settings(id)
		require.NoError(t, err)
		l := s.Effective(&app.Tenant{DefaultLocale: "de-CH"})
		require.Equal(t, app.DefaultIntakePerMinute, l.IntakePerMinute)
		require.Equal(t, app.DefaultDailyCaps[app.SMS], l.Daily[app.SMS])
		require.Equal(t, app.DefaultSMSRecipientDaily, l.SMSRecipientDaily)
		require.Contains(t, l.SMSCountries, "CH", "the tenant's own country")
		require.Contains(t, l.SMSCountries, "FR", "the EU")
		require.NotContains(t, l.SMSCountries, "US")
	})

	t.Run("Values", func(t *testing.T) {
		t.Parallel()
		s, err := app.LimitInput{IntakePerMinute: "1,200", DailySMS: "0", SMSCountries: "gb; de, GB"}.Settings(id)
		require.NoError(t, err)
		l := s.Effective(&app.Tenant{DefaultLocale: "de-DE"})
		require.Equal(t, 1200, l.IntakePerMinute)
		require.Zero(t, l.Daily[app.SMS], "a cap of 0 stops the channel")
		require.Equal(t, []string{"DE", "GB"}, l.SMSCountries, "the operator's list alone")
	})

	for name, tc := range map[string]struct {
		in    app.LimitInput
		field string
	}{
		"ZeroRate":         {app.LimitInput{IntakePerMinute: "0"}, "intake_per_minute"},
		"Negative":         {app.LimitInput{DailyEmail: "-5"}, "daily_email"},
		"NotANumber":       {app.LimitInput{SMSRecipientDaily: "ten"}, "sms_recipient_daily"},
		"Fraction":         {app.LimitInput{DailyWebhook: "1.5"}, "daily_webhook"},
		"UnknownCountry":   {app.LimitInput{SMSCountries: "DE, XX"}, "sms_countries"},
		"TooManyRecipient": {app.LimitInput{SMSRecipientDaily: "1000001"}, "sms_recipient_daily"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.in.Settings(id)
			require.Equal(t, app.EINVALID, app.ErrorCode(err))
			require.Equal(t, tc.field, app.ErrorField(err))
		})
	}
}
