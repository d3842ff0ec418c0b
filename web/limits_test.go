package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// setupLimits is a Herald on a clock the test moves, with the tenant's
// limits set as an operator would.
func setupLimits(t *testing.T, in app.LimitInput) (*testBundle, *testClock) {
	t.Helper()
	clock := newTestClock()
	b := &testBundle{Herald: webtest.New(t, webtest.Options{NoWorkers: true, Now: clock.Now})}
	require.NoError(t, b.Services.Limits.Set(b.Ctx, app.CLIActor, b.Tenant.ID, in))
	return b, clock
}

// smsTo is a BOOKING_CONFIRMED request sent by SMS to the phones given.
func smsTo(eventID string, phones ...string) map[string]any {
	body := webtest.Notification(eventID, "BK-"+eventID)
	recipients := []map[string]any{}
	for _, p := range phones {
		recipients = append(recipients, map[string]any{"name": "Anna Schmidt", "phone": p})
	}
	body["recipients"], body["channels"] = recipients, []string{"SMS"}
	return body
}

// requireRecorded checks that the tenant's request log kept a refusal with
// the code and field.
func requireRecorded(t *testing.T, b *testBundle, code, field string) {
	t.Helper()
	require.Positive(t, b.Count(`SELECT count(*) FROM api_rejections WHERE tenant_id = $1 AND code = $2 AND coalesce(field, '') = $3`,
		b.Tenant.ID, code, field), "the request log keeps %s", code)
}

func TestIntakeLimits_TokenBucket(t *testing.T) {
	t.Parallel()
	b, clock := setupLimits(t, app.LimitInput{IntakePerMinute: "3"})

	for range 3 {
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/tenant", nil, nil))
	}
	// The fourth request in the same instant finds no token: a token comes
	// every 20 s at 3 a minute.
	resp := b.do(t, apiRequest(b, http.MethodGet, "/api/v1/tenant", ""))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "20", resp.Header.Get("Retry-After"))
	code, _, _ := decodeError(t, resp)
	require.Equal(t, "rate_limited", code)

	t.Run("BeforeTheBodyIsParsed", func(t *testing.T) {
		// A body that is not JSON answers 429, not 400: the bucket is
		// checked before anything reads it.
		var body apiErrorBody
		status := b.RequestGarbage(http.MethodPost, "/api/v1/notifications", "{not json", &body)
		require.Equal(t, http.StatusTooManyRequests, status)
		require.Equal(t, "rate_limited", body.Error.Code)
		requireRecorded(t, b, "rate_limited", "")
	})

	t.Run("PerKey", func(t *testing.T) {
		_, other, err := b.Services.APIKeys.Create(b.Ctx, app.CLIActor, b.Tenant.ID, "second system")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, b.RequestWithKey(other, http.MethodGet, "/api/v1/tenant", nil, nil))
	})

	t.Run("Refills", func(t *testing.T) {
		clock.Advance(20 * time.Second)
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/tenant", nil, nil))
		require.Equal(t, http.StatusTooManyRequests, b.Request(http.MethodGet, "/api/v1/tenant", nil, nil))
	})
}

// apiRequest is a request with the tenant's key.
func apiRequest(b *testBundle, method, path, body string) *http.Request {
	req, _ := http.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.Key)
	req.Header.Set("Content-Type", "application/json")
	return req
}

