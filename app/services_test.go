package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// The dispatcher and receipt tests run Herald's services as production wires
// them (wire.Connect) on a database of their own. Only the provider's far end
// is faked: Meta's Graph API is an httptest server answering with the
// payloads in provider/meta/testdata, so the real adapter builds, sends and
// classifies; the sandbox provider runs as it is.

// testStart is the injected clock's first reading: mid-month, so that a test
// can move to the next month without crossing it by accident.
var testStart = time.Date(2027, time.March, 15, 9, 0, 0, 0, time.UTC)

// Meta account settings of the tests' WhatsApp accounts.
const (
	metaPhoneNumberID = "106540352242922"
	metaAccessToken   = "EAAG-test-token"
)

// testClock is the services' Clock: it moves only when a test says so.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// pipelineBundle is one Herald, wired by wire.Connect, on its own database.
type pipelineBundle struct {
	ctx   context.Context
	cfg   app.Config
	svc   *wire.Services
	clock *testClock
	meta  *metaAPI
	keys  map[uuid.UUID]*app.APIKey
	// logs records what every process of the bundle logs.
	logs *webtest.Logs

	// The dispatcher's jitter and the timer of its retries to record a
	// send, which a test may replace (nil: the defaults).
	mu          sync.Mutex
	jitter      func(time.Duration) time.Duration
	recordTimer backoff.Timer
	// callTimer, when set before connect, ends the provider calls of the
	// dispatcher connect builds (app.DispatcherOptions.CallTimer).
	callTimer func(time.Duration, func()) func() bool
	// fetcher, when set, fetches the files by URL instead of the wired
	// fetcher (which refuses loopback addresses, as in production).
	fetcher app.FileFetcher
}

// bundleFetcher fetches through the bundle's fetcher when a test set one.
type bundleFetcher struct {
	b   *pipelineBundle
	def app.FileFetcher
}

func (f bundleFetcher) Fetch(ctx context.Context, rawURL string, limit int64) ([]byte, error) {
	f.b.mu.Lock()
	use := f.b.fetcher
	f.b.mu.Unlock()
	if use == nil {
		use = f.def
	}
	return use.Fetch(ctx, rawURL, limit)
}

// setupPipeline builds Herald with the test harness's configuration
// (webtest.Config, which a test keeps equal to the binary's defaults), with
// the sandbox's receipts far off and Meta at the fake; configure, when given, adjusts it
// before the services are built.
func setupPipeline(t *testing.T, configure func(*app.Config)) *pipelineBundle {
	t.Helper()
	meta := newMetaAPI(t)
	cfg := webtest.Config(dbtest.URL(dbtest.CreateDatabase(t)))
	cfg.LogLevel = slog.LevelWarn
	// The sandbox's receipts are due only for a test that sets its own
	// delay (or moves the clock that far): the others decide which
	// receipts their messages get.
	cfg.SandboxDelay = 1000 * time.Hour
	cfg.MetaBaseURL = meta.srv.URL
	cfg.ShutdownTimeout = 5 * time.Second
	if configure != nil {
		configure(&cfg)
	}
	b := &pipelineBundle{ctx: context.Background(), cfg: cfg, clock: &testClock{now: testStart}, meta: meta, keys: map[uuid.UUID]*app.APIKey{},
		logs: &webtest.Logs{}}
	b.svc = b.connect(t)
	return b
}

// connect wires one Herald process on the bundle's database, with its
// clock and its dispatcher's test hooks; tests of several worker processes
// connect more.
func (b *pipelineBundle) connect(t *testing.T) *wire.Services {
	t.Helper()
	var logOut io.Writer = io.Discard
	if testing.Verbose() {
		logOut = os.Stderr
	}
	log := slog.New(b.logs.Handler(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: b.cfg.LogLevel})))
	svc, err := wire.ConnectWith(b.ctx, b.cfg, log, "test", wire.Options{Now: b.clock.Now, Dispatcher: func(o *app.DispatcherOptions) {
		o.Jitter = func(n time.Duration) time.Duration {
			b.mu.Lock()
			f := b.jitter
			b.mu.Unlock()
			if f == nil {
				return rand.N(n)
			}
			return f(n)
		}
		o.RecordTimer = &hookTimer{b: b}
		o.Fetcher = bundleFetcher{b: b, def: o.Fetcher}
		o.CallTimer = b.callTimer
	}})
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	svc.Limiter.Now = b.clock.Now
	return svc
}

