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
	"github.com/heraldhq/herald/db"
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

// TestIntakeLimits_TokenBucketConcurrent: requests of one key at one
// instant (the clock stands still, so nothing refills) get exactly the
// bucket's tokens, however they interleave: the take is one conditional
// upsert of the bucket's row.
func TestIntakeLimits_TokenBucketConcurrent(t *testing.T) {
	t.Parallel()
	const perMinute, n = 4, 12
	b, _ := setupLimits(t, app.LimitInput{IntakePerMinute: fmt.Sprint(perMinute)})
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = b.Request(http.MethodGet, "/api/v1/tenant", nil, nil)
		}()
	}
	wg.Wait()
	ok, limited := 0, 0
	for _, s := range statuses {
		switch s {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
		}
	}
	require.Equal(t, perMinute, ok)
	require.Equal(t, n-perMinute, limited)
}

// TestIntakeLimits_TenantDay: daily caps count the tenant's own day, in its
// time zone: UTC midnight starts nothing over for a tenant in New York,
// its own midnight does, and a refusal's Retry-After says how long until
// then.
func TestIntakeLimits_TenantDay(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	b := &testBundle{Herald: webtest.New(t, webtest.Options{NoWorkers: true, Now: clock.Now})}
	// Before the first request: authentication reads the zone with the key.
	b.OwnerExec(`UPDATE tenants SET timezone = 'America/New_York' WHERE id = $1`, b.Tenant.ID)
	require.NoError(t, b.Services.Limits.Set(b.Ctx, app.CLIActor, b.Tenant.ID, app.LimitInput{DailyEmail: "1"}))
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)

	// Half an hour before UTC midnight: New York's afternoon.
	now := clock.Now().UTC()
	utcMidnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	clock.Advance(utcMidnight.Add(-30 * time.Minute).Sub(now))
	email := func(id string) map[string]any {
		return webtest.WithRecipient(id, "BK-"+id, map[string]any{"name": "Anna Schmidt", "email": "anna@example.com"}, "EMAIL")
	}
	b.Submit(email("day-1"))

	refused := func(id string) {
		t.Helper()
		resp := b.do(t, apiRequest(b, http.MethodPost, "/api/v1/notifications", mustJSON(t, email(id))))
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		at := clock.Now().In(ny)
		nyMidnight := time.Date(at.Year(), at.Month(), at.Day()+1, 0, 0, 0, 0, ny)
		require.Equal(t, fmt.Sprint(int(nyMidnight.Sub(at).Seconds())+1), resp.Header.Get("Retry-After"), "until New York's midnight")
		_, msg, _ := decodeError(t, resp)
		require.Contains(t, msg, "midnight (America/New_York)")
	}
	refused("day-2")
	clock.Advance(time.Hour)
	refused("day-3")
	var u app.LimitUsage
	require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/limits", nil, &u))
	require.Equal(t, 1, u.Used.Daily[app.Email], "past UTC midnight, still New York's day")
	require.Equal(t, "America/New_York", u.Timezone)
	require.Equal(t, utcMidnight.Add(-time.Hour).In(ny).Format(time.DateOnly), u.Day)

	// A minute past New York's midnight the cap starts over.
	at := clock.Now().In(ny)
	clock.Advance(time.Date(at.Year(), at.Month(), at.Day()+1, 0, 1, 0, 0, ny).Sub(at))
	b.Submit(email("day-4"))
	require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/limits", nil, &u))
	require.Equal(t, 1, u.Used.Daily[app.Email])
	require.Equal(t, clock.Now().In(ny).Format(time.DateOnly), u.Day)
}

