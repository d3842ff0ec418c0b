package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/jobs"
	"github.com/heraldhq/herald/web/webtest"
)

// The staff-alert tests run Herald with its workers (real River), its
// API and console over HTTP, the staff e-mail through the SES wire fake,
// and Slack and Teams as httptest servers that check the payloads those
// services document: Slack's incoming webhook takes {"text", "blocks"}
// (Block Kit), Teams' incoming webhook (and Workflows' "when a webhook
// request is received") a message with one Adaptive Card attachment.

// chatFake is a Slack or Teams incoming webhook: it checks each post's
// shape, keeps the posts, and refuses the first failFirst with a 500.
type chatFake struct {
	*httptest.Server
	mu        sync.Mutex
	posts     []map[string]any
	problems  []string
	failFirst int
	calls     int
}

func newChatFake(t *testing.T, check func(map[string]any) string, status int) *chatFake {
	f := &chatFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		problem := ""
		switch {
		case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
			problem = "not a JSON POST"
		case json.Unmarshal(raw, &body) != nil:
			problem = "not JSON"
		default:
			problem = check(body)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls++
		if problem != "" {
			f.problems = append(f.problems, problem)
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		if f.calls <= f.failFirst {
			http.Error(w, "try later", http.StatusInternalServerError)
			return
		}
		f.posts = append(f.posts, body)
		w.WriteHeader(status)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *chatFake) received() ([]map[string]any, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any{}, f.posts...), append([]string{}, f.problems...)
}

// slackShape checks a Slack incoming-webhook message: text, and blocks
// of known types with their text objects.
func slackShape(b map[string]any) string {
	if s, _ := b["text"].(string); s == "" {
		return "slack: text missing"
	}
	blocks, ok := b["blocks"].([]any)
	if !ok || len(blocks) == 0 {
		return "slack: blocks missing"
	}
	for _, raw := range blocks {
		blk, _ := raw.(map[string]any)
		switch blk["type"] {
		case "header", "section":
			txt, _ := blk["text"].(map[string]any)
			want := map[any]string{"header": "plain_text", "section": "mrkdwn"}[blk["type"]]
			if txt["type"] != want || txt["text"] == "" {
				return fmt.Sprintf("slack: %v block's text is not %s", blk["type"], want)
			}
		case "context":
			if els, _ := blk["elements"].([]any); len(els) == 0 {
				return "slack: context without elements"
			}
		default:
			return fmt.Sprintf("slack: unknown block %v", blk["type"])
		}
	}
	return ""
}

// teamsShape checks a Teams webhook message carrying an Adaptive Card.
func teamsShape(b map[string]any) string {
	if b["type"] != "message" {
		return "teams: type is not message"
	}
	atts, _ := b["attachments"].([]any)
	if len(atts) != 1 {
		return "teams: want one attachment"
	}
	att, _ := atts[0].(map[string]any)
	if att["contentType"] != "application/vnd.microsoft.card.adaptive" {
		return "teams: contentType is not an adaptive card"
	}
	card, _ := att["content"].(map[string]any)
	if card["type"] != "AdaptiveCard" || card["version"] == nil || card["$schema"] == nil {
		return "teams: content is not an AdaptiveCard"
	}
	body, _ := card["body"].([]any)
	if len(body) == 0 {
		return "teams: card body empty"
	}
	for _, raw := range body {
		el, _ := raw.(map[string]any)
		if el["type"] != "TextBlock" || el["text"] == nil {
			return "teams: body element is not a TextBlock"
		}
	}
	return ""
}

// cardText is the text of a Teams card, joined.
func cardText(b map[string]any) string {
	card := b["attachments"].([]any)[0].(map[string]any)["content"].(map[string]any)
	var parts []string
	for _, el := range card["body"].([]any) {
		parts = append(parts, el.(map[string]any)["text"].(string))
	}
	return strings.Join(parts, "\n")
}

type alertBundle struct {
	*webtest.Herald
	clock        *timeClock
	slack, teams *chatFake
	mail         *sesRecorder
}

func setupAlerts(t *testing.T, configure func(*app.Config)) *alertBundle {
	t.Helper()
	// The clock starts now: jobs the pipeline schedules at its "now" must
	// be due for River, which reads the database's clock. Tests move it
	// forward only after the sends they wait for.
	b := &alertBundle{clock: &timeClock{now: time.Now()}, mail: newSESRecorder(t)}
	b.slack = newChatFake(t, slackShape, http.StatusOK)
	b.teams = newChatFake(t, teamsShape, http.StatusAccepted)
	b.Herald = webtest.New(t, webtest.Options{Now: b.clock.Now,
		Providers: provider.Set{"ses": &ses.Provider{Endpoint: b.mail.URL}},
		Config: func(cfg *app.Config) {
			cfg.WebhookAllowPrivate = true
			if configure != nil {
				configure(cfg)
			}
		}})
	useProvider(t, b.Herald, app.Email, "ses")
	var out map[string]any
	require.Equal(t, http.StatusOK, b.Request(http.MethodPut, "/api/v1/alerts/settings", map[string]any{
		"staff_emails":      []string{"ops@acme.example", "Night@Acme.example"},
		"slack_webhook_url": b.slack.URL + "/services/T000/B000/secret-slack",
		"teams_webhook_url": b.teams.URL + "/workflows/secret-teams",
	}, &out))
	return b
}

// alerts returns the tenant's alerts of a kind.
func (b *alertBundle) alerts(kind string) []*app.StaffAlert {
	b.T.Helper()
	all, err := b.Services.Alerts.Recent(b.Ctx, b.Tenant.ID, 100)
	require.NoError(b.T, err)
	var out []*app.StaffAlert
	for _, a := range all {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

// delivered waits until the alert reached every target: two staff
// addresses, Slack and Teams.
func (b *alertBundle) delivered(a *app.StaffAlert) {
	b.T.Helper()
	b.WaitUntil("the alert reached its four targets", func() bool {
		return b.Count(`SELECT cardinality(delivered) FROM staff_alerts WHERE id = $1`, a.ID) == 4
	})
}

func (b *alertBundle) check() int {
	b.T.Helper()
	n, err := b.Services.Alerts.CheckAll(b.Ctx)
	require.NoError(b.T, err)
	return n
}

func TestAlerts_StaffHearFirst(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, func(cfg *app.Config) { cfg.Quotas[app.PlanPro][app.WhatsApp] = 2 })

	t.Run("QuotaAt90Percent", func(t *testing.T) {
		for i := range 2 {
			id := b.Submit(webtest.Notification(fmt.Sprintf("quota-%d", i), fmt.Sprintf("BK-Q%d", i)))
			// Polled in the database: the API's buckets stand still with
			// the tests' clock.
			b.WaitUntil("the WhatsApp message is sent", func() bool {
				return b.Count(`SELECT count(*) FROM messages WHERE event_id = $1 AND channel = 'WHATSAPP' AND status <> 'QUEUED'`, id) == 1
			})
		}
		b.check()
		quota := b.alerts(app.AlertQuota)
		require.Len(t, quota, 1)
		require.Equal(t, "WHATSAPP quota 100% used", quota[0].Title)
		b.delivered(quota[0])
	})

	t.Run("SuspendedAccountEverywhereOnce", func(t *testing.T) {
		sms := b.ActiveAccount(app.SMS)
		require.NoError(t, b.Services.Accounts.SetStatus(b.Ctx, app.CLIActor, b.Tenant.ID, sms.ID, app.AccountSuspended, "Carrier blocked the sender id"))
		// The periodic job, inserted as River's leader inserts it.
		_, err := b.Worker.Insert(b.Ctx, jobs.AlertCheckArgs{}, nil)
		require.NoError(t, err)
		b.WaitUntil("the suspension is raised", func() bool { return len(b.alerts(app.AlertAccountSuspended)) == 1 })
		b.delivered(b.alerts(app.AlertAccountSuspended)[0])
		a := b.alerts(app.AlertAccountSuspended)[0]
		require.ElementsMatch(t, []string{"email:ops@acme.example", "email:night@acme.example", "slack", "teams"}, []string(a.Delivered))

		slack, problems := b.slack.received()
		require.Empty(t, problems)
		require.Len(t, postsWith(slack, "is suspended"), 1)
		teams, problems := b.teams.received()
		require.Empty(t, problems)
		require.Len(t, postsWith(teams, "Carrier blocked the sender id"), 1)
		require.Contains(t, b.mail.subjectTo(t, "ops@acme.example"), "is suspended")

		require.Zero(t, b.check(), "still suspended, within the cool-down: no second alert")
		b.clock.Set(b.clock.Now().Add(app.AlertCooldown + time.Minute))
		require.Equal(t, 1, b.check(), "after the cool-down the condition is raised again")
		require.NoError(t, b.Services.Accounts.SetStatus(b.Ctx, app.CLIActor, b.Tenant.ID, sms.ID, app.AccountActive, ""))
	})

	t.Run("ConcurrentChecksRaiseOnce", func(t *testing.T) {
		id := b.Submit(incidentBroadcast("held-1"))
		require.Equal(t, app.EventAwaitingApproval, b.Event(id).Status)
		require.Zero(t, len(b.alerts(app.AlertApprovalWaiting)), "not waiting long enough yet")
		b.clock.Set(b.clock.Now().Add(31 * time.Minute))
		var wg sync.WaitGroup
		counts := make([]int, 4)
		for i := range counts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				counts[i], _ = b.Services.Alerts.Check(b.Ctx, b.Tenant.ID)
			}()
		}
		wg.Wait()
		waiting := b.alerts(app.AlertApprovalWaiting)
		require.Len(t, waiting, 1, "four checks at once raise one alert")
		require.Contains(t, waiting[0].Title, "INCIDENT_BROADCAST held-1 waits for approval")
		b.delivered(waiting[0])
	})

	t.Run("UnansweredReply", func(t *testing.T) {
		_, err := b.Services.Inbound.Record(b.Ctx, b.Tenant.ID, app.InboundMessage{Channel: app.SMS, Provider: "sandbox",
			ExternalID: "in-" + uuid.NewString(), From: "+4915111122233", Kind: "text", Body: "Is the bus late?"})
		require.NoError(t, err)
		b.check()
		require.Empty(t, b.alerts(app.AlertUnanswered), "a fresh reply is not an alert")
		b.clock.Set(b.clock.Now().Add(61 * time.Minute))
		b.check()
		replies := b.alerts(app.AlertUnanswered)
		require.Len(t, replies, 1)
		b.delivered(replies[0])
		b.check()
		require.Len(t, b.alerts(app.AlertUnanswered), 1, "one alert per reply")

		// A reply staff resolved in the inbox is answered, as the inbox counts.
		_, err = b.Services.Inbound.Record(b.Ctx, b.Tenant.ID, app.InboundMessage{Channel: app.SMS, Provider: "sandbox",
			ExternalID: "in-" + uuid.NewString(), From: "+4915111144455", Kind: "text", Body: "Can I bring my dog?"})
		require.NoError(t, err)
		var conv uuid.UUID
		require.NoError(t, b.Services.Store.InPlatform(b.Ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.Ctx, `SELECT conversation_id FROM inbound_messages WHERE tenant_id = $1 AND body = 'Can I bring my dog?'`, b.Tenant.ID).Scan(&conv)
		}))
		require.Equal(t, http.StatusOK, b.Request(http.MethodPost, "/api/v1/conversations/"+conv.String()+"/status", map[string]any{"status": "RESOLVED"}, nil))
		b.clock.Set(b.clock.Now().Add(61 * time.Minute))
		b.check()
		require.Len(t, b.alerts(app.AlertUnanswered), 1, "a resolved conversation raises no alert")
	})

}

