package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/jobs"
	"github.com/heraldhq/herald/web"
)

// pipeline is Herald wired as main wires it, on its own database, with a
// River worker client working every queue and the HTTP app in front.
type pipeline struct {
	t      *testing.T
	ctx    context.Context
	svc    *wire.Services
	http   *fiber.App
	server *web.Server
	worker *river.Client[pgx.Tx]
	tenant *app.Tenant
	key    string
	cfg    app.Config
	log    *slog.Logger
}

type pipelineOpts struct {
	env map[string]string
	// noWorkers leaves jobs in the queue, for tests of what intake stores.
	noWorkers bool
	// providers replace the wired providers by name before workers start.
	providers provider.Set
	// sns, when set, stands in for Amazon SNS: the web server trusts its
	// certificate.
	sns *awsnotifytest.SNS
}

func newPipeline(t *testing.T, opts pipelineOpts) *pipeline {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL":         dbtest.URL(dbtest.CreateDatabase(t)),
		"HERALD_DATA_DIR":      t.TempDir(),
		"HERALD_SANDBOX_DELAY": "20ms",
		"HERALD_DB_MAX_CONNS":  "12",
	}
	for k, v := range opts.env {
		env[k] = v
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	var logOut io.Writer = io.Discard
	if testing.Verbose() {
		logOut = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	svc, err := wire.Connect(ctx, cfg, log, "test")
	require.NoError(t, err)
	t.Cleanup(svc.Close)

	p := &pipeline{t: t, ctx: ctx, svc: svc, cfg: cfg, log: log}
	// Console users sign in in many tests; bcrypt's lowest cost keeps that fast.
	svc.Users.PasswordCost = 4
	server := svc.Web(version)
	p.server = server
	if opts.sns != nil {
		server.SNSVerifier = opts.sns.Verifier
	}
	p.http = server.App()
	p.tenant, err = svc.Tenants.Create(ctx, app.CLIActor, app.TenantInput{Slug: "acme", Name: "Acme Tours", Plan: app.PlanPro})
	require.NoError(t, err)
	_, p.key, err = svc.APIKeys.Create(ctx, app.CLIActor, p.tenant.ID, "booking system")
	require.NoError(t, err)

	for name, prov := range opts.providers {
		svc.Dispatcher.Providers[name] = prov
	}
	if !opts.noWorkers {
		p.worker = p.startWorkers()
	}
	return p
}

// startWorkers starts one more River client working every queue; tests of
// shared state run two.
func (p *pipeline) startWorkers() *river.Client[pgx.Tx] {
	p.t.Helper()
	cfg, log := p.cfg, p.log
	worker, err := p.svc.StartWorkers(p.ctx, jobs.Config{
		Workers: cfg.Workers, Logger: log, FetchPollInterval: 100 * time.Millisecond,
		BackoffFunc: func(int) time.Duration { return 20 * time.Millisecond },
	})
	require.NoError(p.t, err)
	p.t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		jobs.Stop(stopCtx, worker, log)
	})
	return worker
}

// request sends an API request with the tenant's key and decodes the JSON answer.
func (p *pipeline) request(method, path string, body any, out any) int {
	p.t.Helper()
	return p.requestWithKey(p.key, method, path, body, out)
}

