package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/db"
)

// cloudWatch stands in for one AWS account's SNS (Publish), STS
// (GetCallerIdentity) and CloudWatch Logs (FilterLogEvents) endpoints, on
// their wire protocols, so that the real adapters and the real SDK run.
// It is hostile where CloudWatch may be: it answers ThrottlingException
// when told to, serves pages of one event chained by tokens, repeats
// events, and takes events in late (an event put after a read, with a
// timestamp inside the window that read covered).
type cloudWatch struct {
	srv     *httptest.Server
	account string

	mu        sync.Mutex
	published int
	// events by log group, in the order put (not by timestamp).
	events map[string][]cwEvent
	// pageSize is the most events of a page.
	pageSize int
	// throttle answers ThrottlingException to that many reads.
	throttle int
	// reads records every FilterLogEvents request.
	reads []cwRead
	// afterRead, when set, runs after a read was answered.
	afterRead func()
}

type cwEvent struct {
	id      string
	at      time.Time
	message string
}

type cwRead struct {
	Group string `json:"logGroupName"`
	Start int64  `json:"startTime"`
	End   int64  `json:"endTime"`
	Token string `json:"nextToken"`
}

func newCloudWatch(t *testing.T, account string) *cloudWatch {
	t.Helper()
	cw := &cloudWatch{account: account, events: map[string][]cwEvent{}, pageSize: 1}
	cw.srv = httptest.NewServer(http.HandlerFunc(cw.serve))
	t.Cleanup(cw.srv.Close)
	return cw
}

func (cw *cloudWatch) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		cw.filter(w, target, body)
		return
	}
	form, _ := url.ParseQuery(string(body))
	w.Header().Set("Content-Type", "text/xml")
	switch form.Get("Action") {
	case "GetCallerIdentity":
		fmt.Fprintf(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
			`<Arn>arn:aws:iam::%s:user/herald</Arn><UserId>AIDAHERALD</UserId><Account>%s</Account></GetCallerIdentityResult>`+
			`<ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`, cw.account, cw.account)
	case "Publish":
		cw.mu.Lock()
		cw.published++
		id := fmt.Sprintf("%s-%04d-5444-820d-fbeb0f1f54cf", cw.account[:8], cw.published)
		cw.mu.Unlock()
		fmt.Fprintf(w, `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>%s</MessageId>`+
			`</PublishResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></PublishResponse>`, id)
	default:
		http.Error(w, "unexpected "+form.Get("Action"), http.StatusBadRequest)
	}
}