func TestIntakeLimits_DailyCap(t *testing.T) {
	t.Parallel()
	const daily = 5
	b, clock := setupLimits(t, app.LimitInput{DailyEmail: fmt.Sprint(daily)})

	// Many requests at once, each one e-mail: exactly the cap is accepted.
	const n = 12
	statuses := make([]int, n)
	codes := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := webtest.WithRecipient(fmt.Sprintf("cap-%d", i), fmt.Sprintf("BK-CAP-%d", i),
				map[string]any{"name": "Anna Schmidt", "email": "anna@example.com"}, "EMAIL")
			var answer apiErrorBody
			statuses[i] = b.Request(http.MethodPost, "/api/v1/notifications", body, &answer)
			codes[i] = answer.Error.Code
		}()
	}
	wg.Wait()
	accepted := 0
	for i, s := range statuses {
		switch s {
		case http.StatusAccepted:
			accepted++
		case http.StatusTooManyRequests:
			require.Equal(t, "daily_limit_exceeded", codes[i])
		default:
			t.Fatalf("request %d answered %d", i, s)
		}
	}
	require.Equal(t, daily, accepted)
	require.Equal(t, daily, b.Count(`SELECT count(*) FROM events WHERE tenant_id = $1`, b.Tenant.ID), "a refused request stores nothing")
	require.Equal(t, daily, b.Count(`SELECT count FROM intake_day_counts WHERE tenant_id = $1 AND counter = 'channel:EMAIL'`, b.Tenant.ID))
	requireRecorded(t, b, "daily_limit_exceeded", "recipients")

	t.Run("RepeatedRequestCountsOnce", func(t *testing.T) {
		for i := range n {
			if statuses[i] != http.StatusAccepted {
				continue
			}
			body := webtest.WithRecipient(fmt.Sprintf("cap-%d", i), fmt.Sprintf("BK-CAP-%d", i),
				map[string]any{"name": "Anna Schmidt", "email": "anna@example.com"}, "EMAIL")
			require.Equal(t, http.StatusOK, b.Request(http.MethodPost, "/api/v1/notifications", body, nil))
			break
		}
		require.Equal(t, daily, b.Count(`SELECT count FROM intake_day_counts WHERE tenant_id = $1 AND counter = 'channel:EMAIL'`, b.Tenant.ID))
	})

	t.Run("OtherChannelsUnaffected", func(t *testing.T) {
		b.Submit(webtest.WithRecipient("cap-wa", "BK-CAP-WA", map[string]any{"name": "Anna Schmidt", "phone": "+4915123456789"}, "WHATSAPP"))
	})

	t.Run("NextDay", func(t *testing.T) {
		body := webtest.WithRecipient("cap-late", "BK-CAP-LATE", map[string]any{"name": "Anna Schmidt", "email": "anna@example.com"}, "EMAIL")
		resp := b.do(t, apiRequest(b, http.MethodPost, "/api/v1/notifications", mustJSON(t, body)))
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
		clock.Advance(24 * time.Hour)
		b.Submit(body)
	})

	t.Run("PastDaysPruned", func(t *testing.T) {
		days := func() int {
			return b.Count(`SELECT count(DISTINCT day) FROM intake_day_counts WHERE tenant_id = $1`, b.Tenant.ID)
		}
		require.Equal(t, 2, days())
		_, err := b.Services.Limits.Prune(b.Ctx)
		require.NoError(t, err)
		require.Equal(t, 2, days(), "yesterday's counters stay")
		clock.Advance(24 * time.Hour)
		_, err = b.Services.Limits.Prune(b.Ctx)
		require.NoError(t, err)
		require.Equal(t, 1, days(), "the day before yesterday is gone")
	})
}