// setJitter replaces the dispatcher's jitter.
func (b *pipelineBundle) setJitter(f func(time.Duration) time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.jitter = f
}

// setRecordTimer replaces the timer of the dispatcher's retries to record a
// send.
func (b *pipelineBundle) setRecordTimer(timer backoff.Timer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recordTimer = timer
}

// hookTimer is the bundle's record timer, or a real one.
type hookTimer struct {
	b    *pipelineBundle
	real *time.Timer
	cur  backoff.Timer
}

func (h *hookTimer) Start(d time.Duration) {
	h.b.mu.Lock()
	h.cur = h.b.recordTimer
	h.b.mu.Unlock()
	if h.cur != nil {
		h.cur.Start(d)
		return
	}
	h.real = time.NewTimer(d)
}

func (h *hookTimer) Stop() {
	if h.cur != nil {
		h.cur.Stop()
	} else if h.real != nil {
		h.real.Stop()
	}
}

func (h *hookTimer) C() <-chan time.Time {
	if h.cur != nil {
		return h.cur.C()
	}
	return h.real.C
}

// apply takes a receipt the way production does, through the webhook's
// Accept and the applier's rounds until nothing is due, and returns what
// became of it.
func (b *pipelineBundle) apply(ctx context.Context, via app.Via, r provider.Receipt) (string, error) {
	in := []app.InboxReceipt{{Via: via, Receipt: r}}
	if err := b.svc.Receipts.Accept(ctx, in...); err != nil {
		return "", err
	}
	results, err := b.applyInbox(ctx)
	if err != nil {
		return "", err
	}
	for _, res := range results {
		if res.ReceiptID == in[0].Receipt.ReceiptID && res.Provider == in[0].Receipt.Provider {
			return res.Outcome, nil
		}
	}
	return "", fmt.Errorf("receipt %s was not settled (results %v)", in[0].Receipt.ReceiptID, results)
}

// applyConcurrently posts each receipt from a goroutine of its own, all
// at once, and each goroutine then runs the applier's rounds until
// nothing is due, as webhook posts and the appliers of several worker
// processes do together; it returns how many receipts ended with each
// outcome.
func (b *pipelineBundle) applyConcurrently(t *testing.T, via app.Via, rs ...provider.Receipt) map[string]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	errs := make([]error, len(rs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if errs[i] = b.svc.Receipts.Accept(b.ctx, app.InboxReceipt{Via: via, Receipt: r}); errs[i] != nil {
				return
			}
			results, err := b.applyInbox(b.ctx)
			errs[i] = err
			mu.Lock()
			defer mu.Unlock()
			for _, res := range results {
				counts[res.Outcome]++
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return counts
}

// applyInbox runs the applier's rounds until none is due, and returns
// what became of each receipt, in order.
func (b *pipelineBundle) applyInbox(ctx context.Context) ([]app.ReceiptResult, error) {
	var all []app.ReceiptResult
	for {
		round, err := b.svc.Receipts.ApplyInbox(ctx, 0)
		all = append(all, round.Results...)
		if err != nil || round.Taken == 0 {
			return all, err
		}
	}
}

// tenant creates a PRO tenant (sandbox accounts and default templates
// included) with an API key for its requests.
func (b *pipelineBundle) tenant(t *testing.T, slug string) *app.Tenant {
	t.Helper()
	tn, err := b.svc.Tenants.Create(b.ctx, app.CLIActor, app.TenantInput{Slug: slug, Name: "Tenant " + slug, Plan: app.PlanPro})
	require.NoError(t, err)
	k, _, err := b.svc.APIKeys.Create(b.ctx, app.CLIActor, tn.ID, "booking system")
	require.NoError(t, err)
	b.keys[tn.ID] = k
	return tn
}

// useMeta replaces the tenant's sandbox WhatsApp account with an ACTIVE Meta
// account pointed at the fake Graph API; config adds to its settings.
func (b *pipelineBundle) useMeta(t *testing.T, tn *app.Tenant, config app.Attrs) *app.ChannelAccount {
	t.Helper()
	sb := b.activeAccount(t, tn.ID, app.WhatsApp)
	require.NoError(t, b.svc.Accounts.SetStatus(b.ctx, app.CLIActor, tn.ID, sb.ID, app.AccountDisabled, ""))
	cfg := app.Attrs{"phone_number_id": metaPhoneNumberID, "waba_id": "102290129340398"}
	maps.Copy(cfg, config)
	a, err := b.svc.Accounts.Create(b.ctx, app.CLIActor, tn.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "WhatsApp " + tn.Slug, Activate: true, Config: cfg,
		Secrets: map[string]string{"access_token": metaAccessToken, "app_secret": "app-secret-" + tn.Slug},
	})
	require.NoError(t, err)
	// Meta approved the tenant's default templates for this account, as a
	// tenant would have them before going live.
	b.approveDefaults(t, tn, a)
	return a
}

func (b *pipelineBundle) activeAccount(t *testing.T, tenantID uuid.UUID, ch app.Channel) *app.ChannelAccount {
	t.Helper()
	var a *app.ChannelAccount
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tenantID, func(tx *db.Tx) (err error) {
		a, err = tx.ActiveAccount(b.ctx, tenantID, ch)
		return err
	}))
	return a
}