// filter answers FilterLogEvents: the group's events with timestamps in
// the window, by timestamp, a page at a time; the token is the offset.
func (cw *cloudWatch) filter(w http.ResponseWriter, target string, body []byte) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	var q cwRead
	if target != "Logs_20140328.FilterLogEvents" || json.Unmarshal(body, &q) != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"InvalidParameterException","message":"unexpected request"}`))
		return
	}
	cw.mu.Lock()
	cw.reads = append(cw.reads, q)
	after := cw.afterRead
	if cw.throttle > 0 {
		cw.throttle--
		cw.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"ThrottlingException","message":"Rate exceeded"}`))
		return
	}
	evs, ok := cw.events[q.Group]
	var in []cwEvent
	for _, e := range evs {
		if ms := e.at.UnixMilli(); ms >= q.Start && ms <= q.End {
			in = append(in, e)
		}
	}
	slices.SortStableFunc(in, func(a, b cwEvent) int { return a.at.Compare(b.at) })
	size := cw.pageSize
	cw.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"ResourceNotFoundException","message":"The specified log group does not exist."}`))
		return
	}
	from, _ := strconv.Atoi(strings.TrimPrefix(q.Token, "tok-"))
	to := min(from+size, len(in))
	out := map[string]any{"searchedLogStreams": []any{}}
	page := []map[string]any{}
	for _, e := range in[min(from, len(in)):to] {
		page = append(page, map[string]any{"logStreamName": "stream", "timestamp": e.at.UnixMilli(), "message": e.message,
			"ingestionTime": e.at.UnixMilli(), "eventId": e.id})
	}
	out["events"] = page
	if to < len(in) {
		out["nextToken"] = "tok-" + strconv.Itoa(to)
	}
	_ = json.NewEncoder(w).Encode(out)
	if after != nil {
		after()
	}
}

// group names one of the account's SNS delivery-status groups.
func (cw *cloudWatch) group(failure bool) string {
	g := "sns/eu-central-1/" + cw.account + "/" + sns.LogGroupSuccess
	if failure {
		g = "sns/eu-central-1/" + cw.account + "/" + sns.LogGroupFailure
	}
	return g
}

// put adds a delivery-status record, as SNS writes it, about the message
// with the SNS id; failure puts it in the failure group.
func (cw *cloudWatch) put(id string, at time.Time, failure bool) {
	status, response := "SUCCESS", "Message has been accepted by phone carrier"
	if failure {
		status, response = "FAILURE", "Unknown error attempting to reach phone"
	}
	rec := fmt.Sprintf(`{"notification":{"messageId":%q,"timestamp":%q},"delivery":{"phoneCarrier":"Telekom","mnc":1,`+
		`"destination":"+4915112345678","priceInUSD":0.07,"smsType":"Transactional","mcc":262,"providerResponse":%q,`+
		`"dwellTimeMs":599,"dwellTimeMsUntilDeviceAck":1344},"status":%q}`,
		id, at.UTC().Format("2006-01-02 15:04:05.000"), response, status)
	cw.putRaw(cw.group(failure), at, rec)
}

func (cw *cloudWatch) putRaw(group string, at time.Time, message string) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	n := 0
	for _, evs := range cw.events {
		n += len(evs)
	}
	cw.events[group] = append(cw.events[group], cwEvent{id: fmt.Sprintf("3%055d", n), at: at, message: message})
}

// createGroups makes both log groups exist (SNS creates them with the
// first record it logs).
func (cw *cloudWatch) createGroups() {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	for _, f := range []bool{false, true} {
		if _, ok := cw.events[cw.group(f)]; !ok {
			cw.events[cw.group(f)] = nil
		}
	}
}

func (cw *cloudWatch) readCount() int {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return len(cw.reads)
}

// smsLogBundle is a pipeline whose SNS accounts send to and log at fakes.
type smsLogBundle struct {
	*pipelineBundle
	waits []time.Duration
	mu    sync.Mutex
}

func setupSMSLogs(t *testing.T) *smsLogBundle {
	t.Helper()
	b := &smsLogBundle{pipelineBundle: setupPipeline(t, nil)}
	b.svc.SMSLogs.Sleep = func(ctx context.Context, d time.Duration) error {
		// The waits pass on the test's clock, which the pace's buckets
		// read: no real time passes.
		b.mu.Lock()
		b.waits = append(b.waits, d)
		b.mu.Unlock()
		b.clock.Advance(d)
		return ctx.Err()
	}
	return b
}

// useSNS gives the tenant an ACTIVE SNS account with its own keys whose
// SNS and CloudWatch Logs are cw: through the adapters' endpoint override
// (every account's), or with own, through the account's own endpoint
// settings (an emulator's, which the adapters then allow).
func (b *smsLogBundle) useSNS(t *testing.T, tn *app.Tenant, cw *cloudWatch, own bool) *app.ChannelAccount {
	t.Helper()
	acct, _ := b.useAWS(t, tn, app.SMS)
	send, logs := b.svc.Providers["sns"].(*sns.Provider), b.svc.SMSLogs.Log.(*sns.DeliveryLogs)
	if !own {
		send.Endpoint, logs.Endpoint = cw.srv.URL, cw.srv.URL
		return acct
	}
	send.Endpoint, logs.Endpoint, send.AnyEndpoint, logs.AnyEndpoint = "", "", true, true
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(b.ctx, `UPDATE channel_accounts
			SET config = config || jsonb_build_object('endpoint_url', $3::text, 'delivery_log_endpoint_url', $3::text)
			WHERE tenant_id = $1 AND id = $2`, tn.ID, acct.ID, cw.srv.URL)
		return err
	}))
	return acct
}

// sent routes and sends an SMS through the tenant's SNS account.
func (b *smsLogBundle) sent(t *testing.T, tn *app.Tenant, eventID string) *app.Message {
	t.Helper()
	m := b.routeOne(t, tn, booking(eventID, "REF-"+eventID, "+4915112345678", "SMS"))
	return b.sendOK(t, m)
}

// read runs the reader on the account and then the receipt applier until
// nothing is due, as the worker processes do.
func (b *smsLogBundle) read(t *testing.T, a *app.ChannelAccount) app.SMSLogResult {
	t.Helper()
	res, err := b.svc.SMSLogs.Read(b.ctx, a.TenantID, a.ID)
	require.NoError(t, err)
	_, err = b.applyInbox(b.ctx)
	require.NoError(t, err)
	return res
}

func (b *smsLogBundle) receiptEntries(t *testing.T, m *app.Message) int {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM message_events WHERE message_id = $1 AND source = 'webhook'`, m.ID)
}