// TestAlerts_Digest sends the daily digest at the tenant's local time,
// once per local day, with tomorrow's departures and their messages.
func TestAlerts_Digest(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, nil)
	var out map[string]any
	require.Equal(t, http.StatusOK, b.Request(http.MethodPut, "/api/v1/alerts/settings", map[string]any{"digest_time": "07:30"}, &out))
	require.Equal(t, "07:30", out["digest_time"])
	require.Equal(t, "Europe/Berlin", out["timezone"])

	// The digest is due an hour from the clock's start, in Berlin.
	start := b.clock.Now()
	due := start.Add(time.Hour).In(mustZone(t, "Europe/Berlin"))
	require.Equal(t, http.StatusOK, b.Request(http.MethodPut, "/api/v1/alerts/settings", map[string]any{"digest_time": due.Format("15:04")}, &out))
	tomorrow := due.AddDate(0, 0, 1).Format(time.DateOnly)
	body := webtest.Notification("dep-1", "BK-D1")
	body["context"].(map[string]any)["departure_date"] = tomorrow
	body["context"].(map[string]any)["tour_name"] = "Lake Garda"
	id := b.Submit(body)
	// E-mail (SES) and WhatsApp (the sandbox) are sent; the sandbox's
	// receipt is due on the clock, which then moves past it.
	b.WaitUntil("both messages are sent", func() bool {
		return b.Count(`SELECT count(*) FROM messages WHERE event_id = $1 AND status = 'SENT'`, id) == 2
	})
	b.clock.Set(start.Add(time.Second))
	b.WaitUntil("the WhatsApp message is delivered", func() bool {
		return b.Count(`SELECT count(*) FROM messages WHERE event_id = $1 AND channel = 'WHATSAPP' AND status IN ('DELIVERED', 'READ')`, id) == 1
	})

	// A departure change asks its passengers to confirm; Ben has not.
	def, _ := app.BuiltInEvent("DEPARTURE_CHANGED")
	change := map[string]any{}
	for k, v := range def.Sample {
		change[k] = v
	}
	change["departure_date"], change["tour_name"] = tomorrow, "Dolomites"
	changed := b.Submit(map[string]any{"event_id": "dep-2", "trigger_event": "DEPARTURE_CHANGED", "context": change, "channels": []string{"EMAIL"},
		"recipients": []map[string]any{{"name": "Ben", "email": "ben@example.com", "locale": "de-DE"}}})
	b.WaitUntil("the change's e-mail is planned", func() bool {
		return b.Count(`SELECT count(*) FROM messages WHERE event_id = $1`, changed) == 1
	})

	// A night coach leaves at 00:30 tomorrow in Berlin: in UTC, still
	// today. It is tomorrow's departure all the same.
	night := webtest.Notification("dep-3", "BK-D3")
	y, mo, dd := due.AddDate(0, 0, 1).Date()
	night["context"].(map[string]any)["departure_at"] = time.Date(y, mo, dd, 0, 30, 0, 0, mustZone(t, "Europe/Berlin")).UTC().Format(time.RFC3339)
	night["context"].(map[string]any)["tour_name"] = "Night coach"
	night["channels"] = []string{"EMAIL"}
	b.Submit(night)

	b.clock.Set(start.Add(59 * time.Minute))
	b.check()
	require.Empty(t, b.alerts(app.AlertDigest), "not yet the digest's time")
	b.clock.Set(start.Add(61 * time.Minute))
	b.check()
	b.check()
	digests := b.alerts(app.AlertDigest)
	require.Len(t, digests, 1, "one digest per local day")
	d := digests[0]
	require.Contains(t, d.Body, "Departures on "+tomorrow+": 3")
	require.Contains(t, d.Body, "- Night coach:", "departure_at read in the tenant's zone")
	require.Contains(t, d.Body, "- Lake Garda: 2 messages, 1 reached, 1 not reached, 0 failed\n", "a booking confirmation asks no one to confirm")
	require.Regexp(t, `- Dolomites: 1 messages, 0 reached, 1 not reached, 0 failed, 1 not acknowledged\n`, d.Body)
	require.Contains(t, d.Body, "Broadcasts waiting for approval: 0")
	b.delivered(d)
	teams, _ := b.teams.received()
	require.Contains(t, cardText(teams[len(teams)-1]), "Lake Garda")

	b.clock.Set(start.Add(25 * time.Hour))
	b.check()
	require.Len(t, b.alerts(app.AlertDigest), 2, "the next day has its own")
}