// TestIntakeLimits_AudienceSMSDestinations: a trip audience's numbers are
// known only at routing, where each SMS is held to the rules intake holds
// inline numbers to. A refused SMS is FAILED with the rule as its reason
// and the refusal's text on its timeline; the others go.
func TestIntakeLimits_AudienceSMSDestinations(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{})
	const trip = "T-DEST-1"
	passengers := map[string]string{
		"BK-D1": "+4915112340001", // home: goes
		"BK-D2": "+16502530000",   // the USA: not an allowed country
		"BK-D3": "+33612345678",   // France: one SMS abroad a day, to one of these two
		"BK-D4": "+33612345679",
		"BK-D5": "+4915112340005", // home, but it had its SMS today already
	}
	// The bookings go by WhatsApp: intake counts no SMS for them, and
	// routing learns each passenger's number.
	for booking, phone := range passengers {
		body := bookingEvent(trip+"-"+booking, "BOOKING_CONFIRMED", booking, trip, nil)
		body["recipients"] = []map[string]any{{"name": "Passenger " + booking, "phone": phone, "locale": "en"}}
		body["channels"] = []string{"WHATSAPP"}
		submitAnswer(t, h, h.Key, body)
	}
	h.WaitUntil("every booking's conversation is open", func() bool {
		return h.Count(`SELECT count(DISTINCT booking_id) FROM conversations c JOIN trip_bookings tb USING (tenant_id, booking_id)
			WHERE tb.tenant_id = $1 AND tb.trip_id = $2`, h.Tenant.ID, trip) == len(passengers)
	})
	require.NoError(t, h.Services.Limits.Set(h.Ctx, app.CLIActor, h.Tenant.ID,
		app.LimitInput{SMSCountries: "DE, FR", SMSInternationalDaily: "1", SMSRecipientDaily: "1"}))
	// The fifth passenger's one SMS of the day, inline at intake.
	h.Submit(webtest.WithRecipient("dest-inline", "BK-D5-OTHER", map[string]any{"name": "Passenger BK-D5", "phone": passengers["BK-D5"]}, "SMS"))

	body := map[string]any{"event_id": "dest-allclear", "trigger_event": "INCIDENT_ALLCLEAR", "channels": []string{"SMS"},
		"audience": map[string]any{"trip_id": trip}}
	def, _ := app.BuiltInEvent("INCIDENT_ALLCLEAR")
	body["context"] = def.Sample
	id := h.Submit(body)
	ms := h.WaitMessages(id, "an SMS per passenger", func(ms []*app.Message) bool { return len(ms) == len(passengers) })

	byPhone := map[string]*app.Message{}
	for _, m := range ms {
		require.Equal(t, app.SMS, m.Channel)
		byPhone[m.ToAddress] = m
	}
	reason := func(phone string) string {
		if m := byPhone[phone]; m != nil && m.FailedReason != nil && m.Status == app.MessageFailed {
			return *m.FailedReason
		}
		return ""
	}
	require.Empty(t, reason(passengers["BK-D1"]), "a home number under its cap goes")
	require.Equal(t, app.ReasonSMSCountry, reason(passengers["BK-D2"]))
	require.Equal(t, app.ReasonSMSRecipient, reason(passengers["BK-D5"]))
	abroad := []string{reason(passengers["BK-D3"]), reason(passengers["BK-D4"])}
	require.ElementsMatch(t, []string{"", app.ReasonSMSInternational}, abroad, "one SMS abroad, then the cap")

	// The refusal's text is on the message's timeline, as intake words it.
	var text string
	require.NoError(t, h.Services.Store.InPlatform(h.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(h.Ctx, `SELECT detail->>'error' FROM message_events WHERE tenant_id = $1 AND message_id = $2`,
			h.Tenant.ID, byPhone[passengers["BK-D2"]].ID).Scan(&text)
	}))
	require.Contains(t, text, "SMS to United States (US) are not allowed for this tenant")

	// The counters count what went: the home number once, one SMS abroad;
	// the refused numbers count nothing.
	var u app.LimitUsage
	require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/limits", nil, &u))
	require.Equal(t, 1, u.Used.SMSInternational)
	require.Equal(t, 1, u.Used.SMSBusiestRecipient)
	require.Equal(t, 3, h.Count(`SELECT count(*) FROM intake_day_counts WHERE tenant_id = $1 AND counter LIKE 'sms:to:%'`, h.Tenant.ID),
		"D1, D5 (inline), and the one of D3/D4 that went: a refused SMS gives its counters back")
}

// TestLimitsOverview: operators see every tenant's limits and day's usage
// on one page, with the tenants that hit a limit today; tenant users get
// no such page.
func TestLimitsOverview(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	h := c.Herald
	require.NoError(t, h.Services.Limits.Set(h.Ctx, app.CLIActor, h.Tenant.ID, app.LimitInput{DailyEmail: "1"}))
	email := func(id string) map[string]any {
		return webtest.WithRecipient(id, "BK-"+id, map[string]any{"name": "Anna Schmidt", "email": "anna@example.com"}, "EMAIL")
	}
	h.Submit(email("overview-1"))
	require.Equal(t, http.StatusTooManyRequests, h.Request(http.MethodPost, "/api/v1/notifications", email("overview-2"), nil))

	doc := c.signIn(asOperator).page("/limits")
	acme := doc.Find(`tr[data-tenant="acme"]`)
	require.Equal(t, 1, acme.Length())
	daily := acme.Find(`[data-limit="daily_email"]`)
	require.Equal(t, "1 of 1", text(daily))
	require.True(t, daily.HasClass("limit-reached"))
	require.Equal(t, "0 of 1000", text(acme.Find(`[data-limit="daily_sms"]`)))
	require.Equal(t, fmt.Sprint(app.DefaultIntakePerMinute), text(acme.Find(`[data-limit="intake_per_minute"]`)))
	require.Contains(t, text(acme.Find(`[data-hit]`)), "daily_limit_exceeded")
	require.Contains(t, text(acme.Find(`[data-hit]`)), "daily EMAIL cap reached")

	globex := doc.Find(`tr[data-tenant="globex"]`)
	require.Equal(t, 1, globex.Length())
	require.Equal(t, "0 of 20000", text(globex.Find(`[data-limit="daily_email"]`)))
	require.Empty(t, text(globex.Find(`[data-hit]`)), "globex hit nothing")

	for _, who := range []string{asManager, asSupport} {
		_, resp := c.signIn(who).get("/limits")
		require.Contains(t, []int{http.StatusForbidden, http.StatusNotFound}, resp.StatusCode, "%s sees no other tenant's limits", who)
	}
}