func (p *pipeline) requestWithKey(key, method, path string, body any, out any) int {
	p.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(p.t, err)
		r = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.http.Test(req, -1)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	if out != nil && len(raw) > 0 {
		require.NoError(p.t, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return resp.StatusCode
}

type apiErr struct {
	Error struct{ Code, Message, Field string }
}

// notification is a valid BOOKING_CONFIRMED request for one passenger.
func notification(eventID, booking string) map[string]any {
	return map[string]any{
		"event_id":      eventID,
		"trigger_event": "BOOKING_CONFIRMED",
		"recipients": []map[string]any{{
			"name": "Anna Schmidt", "phone": "+49 151 23456789", "email": "anna@example.com", "locale": "de-DE",
		}},
		"context": map[string]any{
			"passenger_name": "Anna Schmidt", "tour_name": "Gardasee", "departure_date": "2027-04-12",
			"booking_reference": booking, "deposit_amount": "150,00 €",
		},
		"conversation_context": map[string]any{"type": "booking", "id": booking},
	}
}

func (p *pipeline) submit(body map[string]any) uuid.UUID {
	p.t.Helper()
	var res struct {
		ID     uuid.UUID
		Status string
	}
	status := p.request(http.MethodPost, "/api/v1/notifications", body, &res)
	require.Equal(p.t, http.StatusAccepted, status)
	return res.ID
}

type eventView struct {
	ID       uuid.UUID
	Status   string
	Version  int
	Messages []*app.Message
}

func (p *pipeline) event(id uuid.UUID) eventView {
	p.t.Helper()
	var e eventView
	require.Equal(p.t, http.StatusOK, p.request(http.MethodGet, "/api/v1/notifications/"+id.String(), nil, &e))
	return e
}

// waitMessages waits until the event's messages satisfy ok.
func (p *pipeline) waitMessages(id uuid.UUID, what string, ok func([]*app.Message) bool) []*app.Message {
	p.t.Helper()
	var last []*app.Message
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		last = p.event(id).Messages
		if ok(last) {
			return last
		}
		time.Sleep(30 * time.Millisecond)
	}
	p.t.Fatalf("timed out waiting for %s; messages: %s", what, describeMessages(last))
	return nil
}

func describeMessages(ms []*app.Message) string {
	var b strings.Builder
	for _, m := range ms {
		reason := ""
		if m.FailedReason != nil {
			reason = *m.FailedReason
		}
		fmt.Fprintf(&b, "[%s %s %s] ", m.Channel, m.Status, reason)
	}
	return b.String()
}

func allStatus(status string) func([]*app.Message) bool {
	return func(ms []*app.Message) bool {
		if len(ms) == 0 {
			return false
		}
		for _, m := range ms {
			if m.Status != status {
				return false
			}
		}
		return true
	}
}

func (p *pipeline) count(query string, args ...any) int {
	p.t.Helper()
	var n int
	require.NoError(p.t, p.svc.Store.InPlatform(p.ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(p.ctx, query, args...).Scan(&n)
	}))
	return n
}

// exec runs a statement in the platform scope, for tests that set up state
// no service offers to set.
func (p *pipeline) exec(query string, args ...any) {
	p.t.Helper()
	require.NoError(p.t, p.svc.Store.InPlatform(p.ctx, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(p.ctx, query, args...)
		return err
	}))
}

func (p *pipeline) timeline(messageID uuid.UUID) []*app.MessageEvent {
	p.t.Helper()
	var d struct{ Timeline []*app.MessageEvent }
	require.Equal(p.t, http.StatusOK, p.request(http.MethodGet, "/api/v1/messages/"+messageID.String(), nil, &d))
	return d.Timeline
}