// TestAlerts_DeliveryRetriesOnlyFailedTargets: Teams refuses twice; the
// job retries, and Slack and the staff addresses get the alert once.
func TestAlerts_DeliveryRetriesOnlyFailedTargets(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, nil)
	b.teams.mu.Lock()
	b.teams.failFirst = 2
	b.teams.mu.Unlock()
	b.Submit(incidentBroadcast("held-r"))
	b.clock.Set(b.clock.Now().Add(31 * time.Minute))
	b.check()
	a := b.alerts(app.AlertApprovalWaiting)[0]
	b.delivered(a)
	slack, _ := b.slack.received()
	teams, _ := b.teams.received()
	require.Len(t, slack, 1, "Slack took it the first time and is not posted to again")
	require.Len(t, teams, 1)
	b.teams.mu.Lock()
	require.Equal(t, 3, b.teams.calls)
	b.teams.mu.Unlock()
	require.Len(t, b.mail.to("ops@acme.example"), 1)
}

// postsWith returns the posts whose JSON contains s.
func postsWith(posts []map[string]any, s string) []map[string]any {
	var out []map[string]any
	for _, p := range posts {
		raw, _ := json.Marshal(p)
		if strings.Contains(string(raw), s) {
			out = append(out, p)
		}
	}
	return out
}