func (b *pipelineBundle) account(t *testing.T, tenantID, id uuid.UUID) *app.ChannelAccount {
	t.Helper()
	var a *app.ChannelAccount
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tenantID, func(tx *db.Tx) (err error) {
		a, err = tx.AccountByID(b.ctx, tenantID, id)
		return err
	}))
	return a
}

// booking is a valid BOOKING_CONFIRMED request for one passenger, on the
// channels named (the event's own channels when none are).
func booking(eventID, ref, phone string, channels ...string) map[string]any {
	req := map[string]any{
		"event_id":      eventID,
		"trigger_event": "BOOKING_CONFIRMED",
		"recipients": []map[string]any{{
			"name": "Anna Schmidt", "phone": phone, "email": "anna@example.com", "locale": "de-DE",
		}},
		"context": map[string]any{
			"passenger_name": "Anna Schmidt", "tour_name": "Gardasee", "departure_date": "2027-04-12",
			"booking_reference": ref, "deposit_amount": "150,00 €",
		},
		"conversation_context": map[string]any{"type": "booking", "id": ref},
	}
	if len(channels) > 0 {
		req["channels"] = channels
	}
	return req
}

// withFallback turns a request into a fallback chain over the channels.
func withFallback(req map[string]any, chain ...string) map[string]any {
	delete(req, "channels")
	req["fallback_chain"] = chain
	return req
}

// route submits the request through Intake, as the API does, runs its
// route job's work, and returns the event's messages.
func (b *pipelineBundle) route(t *testing.T, tn *app.Tenant, req map[string]any) []*app.Message {
	t.Helper()
	id := b.submit(t, tn, req)
	require.NoError(t, b.svc.Router.Route(b.ctx, app.RouteJob{TenantID: tn.ID, EventID: id, Version: 1}))
	return b.messagesOf(t, tn.ID, id)
}

// submit submits a new request through Intake, as the API does, and
// returns its event's id.
func (b *pipelineBundle) submit(t *testing.T, tn *app.Tenant, req map[string]any) uuid.UUID {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	res, err := b.svc.Intake.Submit(b.ctx, b.keys[tn.ID], body)
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	return res.ID
}

// messagesOf returns an event's messages, oldest first.
func (b *pipelineBundle) messagesOf(t *testing.T, tenantID, eventID uuid.UUID) []*app.Message {
	t.Helper()
	var ms []*app.Message
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tenantID, func(tx *db.Tx) (err error) {
		ms, err = tx.MessagesByEvent(b.ctx, tenantID, eventID)
		return err
	}))
	return ms
}