func TestPipeline_EndToEnd(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, pipelineOpts{})

	id := p.submit(notification("evt-1", "BK-1"))
	ms := p.waitMessages(id, "READ on both channels", allStatus(app.MessageRead))
	require.Len(t, ms, 2, "BOOKING_CONFIRMED goes out on e-mail and WhatsApp")

	byChannel := map[app.Channel]*app.Message{}
	for _, m := range ms {
		byChannel[m.Channel] = m
	}
	email, wa := byChannel[app.Email], byChannel[app.WhatsApp]
	require.NotNil(t, email)
	require.NotNil(t, wa)
	require.Equal(t, "anna@example.com", email.ToAddress)
	require.Equal(t, "+4915123456789", wa.ToAddress, "the phone is stored in E.164")
	require.Contains(t, wa.Body, "Gardasee", "the body is rendered from the context")
	require.Contains(t, email.Body, "150,00 €")
	require.Equal(t, "de-DE", *email.Locale)
	require.NotNil(t, email.SentAt)
	require.NotNil(t, email.DeliveredAt)
	require.NotNil(t, email.ReadAt)
	require.Equal(t, 1, email.Attempts)
	require.True(t, strings.HasPrefix(*email.ExternalMessageID, "sbx_"))
	require.Equal(t, "booking/BK-1:BOOKING_CONFIRMED:EMAIL:"+email.TemplateID.String()+":"+email.ContactID.String(), email.IdempotencyKey)
	require.Equal(t, "ROUTED", p.event(id).Status)

	var statuses []string
	for _, e := range p.timeline(email.ID) {
		if e.ToStatus != nil {
			statuses = append(statuses, *e.ToStatus)
		}
	}
	require.Equal(t, []string{"QUEUED", "SENT", "DELIVERED", "READ"}, statuses, "the timeline has every step")

	t.Run("MessagesByBooking", func(t *testing.T) {
		var res struct{ Messages []*app.Message }
		require.Equal(t, http.StatusOK, p.request(http.MethodGet, "/api/v1/messages?booking_id=BK-1", nil, &res))
		require.Len(t, res.Messages, 2)
	})

	t.Run("UsageCounted", func(t *testing.T) {
		require.Equal(t, 1, p.count(`SELECT count FROM usage_counters WHERE tenant_id = $1 AND channel = 'EMAIL'`, p.tenant.ID))
	})

	t.Run("SameBookingConfirmedAgainUnderNewEventID", func(t *testing.T) {
		id2 := p.submit(notification("evt-1-again", "BK-1"))
		require.Eventually(t, func() bool { return p.event(id2).Status == app.EventRouted }, 10*time.Second, 20*time.Millisecond)
		require.Empty(t, p.event(id2).Messages, "a booking is confirmed once, whatever the event id")
		require.Equal(t, 2, p.count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, p.tenant.ID))
	})

	t.Run("ManualResendCreatesSecondMessage", func(t *testing.T) {
		var res struct{ Messages []*app.Message }
		require.Equal(t, http.StatusAccepted, p.request(http.MethodPost, "/api/v1/bookings/BK-1/resend", map[string]any{"channel": "EMAIL"}, &res))
		require.Len(t, res.Messages, 1)
		resent := res.Messages[0]
		require.True(t, strings.HasPrefix(resent.IdempotencyKey, "manual:BK-1:EMAIL:"))
		require.NotNil(t, resent.TriggeredBy)
		require.Eventually(t, func() bool {
			var d struct{ Status string }
			p.request(http.MethodGet, "/api/v1/messages/"+resent.ID.String(), nil, &d)
			return d.Status == app.MessageRead
		}, 10*time.Second, 20*time.Millisecond)

		var list struct{ Messages []*app.Message }
		p.request(http.MethodGet, "/api/v1/messages?booking_id=BK-1", nil, &list)
		require.Len(t, list.Messages, 3, "original and resend both appear")
		var original *app.Message
		for _, m := range list.Messages {
			if m.ID == email.ID {
				original = m
			}
		}
		require.Equal(t, app.MessageRead, original.Status, "the original is untouched")
		require.Equal(t, 1, p.count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'message.resend'`, p.tenant.ID))
	})
}

func TestPipeline_Intake(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, pipelineOpts{noWorkers: true})

	t.Run("DuplicateEventID", func(t *testing.T) {
		id := p.submit(notification("dup-1", "BK-D"))
		var res struct {
			ID        uuid.UUID
			Duplicate bool
		}
		require.Equal(t, http.StatusOK, p.request(http.MethodPost, "/api/v1/notifications", notification("dup-1", "BK-D"), &res))
		require.True(t, res.Duplicate)
		require.Equal(t, id, res.ID)
		require.Equal(t, 1, p.count(`SELECT count(*) FROM events WHERE source_event_id = 'dup-1'`))
		require.Equal(t, 1, p.count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, id.String()))
	})

	t.Run("DuplicateEventIDConcurrent", func(t *testing.T) {
		const n = 8
		var wg sync.WaitGroup
		ids := make([]string, n)
		codes := make([]int, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var res struct{ ID string }
				codes[i] = p.request(http.MethodPost, "/api/v1/notifications", notification("race-1", "BK-R"), &res)
				ids[i] = res.ID
			}()
		}
		wg.Wait()
		accepted := 0
		for i := range n {
			require.Equal(t, ids[0], ids[i], "every racer gets the same id")
			if codes[i] == http.StatusAccepted {
				accepted++
			}
		}
		require.Equal(t, 1, accepted, "exactly one request created the event")
		require.Equal(t, 1, p.count(`SELECT count(*) FROM events WHERE source_event_id = 'race-1'`))
		require.Equal(t, 1, p.count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, ids[0]))
	})

	t.Run("Redaction", func(t *testing.T) {
		body := notification("redact-1", "BK-S")
		body["context"].(map[string]any)["api_token"] = "tok_live_123"
		body["context"].(map[string]any)["meta"] = map[string]any{"Authorization": "Bearer x", "ok": "keep"}
		id := p.submit(body)
		var stored string
		require.NoError(t, p.svc.Store.InPlatform(p.ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(p.ctx, `SELECT context::text FROM events WHERE id = $1`, id).Scan(&stored)
		}))
		require.NotContains(t, stored, "tok_live_123")
		require.NotContains(t, stored, "Bearer x")
		require.Contains(t, stored, `"keep"`)
		require.Contains(t, stored, "<redacted>")
		require.Equal(t, 1, p.count(`SELECT count(*) FROM audit_log WHERE action = 'notification.redacted' AND target_id = $1
			AND metadata->'paths' = '["api_token", "meta.Authorization"]'::jsonb`, id.String()))
	})

	before := p.count(`SELECT count(*) FROM events`)
	for name, tc := range map[string]struct {
		mutate func(map[string]any)
		raw    string
		status int
		code   string
		field  string
	}{
		"UnknownEvent":   {mutate: func(b map[string]any) { b["trigger_event"] = "BOOKING_EXPLODED" }, status: 422, code: "unknown_event", field: "trigger_event"},
		"MissingVar":     {mutate: func(b map[string]any) { delete(b["context"].(map[string]any), "tour_name") }, status: 422, code: "missing_variable", field: "context.tour_name"},
		"NoRecipient":    {mutate: func(b map[string]any) { b["recipients"] = []any{} }, status: 422, code: "no_recipient", field: "recipients"},
		"BadPhone":       {mutate: func(b map[string]any) { b["recipients"] = []any{map[string]any{"name": "A", "phone": "0151 123"}} }, status: 422, code: "invalid_phone", field: "recipients[0].phone"},
		"BadEmail":       {mutate: func(b map[string]any) { b["recipients"] = []any{map[string]any{"name": "A", "email": "anna@"}} }, status: 422, code: "invalid_email", field: "recipients[0].email"},
		"NoAddress":      {mutate: func(b map[string]any) { b["recipients"] = []any{map[string]any{"name": "A"}} }, status: 422, code: "no_address", field: "recipients[0]"},
		"UnknownChannel": {mutate: func(b map[string]any) { b["channels"] = []string{"EMAIL", "PIGEON"} }, status: 422, code: "unknown_channel", field: "channels[1]"},
		"PastSendAt":     {mutate: func(b map[string]any) { b["send_at"] = time.Now().Add(-time.Minute).Format(time.RFC3339) }, status: 422, code: "send_at_in_past", field: "send_at"},
		"TooLarge":       {mutate: func(b map[string]any) { b["context"].(map[string]any)["notes"] = strings.Repeat("x", 17000) }, status: 413, code: "payload_too_large"},
		"TenantInBody":   {mutate: func(b map[string]any) { b["tenant_id"] = uuid.NewString() }, status: 400, code: "unknown_field", field: "tenant_id"},
		"MissingEventID": {mutate: func(b map[string]any) { delete(b, "event_id") }, status: 422, code: "missing_event_id", field: "event_id"},
		"BadContextType": {mutate: func(b map[string]any) { b["conversation_context"] = map[string]any{"type": "cruise", "id": "x"} }, status: 422, code: "invalid_conversation_context", field: "conversation_context.type"},
		"NotJSON":        {raw: `{"event_id": `, status: 400, code: "malformed_json"},
	} {
		t.Run("Invalid/"+name, func(t *testing.T) {
			var body any = tc.raw
			if tc.mutate != nil {
				b := notification("bad-"+name, "BK-X")
				tc.mutate(b)
				body = b
			}
			var res apiErr
			require.Equal(t, tc.status, p.request(http.MethodPost, "/api/v1/notifications", body, &res))
			require.Equal(t, tc.code, res.Error.Code)
			require.Equal(t, tc.field, res.Error.Field)
			require.NotEmpty(t, res.Error.Message)
		})
	}
	t.Run("InvalidStoresNothing", func(t *testing.T) {
		require.Equal(t, before, p.count(`SELECT count(*) FROM events`))
	})

	t.Run("OtherTenantGets404", func(t *testing.T) {
		id := p.submit(notification("mine-1", "BK-M"))
		other, err := p.svc.Tenants.Create(p.ctx, app.CLIActor, app.TenantInput{Slug: "other", Name: "Other"})
		require.NoError(t, err)
		_, otherKey, err := p.svc.APIKeys.Create(p.ctx, app.CLIActor, other.ID, "k")
		require.NoError(t, err)
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/notifications/" + id.String()},
			{http.MethodPatch, "/api/v1/notifications/" + id.String()},
			{http.MethodDelete, "/api/v1/notifications/" + id.String()},
			{http.MethodPost, "/api/v1/notifications/" + id.String() + "/approve"},
			{http.MethodGet, "/api/v1/notifications/not-a-uuid"},
		} {
			var res apiErr
			body := any(nil)
			if c.method == http.MethodPatch {
				body = map[string]any{"send_at": time.Now().Add(time.Hour)}
			}
			require.Equal(t, http.StatusNotFound, p.requestWithKey(otherKey, c.method, c.path, body, &res), c.method+" "+c.path)
			require.Equal(t, app.ENOTFOUND, res.Error.Code)
		}
		var list struct{ Messages []any }
		require.Equal(t, http.StatusOK, p.requestWithKey(otherKey, http.MethodGet, "/api/v1/messages?booking_id=BK-M", nil, &list))
		require.Empty(t, list.Messages)
		require.Equal(t, app.EventReceived, p.event(id).Status, "the owner's event is untouched")
	})
}

func TestAPI_EventsRegistry(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, pipelineOpts{noWorkers: true})
	var res struct {
		Events []struct {
			TriggerEvent     string         `json:"trigger_event"`
			Channels         []string       `json:"channels"`
			FallbackChain    []string       `json:"fallback_chain"`
			Variables        []string       `json:"variables"`
			RequiresApproval bool           `json:"requires_approval"`
			SampleContext    map[string]any `json:"sample_context"`
		}
	}
	require.Equal(t, http.StatusOK, p.request(http.MethodGet, "/api/v1/events", nil, &res))
	require.Len(t, res.Events, 22)
	for _, e := range res.Events {
		require.NotEmpty(t, e.Channels, e.TriggerEvent)
		for _, v := range e.Variables {
			require.Contains(t, e.SampleContext, v, "%s's sample context fills %s", e.TriggerEvent, v)
		}
		if e.TriggerEvent == "INCIDENT_BROADCAST" {
			require.True(t, e.RequiresApproval)
			require.Equal(t, []string{"WHATSAPP", "SMS", "EMAIL"}, e.FallbackChain)
		}
	}
}