func mustZone(t *testing.T, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// TestAPI_AlertSettings: the settings API never answers a webhook URL,
// seals it at rest, and refuses bad input storing nothing.
func TestAPI_AlertSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const path = "/api/v1/alerts/settings"
	var got map[string]any
	require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path, nil, &got))
	require.Equal(t, float64(app.DefaultAlertApprovalMinutes), got["approval_minutes"])
	require.Equal(t, "", got["digest_time"])

	secret := "https://hooks.slack.com/services/T0001/B0001/very-secret-token"
	raw, _ := json.Marshal(map[string]any{"staff_emails": []string{"ops@acme.example"}, "slack_webhook_url": secret, "breaker_minutes": 5})
	req := httptest.NewRequest(http.MethodPut, path, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.Key)
	resp := b.do(t, req)
	answer, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	require.NotContains(t, string(answer), "very-secret-token")
	require.Contains(t, string(answer), `"slack":{"set":true,"host":"hooks.slack.com"}`)
	require.Zero(t, b.Count(`SELECT count(*) FROM alert_settings WHERE position('very-secret-token' IN encode(webhooks, 'escape')) > 0`), "sealed at rest")
	require.Zero(t, b.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%very-secret%'`), "the audit names the host only")

	before := b.Count(`SELECT count(*) FROM audit_log WHERE action = 'alert_settings.update'`)
	for _, tc := range []struct {
		name  string
		body  map[string]any
		code  string
		field string
	}{
		{"BadEmail", map[string]any{"staff_emails": []string{"not-an-address"}}, "invalid", "staff_emails"},
		{"NamedEmail", map[string]any{"staff_emails": []string{"Ops <ops@acme.example>"}}, "invalid", "staff_emails"},
		{"PlainHTTPInProdShape", map[string]any{"slack_webhook_url": "ftp://hooks.slack.com/x"}, "invalid", "slack_webhook_url"},
		{"MetadataAddress", map[string]any{"teams_webhook_url": "http://169.254.169.254/latest"}, "invalid", "teams_webhook_url"},
		{"ZeroMinutes", map[string]any{"breaker_minutes": 0}, "invalid", "breaker_minutes"},
		{"TooManyMinutes", map[string]any{"approval_minutes": 20000}, "invalid", "approval_minutes"},
		{"BadDigestTime", map[string]any{"digest_time": "25:00"}, "invalid", "digest_time"},
		{"UnknownField", map[string]any{"pager": "yes"}, "unknown_field", "pager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res apiErrorBody
			require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPut, path, tc.body, &res), "%+v", res)
			require.Equal(t, tc.code, res.Error.Code)
			require.Equal(t, tc.field, res.Error.Field, res.Error.Message)
		})
	}
	require.Equal(t, before, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'alert_settings.update'`))

	t.Run("EmptyURLRemoves", func(t *testing.T) {
		require.Equal(t, http.StatusOK, b.Request(http.MethodPut, path, map[string]any{"slack_webhook_url": ""}, &got))
		require.Equal(t, map[string]any{"set": false, "host": ""}, got["slack"])
		require.Equal(t, []any{"ops@acme.example"}, got["staff_emails"], "left out: kept")
		require.Equal(t, float64(5), got["breaker_minutes"])
	})
}

// to returns the SendEmail requests to addr.
func (r *sesRecorder) to(addr string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, b := range r.bodies {
		if to, _ := b["Destination"].(map[string]any)["ToAddresses"].([]any); len(to) > 0 && to[0] == addr {
			out = append(out, b)
		}
	}
	return out
}

// subjectTo returns the subject of the last SendEmail request to addr.
func (r *sesRecorder) subjectTo(t *testing.T, addr string) string {
	t.Helper()
	sent := r.to(addr)
	require.NotEmpty(t, sent, "no SendEmail to %s", addr)
	simple := sent[len(sent)-1]["Content"].(map[string]any)["Simple"].(map[string]any)
	return simple["Subject"].(map[string]any)["Data"].(string)
}

// downProvider fails every send as a provider that is down does.
type downProvider struct{}

func (downProvider) Send(context.Context, provider.Outbound) (string, error) {
	return "", &provider.Error{Code: "503", Class: provider.Transient, Reason: "service unavailable"}
}

// TestAlerts_BreakerOpen: a provider that stays down opens the account's
// breaker; once it has been open longer than the threshold, the staff
// hear of it, once for the spell.
func TestAlerts_BreakerOpen(t *testing.T) {
	t.Parallel()
	b := setupAlerts(t, func(cfg *app.Config) { cfg.BreakerThreshold = 1 })
	b.Services.Providers["sandbox"] = downProvider{}
	b.Submit(webtest.Notification("down-1", "BK-DOWN"))
	b.WaitUntil("the breaker opens", func() bool {
		return b.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'channel_account.breaker' AND metadata->>'to' = 'open'`, b.Tenant.ID) > 0
	})
	b.check()
	require.Empty(t, b.alerts(app.AlertBreakerOpen), "not open for 10 minutes yet")
	b.clock.Set(b.clock.Now().Add(11 * time.Minute))
	b.check()
	b.check()
	open := b.alerts(app.AlertBreakerOpen)
	require.Len(t, open, 1, "once for the spell")
	require.Contains(t, open[0].Title, "WHATSAPP provider of")
	b.delivered(open[0])
}