// routeOne routes a request that makes exactly one QUEUED message.
func (b *pipelineBundle) routeOne(t *testing.T, tn *app.Tenant, req map[string]any) *app.Message {
	t.Helper()
	ms := b.route(t, tn, req)
	require.Len(t, ms, 1)
	require.Equal(t, app.MessageQueued, ms[0].Status)
	return ms[0]
}

func (b *pipelineBundle) message(t *testing.T, tenantID, id uuid.UUID) *app.Message {
	t.Helper()
	var m *app.Message
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tenantID, func(tx *db.Tx) (err error) {
		m, err = tx.MessageByID(b.ctx, tenantID, id, false)
		return err
	}))
	return m
}

func (b *pipelineBundle) timeline(t *testing.T, tenantID, id uuid.UUID) []*app.MessageEvent {
	t.Helper()
	var es []*app.MessageEvent
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tenantID, func(tx *db.Tx) (err error) {
		es, err = tx.Timeline(b.ctx, tenantID, id)
		return err
	}))
	return es
}

// statuses lists the status changes on a timeline, in order.
func statuses(es []*app.MessageEvent) []string {
	var out []string
	for _, e := range es {
		if e.ToStatus != nil {
			out = append(out, *e.ToStatus)
		}
	}
	return out
}

// fromSource keeps the timeline entries of one source.
func fromSource(es []*app.MessageEvent, source string) []*app.MessageEvent {
	var out []*app.MessageEvent
	for _, e := range es {
		if e.Source == source {
			out = append(out, e)
		}
	}
	return out
}

// usage is the tenant's count of sends on the channel in the clock's month.
func (b *pipelineBundle) usage(t *testing.T, tenantID uuid.UUID, ch app.Channel) int {
	t.Helper()
	var n int
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tenantID, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, `SELECT coalesce(sum(count), 0) FROM usage_counters
			WHERE tenant_id = $1 AND channel = $2 AND month = $3`, tenantID, ch, app.MonthOf(b.clock.Now())).Scan(&n)
	}))
	return n
}

// count runs a counting query in the platform scope, for what no service
// reads back (job rows, receipt rows, audit entries).
func (b *pipelineBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, query, args...).Scan(&n)
	}))
	return n
}