func TestIntakeLimits_SMSDestinations(t *testing.T) {
	t.Parallel()
	b, _ := setupLimits(t, app.LimitInput{SMSInternationalDaily: "2", SMSRecipientDaily: "2"})
	const (
		home   = "+4915123456789" // the tenant's country (de-DE)
		france = "+33612345678"   // the EU: allowed, international
		usa    = "+16502530000"   // outside the default countries
	)

	t.Run("CountryNotAllowed", func(t *testing.T) {
		var answer apiErrorBody
		status := b.Request(http.MethodPost, "/api/v1/notifications", smsTo("sms-us", home, usa), &answer)
		require.Equal(t, http.StatusUnprocessableEntity, status)
		require.Equal(t, "sms_country_not_allowed", answer.Error.Code)
		require.Equal(t, "recipients[1].phone", answer.Error.Field)
		requireNothingStored(t, b, "sms-us")
		requireRecorded(t, b, "sms_country_not_allowed", "recipients[1].phone")
	})

	t.Run("PerRecipient", func(t *testing.T) {
		b.Submit(smsTo("sms-home-1", home))
		b.Submit(smsTo("sms-home-2", home))
		var answer apiErrorBody
		status := b.Request(http.MethodPost, "/api/v1/notifications", smsTo("sms-home-3", "+4915199999999", home), &answer)
		require.Equal(t, http.StatusTooManyRequests, status)
		require.Equal(t, "sms_recipient_limit_exceeded", answer.Error.Code)
		require.Equal(t, "recipients[1].phone", answer.Error.Field)
		requireNothingStored(t, b, "sms-home-3")
		requireRecorded(t, b, "sms_recipient_limit_exceeded", "recipients[1].phone")
		// Another number still gets its SMS.
		b.Submit(smsTo("sms-other", "+4915199999999"))
	})

	t.Run("International", func(t *testing.T) {
		b.Submit(smsTo("sms-fr-1", france))
		b.Submit(smsTo("sms-fr-2", "+33612345679"))
		var answer apiErrorBody
		status := b.Request(http.MethodPost, "/api/v1/notifications", smsTo("sms-fr-3", "+33612345670"), &answer)
		require.Equal(t, http.StatusTooManyRequests, status)
		require.Equal(t, "sms_international_limit_exceeded", answer.Error.Code)
		require.Equal(t, "recipients[0].phone", answer.Error.Field)
		requireRecorded(t, b, "sms_international_limit_exceeded", "recipients[0].phone")
	})

	t.Run("Visible", func(t *testing.T) {
		var u app.LimitUsage
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/limits", nil, &u))
		require.True(t, u.Custom)
		require.Equal(t, 2, u.Limits.SMSInternationalDaily)
		require.Equal(t, app.DefaultIntakePerMinute, u.Limits.IntakePerMinute)
		require.Contains(t, u.Limits.SMSCountries, "DE")
		require.Contains(t, u.Limits.SMSCountries, "FR")
		require.NotContains(t, u.Limits.SMSCountries, "US")
		require.Equal(t, 2, u.Used.SMSInternational)
		require.Equal(t, 2, u.Used.SMSBusiestRecipient)
		require.Equal(t, 5, u.Used.Daily[app.SMS])
	})
}

// TestIntakeLimits_SettingsCache: a process reads a tenant's bucket
// settings once per HERALD_API_KEY_CACHE_TTL, not for every request. An
// operator's change in this process applies at once; one made by another
// process (the command line, another web machine) within the TTL.
func TestIntakeLimits_SettingsCache(t *testing.T) {
	t.Parallel()
	b, clock := setupLimits(t, app.LimitInput{IntakePerMinute: "2"})
	ttl := b.Services.Config.APIKeyCacheTTL
	require.Positive(t, ttl)
	require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/tenant", nil, nil))

	// Another process lowers the limit to 1 a minute: this one still
	// holds 2 a minute until the TTL passes.
	mine := b.Services.Limits
	other := &app.IntakeLimits{Store: mine.Store, Rates: mine.Rates, Now: mine.Now, CacheTTL: mine.CacheTTL}
	require.NoError(t, other.Set(b.Ctx, app.CLIActor, b.Tenant.ID, app.LimitInput{IntakePerMinute: "1"}))
	require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/tenant", nil, nil), "the second token of 2 a minute")

	clock.Advance(ttl)
	resp := b.do(t, apiRequest(b, http.MethodGet, "/api/v1/tenant", ""))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	code, msg, _ := decodeError(t, resp)
	require.Equal(t, "rate_limited", code)
	require.Contains(t, msg, "more than 1 requests a minute", "read again after the TTL")

	// This process's own change applies at once: the empty bucket's next
	// refusal names the new rate.
	require.NoError(t, mine.Set(b.Ctx, app.CLIActor, b.Tenant.ID, app.LimitInput{IntakePerMinute: "1000"}))
	resp = b.do(t, apiRequest(b, http.MethodGet, "/api/v1/tenant", ""))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	_, msg, _ = decodeError(t, resp)
	require.Contains(t, msg, "more than 1000 requests a minute")
}