func (b *smsLogBundle) state(t *testing.T, a *app.ChannelAccount) app.SMSLogState {
	t.Helper()
	st, err := b.svc.SMSLogs.State(b.ctx, a.TenantID, a.ID)
	require.NoError(t, err)
	return st
}

func TestSMSLogs_Read(t *testing.T) {
	t.Parallel()

	t.Run("DeliveredAndFailedThroughTheReceiptRulebook", func(t *testing.T) {
		t.Parallel()
		b := setupSMSLogs(t)
		tn := b.tenant(t, "logs-ok")
		cw := newCloudWatch(t, "111122223333")
		acct := b.useSNS(t, tn, cw, false)
		delivered, failed := b.sent(t, tn, "evt-ok-1"), b.sent(t, tn, "evt-ok-2")
		now := b.clock.Now()
		cw.createGroups()
		// Duplicated records, out of timestamp order, over a chain of
		// one-event pages, and a line that is no status.
		cw.put(*delivered.ExternalMessageID, now.Add(-30*time.Second), false)
		cw.putRaw(cw.group(false), now.Add(-40*time.Second), "not a delivery status")
		cw.put(*delivered.ExternalMessageID, now.Add(-50*time.Second), false)
		cw.put(*failed.ExternalMessageID, now.Add(-20*time.Second), true)
		cw.put(*failed.ExternalMessageID, now.Add(-20*time.Second), true)
		// A record of an SMS Herald did not send (the tenant's own
		// systems use the AWS account too).
		cw.put("0f0f0f0f-0000-5444-820d-fbeb0f1f54cf", now.Add(-10*time.Second), false)

		res := b.read(t, acct)
		require.Equal(t, 6, res.Events)
		require.Equal(t, 1, res.Unreadable)
		require.Equal(t, 2, res.Receipts, "each report once, the unknown message's not at all")
		require.Equal(t, "eu-central-1", res.Region)

		got := b.message(t, tn.ID, delivered.ID)
		require.Equal(t, app.MessageDelivered, got.Status)
		got = b.message(t, tn.ID, failed.ID)
		require.Equal(t, app.MessageFailed, got.Status)
		require.Equal(t, "sns_sms_failure", *got.FailedReason)
		require.Equal(t, 1, b.receiptEntries(t, delivered))
		require.Equal(t, 1, b.receiptEntries(t, failed))

		st := b.state(t, acct)
		require.NotNil(t, st.Run)
		require.Empty(t, st.Run.LastError)
		require.NotNil(t, st.Run.ReadAt)
		require.Len(t, st.Cursors, 2, "one cursor per group")
		ends := map[string]time.Time{}
		for _, c := range st.Cursors {
			require.Empty(t, c.NextToken, "%s read to the end", c.Group)
			// The window ends when its first page was asked for (the
			// pace's waits pass on the clock).
			require.False(t, c.WindowEnd.Before(now), "window ends at the read")
			require.Equal(t, "eu-central-1", c.Region)
			ends[c.Group] = c.WindowEnd
		}

		// The next run starts shortly before the last one ended: it
		// re-reads the overlap (nothing new happens) and takes in a
		// record CloudWatch took late, within the overlap.
		reads := cw.readCount()
		b.clock.Advance(time.Minute)
		late := b.sent(t, tn, "evt-ok-3")
		cw.put(*late.ExternalMessageID, now.Add(-2*time.Minute), false)
		res = b.read(t, acct)
		require.Equal(t, 1, res.Receipts, "only the late record is new")
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, late.ID).Status)
		require.Equal(t, 1, b.receiptEntries(t, delivered), "re-read records change nothing")
		cw.mu.Lock()
		next := cw.reads[reads]
		cw.mu.Unlock()
		require.Equal(t, cw.group(false), next.Group)
		require.Equal(t, ends[next.Group].Add(-app.DefaultSMSLogOverlap).UnixMilli(), next.Start, "the overlap is read again")
		require.Greater(t, next.End, ends[next.Group].UnixMilli())
		require.Empty(t, next.Token)
	})

	t.Run("ThrottledReadsBackOff", func(t *testing.T) {
		t.Parallel()
		b := setupSMSLogs(t)
		tn := b.tenant(t, "logs-throttle")
		cw := newCloudWatch(t, "222233334444")
		acct := b.useSNS(t, tn, cw, false)
		m := b.sent(t, tn, "evt-thr-1")
		cw.createGroups()
		cw.put(*m.ExternalMessageID, b.clock.Now().Add(-time.Second), false)

		// Two throttled answers: waited out (1 s, then 2 s), then read.
		cw.mu.Lock()
		cw.throttle = 2
		cw.mu.Unlock()
		res := b.read(t, acct)
		require.Equal(t, 1, res.Receipts)
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status)
		b.mu.Lock()
		i := slices.Index(b.waits, time.Second)
		require.GreaterOrEqual(t, i, 0, "waited 1 s after the first: %v", b.waits)
		require.Contains(t, b.waits[i+1:], 2*time.Second, "then 2 s: %v", b.waits)
		b.mu.Unlock()
		require.Equal(t, 4, cw.readCount(), "two throttled reads, then a page of each group")

		// Throttled past the retries: the run ends, says so on the
		// account, and leaves the cursor where it was.
		before := b.state(t, acct)
		b.clock.Advance(time.Minute)
		cw.mu.Lock()
		cw.throttle = 100
		cw.mu.Unlock()
		_, err := b.svc.SMSLogs.Read(b.ctx, acct.TenantID, acct.ID)
		require.Error(t, err)
		require.Contains(t, err.Error(), "ThrottlingException")
		after := b.state(t, acct)
		require.Contains(t, after.Run.LastError, "ThrottlingException")
		require.WithinDuration(t, b.clock.Now(), *after.Run.LastErrorAt, time.Millisecond)
		for i := range before.Cursors {
			require.Equal(t, before.Cursors[i].Version, after.Cursors[i].Version, "cursor not moved")
		}
	})

	t.Run("CrashBeforeCommitRereadsWithoutDoubleEffect", func(t *testing.T) {
		t.Parallel()
		b := setupSMSLogs(t)
		tn := b.tenant(t, "logs-crash")
		cw := newCloudWatch(t, "333344445555")
		acct := b.useSNS(t, tn, cw, false)
		failed := b.sent(t, tn, "evt-crash-1")
		cw.createGroups()
		cw.put(*failed.ExternalMessageID, b.clock.Now().Add(-time.Second), true)

		// The process dies as the first page arrives: nothing of the
		// page is stored, the cursor does not exist.
		ctx, cancel := context.WithCancel(b.ctx)
		cw.mu.Lock()
		cw.afterRead = cancel
		cw.mu.Unlock()
		_, err := b.svc.SMSLogs.Read(ctx, acct.TenantID, acct.ID)
		require.Error(t, err)
		require.Zero(t, b.count(t, `SELECT count(*) FROM sms_log_cursors WHERE channel_account_id = $1`, acct.ID))
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox`))
		cw.mu.Lock()
		cw.afterRead = nil
		cw.mu.Unlock()

		res := b.read(t, acct)
		require.Equal(t, 1, res.Receipts)
		require.Equal(t, app.MessageFailed, b.message(t, tn.ID, failed.ID).Status)

		// A cursor set back (a restore, a run that read the same window
		// from an old state) reads the records again: no second receipt,
		// no second fallback, nothing on the timeline.
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `UPDATE sms_log_cursors SET window_end = window_start WHERE tenant_id = $1`, tn.ID)
			return err
		}))
		res = b.read(t, acct)
		require.Equal(t, 1, res.Events, "the record was read again")
		require.Zero(t, res.Receipts)
		require.Equal(t, 1, b.receiptEntries(t, failed))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE provider = 'sns'`))
	})

	t.Run("AnotherTenantsMessageIsNeverTouched", func(t *testing.T) {
		t.Parallel()
		b := setupSMSLogs(t)
		mine, theirs := b.tenant(t, "logs-mine"), b.tenant(t, "logs-theirs")
		cwMine, cwTheirs := newCloudWatch(t, "444455556666"), newCloudWatch(t, "555566667777")
		myAcct, theirAcct := b.useSNS(t, mine, cwMine, true), b.useSNS(t, theirs, cwTheirs, true)
		theirMsg := b.sent(t, theirs, "evt-theirs-1")
		// My AWS account's log names their message (a forged or mistaken
		// record in a log I control).
		cwMine.createGroups()
		cwMine.put(*theirMsg.ExternalMessageID, b.clock.Now().Add(-time.Second), true)

		res := b.read(t, myAcct)
		require.Equal(t, 1, res.Events)
		require.Zero(t, res.Receipts)
		require.Equal(t, app.MessageSent, b.message(t, theirs.ID, theirMsg.ID).Status)
		require.Zero(t, b.receiptEntries(t, theirMsg))
		require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_receipts`))

		// Their own log is theirs to read.
		cwTheirs.createGroups()
		cwTheirs.put(*theirMsg.ExternalMessageID, b.clock.Now().Add(-time.Second), false)
		res = b.read(t, theirAcct)
		require.Equal(t, 1, res.Receipts)
		require.Equal(t, app.MessageDelivered, b.message(t, theirs.ID, theirMsg.ID).Status)
	})

	t.Run("ConcurrentReadsOfOneAccount", func(t *testing.T) {
		t.Parallel()
		b := setupSMSLogs(t)
		tn := b.tenant(t, "logs-race")
		cw := newCloudWatch(t, "666677778888")
		acct := b.useSNS(t, tn, cw, false)
		var ms []*app.Message
		cw.createGroups()
		for i := range 4 {
			m := b.sent(t, tn, fmt.Sprintf("evt-race-%d", i))
			ms = append(ms, m)
			cw.put(*m.ExternalMessageID, b.clock.Now().Add(-time.Duration(i+1)*time.Second), i%2 == 1)
		}
		var wg sync.WaitGroup
		errs := make([]error, 3)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = b.svc.SMSLogs.Read(b.ctx, tn.ID, acct.ID)
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		_, err := b.applyInbox(b.ctx)
		require.NoError(t, err)
		for i, m := range ms {
			want := app.MessageDelivered
			if i%2 == 1 {
				want = app.MessageFailed
			}
			require.Equal(t, want, b.message(t, tn.ID, m.ID).Status)
			require.Equal(t, 1, b.receiptEntries(t, m))
		}
		for _, c := range b.state(t, acct).Cursors {
			require.Empty(t, c.NextToken)
		}
	})

	t.Run("MissingGroupsAndServerCredentials", func(t *testing.T) {
		t.Parallel()
		b := setupSMSLogs(t)
		tn := b.tenant(t, "logs-missing")
		cw := newCloudWatch(t, "777788889999")
		acct := b.useSNS(t, tn, cw, false)
		_, err := b.svc.SMSLogs.Read(b.ctx, tn.ID, acct.ID)
		require.NoError(t, err)
		st := b.state(t, acct)
		require.Contains(t, st.Run.LastError, "turn on SMS delivery status logging")
		require.Nil(t, st.Run.ReadAt)

		other := b.tenant(t, "logs-server-keys")
		sb := b.activeAccount(t, other.ID, app.SMS)
		require.NoError(t, b.svc.Accounts.SetStatus(b.ctx, app.CLIActor, other.ID, sb.ID, app.AccountDisabled, ""))
		a, err := b.svc.Accounts.Create(b.ctx, app.CLIActor, other.ID, app.AccountInput{
			Channel: app.SMS, Provider: "sns", Name: "server keys", Activate: true, Config: app.Attrs{"region": "eu-central-1"}})
		require.NoError(t, err)
		reads := cw.readCount()
		_, err = b.svc.SMSLogs.Read(b.ctx, other.ID, a.ID)
		require.ErrorContains(t, err, "server's AWS credentials")
		require.Contains(t, b.state(t, a).Run.LastError, "server's AWS credentials")
		require.Equal(t, reads, cw.readCount(), "nothing read with the server's keys")

		// A sandbox account has no delivery logs.
		_, err = b.svc.SMSLogs.Read(b.ctx, other.ID, sb.ID)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
	})

	t.Run("ScanEnqueuesOneReadPerActiveAccount", func(t *testing.T) {
		t.Parallel()
		b := setupSMSLogs(t)
		one, two := b.tenant(t, "logs-scan-1"), b.tenant(t, "logs-scan-2")
		cw := newCloudWatch(t, "888899990000")
		a1, a2 := b.useSNS(t, one, cw, false), b.useSNS(t, two, cw, false)
		n, err := b.svc.SMSLogs.Scan(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		_, err = b.svc.SMSLogs.Scan(b.ctx)
		require.NoError(t, err)
		for _, a := range []*app.ChannelAccount{a1, a2} {
			require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'sms_log_read' AND args->>'account_id' = $1`,
				a.ID.String()), "one read waiting per account, however often the scan runs")
		}
		// A disabled account is no longer read.
		require.NoError(t, b.svc.Accounts.SetStatus(b.ctx, app.CLIActor, two.ID, a2.ID, app.AccountDisabled, ""))
		_, err = b.svc.SMSLogs.Read(b.ctx, two.ID, a2.ID)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
	})
}