// dispatchJobs counts the River dispatch jobs of a message.
func (b *pipelineBundle) dispatchJobs(t *testing.T, messageID uuid.UUID) int {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1`, messageID.String())
}

// fallbackOf returns the message queued, with its dispatch job, when failed
// fell back to the next channel of its chain.
func fallbackOf(t *testing.T, b *pipelineBundle, tn *app.Tenant, failed *app.Message) *app.Message {
	t.Helper()
	var next *app.Message
	for _, m := range b.messagesOf(t, tn.ID, *failed.EventID) {
		if m.FallbackOf != nil && *m.FallbackOf == failed.ID {
			require.Nil(t, next, "one fallback message")
			next = m
		}
	}
	require.NotNil(t, next, "a fallback message was queued")
	require.Equal(t, app.MessageQueued, next.Status)
	require.Equal(t, failed.CorrelationID, next.CorrelationID, "fallback messages share the correlation id")
	require.Equal(t, 1, b.dispatchJobs(t, next.ID), "its dispatch job is queued in the same transaction")
	return next
}

// completion records the dispatcher's calls of its CompleteFunc, which the
// job runner uses to finish the job in the dispatcher's transaction.
type completion struct {
	mu      sync.Mutex
	calls   int
	tenants []uuid.UUID
	// err, when set, is what complete returns.
	err error
}

func (c *completion) complete(_ context.Context, tx app.Tx) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.tenants = append(c.tenants, tx.TenantID())
	return c.err
}

func (c *completion) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// dispatch runs the message's dispatch job as attempt of maxAttempts.
func (b *pipelineBundle) dispatch(m *app.Message, attempt, maxAttempts int, c *completion) (app.DispatchOutcome, error) {
	job := app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel}
	return b.svc.Dispatcher.Dispatch(b.ctx, job, attempt, maxAttempts, c.complete)
}

// sendOK dispatches a message that must be sent, and returns it as stored
// (SENT, or further on when receipts that overtook the send applied with it).
func (b *pipelineBundle) sendOK(t *testing.T, m *app.Message) *app.Message {
	t.Helper()
	c := &completion{}
	out, err := b.dispatch(m, 1, 5, c)
	require.NoError(t, err)
	require.True(t, out.Done, "not sent: %+v", out)
	sent := b.message(t, m.TenantID, m.ID)
	require.NotNil(t, sent.SentAt, "sent")
	require.NotNil(t, sent.ExternalMessageID)
	if sent.Status != app.MessageSent {
		require.Contains(t, []string{app.MessageDelivered, app.MessageRead, app.MessageFailed}, sent.Status)
	}
	return sent
}

// metaAPI stands in for the Graph API's send endpoint: it records each send
// and answers with the next queued reply, or with success.
type metaAPI struct {
	srv *httptest.Server

	mu      sync.Mutex
	sends   []metaSend
	replies []metaReply
	// before, when set, runs in the handler before it answers.
	before func()
	// hangUp breaks the connection instead of answering, once the
	// request is read (and recorded).
	hangUp bool
	// catalog serves the WABA's message_templates endpoints.
	catalog *metaCatalog
}

// metaSend is one request the fake received.
type metaSend struct {
	Path          string
	Authorization string
	Body          map[string]any
}

// metaReply is an answer: status and body (an error), or, without a body,
// success with a fresh message id.
type metaReply struct {
	status     int
	body       []byte
	retryAfter string
}

func newMetaAPI(t *testing.T) *metaAPI {
	t.Helper()
	success := readTestdata(t, "send_success.json")
	var n int
	m := &metaAPI{catalog: &metaCatalog{}}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/message_templates") || m.catalog.isTemplate(r.URL.Path) || isUpload(r.URL.Path) {
			m.catalog.serve(w, r)
			return
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost {
			http.Error(w, `{"error":{"message":"bad request","code":100}}`, http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		m.sends = append(m.sends, metaSend{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: body})
		var reply metaReply
		if len(m.replies) > 0 {
			reply, m.replies = m.replies[0], m.replies[1:]
		}
		n++
		id := fakeWamid(n)
		before, hangUp := m.before, m.hangUp
		m.mu.Unlock()
		if before != nil {
			before()
		}
		if hangUp {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if reply.body != nil {
			if reply.retryAfter != "" {
				w.Header().Set("Retry-After", reply.retryAfter)
			}
			w.WriteHeader(reply.status)
			_, _ = w.Write(reply.body)
			return
		}
		_, _ = w.Write([]byte(strings.ReplaceAll(string(success), testdataWamid, id)))
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// fakeWamid is the message id the fake answers its nth send with; every
// send counts, the refused ones too.
func fakeWamid(n int) string {
	return fmt.Sprintf("wamid.HBgLNDkxNTExMjM0NTY3OBUCABEYEjQ2QjM1RjQ2%04d", n)
}

// testdataWamid is the message id in the testdata samples.
const testdataWamid = "wamid.HBgNNDkxNTExMjM0NTY3OBUCABEYEjQ2QjM1RjQ2RUVGQTc2QzIzMwA="

// reply queues answers for the next sends.
func (m *metaAPI) reply(rs ...metaReply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = append(m.replies, rs...)
}

// graphError is the reply of Meta's error sample error_<code>.json.
func graphError(t *testing.T, code string) metaReply {
	t.Helper()
	return metaReply{status: http.StatusBadRequest, body: readTestdata(t, "error_"+code+".json")}
}

func (m *metaAPI) received() []metaSend {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]metaSend(nil), m.sends...)
}

// readTestdata reads a sample of Meta's payloads from the adapter's testdata.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("provider", "meta", "testdata", name))
	require.NoError(t, err)
	return b
}
