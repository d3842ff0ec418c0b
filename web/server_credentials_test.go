package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/web/webtest"
)

// replayAWS stands in for an AWS endpoint: it answers every request with
// the raw HTTP response of a file from the adapters' testdata, AWS's own
// shapes, and counts the requests.
type replayAWS struct {
	srv *httptest.Server

	mu       sync.Mutex
	answer   []byte
	requests int
}

func newReplayAWS(t *testing.T, file string) *replayAWS {
	t.Helper()
	a := &replayAWS{}
	a.reply(t, file)
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		a.mu.Lock()
		a.requests++
		raw := a.answer
		a.mu.Unlock()
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusTeapot)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// reply makes the fake answer with a testdata file (a path below web/).
func (a *replayAWS) reply(t *testing.T, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answer = raw
}

func (a *replayAWS) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests
}

// readyz asks /readyz as a load balancer does.
func readyz(t *testing.T, c *consoleBundle) (int, app.HealthReport, string) {
	t.Helper()
	resp, err := c.App.Test(httptest.NewRequest(http.MethodGet, "/readyz", nil), -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var r app.HealthReport
	require.NoError(t, json.Unmarshal(raw, &r))
	return resp.StatusCode, r, string(raw)
}

// scrape reads one sample of /metrics (a dev Herald serves it), zero when
// it has none.
func scrape(t *testing.T, c *consoleBundle, sample string) float64 {
	t.Helper()
	resp, err := c.App.Test(httptest.NewRequest(http.MethodGet, "/metrics", nil), -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(raw)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v
}

// credentialScenario is a Herald whose server AWS credentials AWS refuses:
// Acme's e-mail goes through an SES account without keys of its own, and
// n bookings' confirmations have met the refusal and wait.
type credentialScenario struct {
	*consoleBundle
	aws     *replayAWS
	logs    *webtest.Logs
	acct    *app.ChannelAccount
	waiting []*app.Message
}

const credentialAlert = "AWS refused the server's own credentials"

func refusedScenario(t *testing.T, n int) *credentialScenario {
	t.Helper()
	s := &credentialScenario{logs: &webtest.Logs{},
		aws: newReplayAWS(t, "../app/provider/ses/testdata/errors/unrecognized_client.http")}
	s.consoleBundle = setupConsole(t, webtest.Options{NoWorkers: true, Now: newTestClock().Now, Logs: s.logs,
		Providers: provider.Set{"ses": &ses.Provider{Endpoint: s.aws.srv.URL}}})
	sb := s.ActiveAccount(app.Email)
	require.NoError(t, s.Services.Accounts.SetStatus(s.Ctx, app.CLIActor, s.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	var err error
	s.acct, err = s.Services.Accounts.Create(s.Ctx, app.CLIActor, s.Tenant.ID, app.AccountInput{
		Channel: app.Email, Provider: "ses", Name: "Acme bookings mail", Activate: true,
		Config: app.Attrs{"region": "eu-central-1", "sender_email": "bookings@acme.example"},
	})
	require.NoError(t, err)
	status, report, _ := readyz(t, s.consoleBundle)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, app.Healthy, report.Status)

	for i := range n {
		id := s.Submit(webtest.WithRecipient(fmt.Sprintf("evt-cred-%d", i), fmt.Sprintf("BK-CRED-%d", i),
			map[string]any{"name": "Ada", "email": fmt.Sprintf("ada%d@example.com", i)}, "EMAIL"))
		m := webtest.OnlyMessage(t, s.routeNow(s.Tenant.ID, id))
		out, err := s.dispatch(m, 1)
		require.NoError(t, err)
		require.Error(t, out.Retry, "retried")
		s.waiting = append(s.waiting, m)
	}
	require.Equal(t, n, s.aws.count())
	return s
}

// dispatch runs the message's dispatch job's attempt.
func (s *credentialScenario) dispatch(m *app.Message, attempt int) (app.DispatchOutcome, error) {
	return s.Services.Dispatcher.Dispatch(s.Ctx, app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel}, attempt, 5,
		func(context.Context, app.Tx) error { return nil })
}

// TestServerCredentials_Shown checks that a refusal of the server's own
// AWS credentials reaches the operator through every door: one ERROR line
// for many waiting messages, one record, the metric, /readyz and the
// console's start pages; and that all of it goes when AWS accepts a send
// again.
//
// It cannot run in parallel: it sets the environment the default AWS
// credential chain reads.
func TestServerCredentials_Shown(t *testing.T) {
	webtest.UseServerAWSCredentials(t)
	const n = 3

	t.Run("RefusalReachesTheOperator", func(t *testing.T) {
		s := refusedScenario(t, n)

		lines := s.logs.Lines(slog.LevelError, credentialAlert)
		require.Len(t, lines, 1, "one line for many waiting messages")
		require.Equal(t, s.acct.ID.String(), webtest.Attr(lines[0], "channel_account_id"))
		require.Equal(t, "UnrecognizedClientException", webtest.Attr(lines[0], "code"))

		require.Equal(t, 1, s.Count(`SELECT count(*) FROM server_credential_refusals`))
		require.Equal(t, n, s.Count(`SELECT refusals FROM server_credential_refusals WHERE channel_account_id = $1`, s.acct.ID))

		require.Equal(t, float64(n), scrape(t, s.consoleBundle, `herald_server_credentials_refused_total{code="UnrecognizedClientException",provider="ses"}`))

		status, report, raw := readyz(t, s.consoleBundle)
		require.Equal(t, http.StatusOK, status, "degraded, not out of service")
		require.Equal(t, app.Degraded, report.Status)
		require.Equal(t, "connected", report.Database)
		require.Contains(t, report.Error, "AWS refuses the server's own credentials")
		require.Contains(t, report.Error, "1 channel account")
		creds, ok := report.Details["server_credentials"].(map[string]any)
		require.True(t, ok, "%v", report.Details)
		require.Equal(t, "refused", creds["status"])
		require.EqualValues(t, 1, creds["refused_accounts"])
		require.EqualValues(t, n, creds["refusals"])
		require.Equal(t, []any{"UnrecognizedClientException"}, creds["codes"])
		require.Equal(t, []any{"ses"}, creds["providers"])
		require.NotContains(t, raw, s.Tenant.ID.String(), "/readyz answers anyone: no tenant")
		require.NotContains(t, raw, s.acct.ID.String())

		box := s.signIn(asOperator).page("/tenants").Find(".credential-refusals")
		require.Equal(t, 1, box.Length(), "on the operators' start page")
		row := box.Find(`tr[data-account="` + s.acct.ID.String() + `"]`)
		require.Equal(t, 1, row.Length())
		require.Contains(t, text(row), "Acme Tours")
		require.Contains(t, text(row), "Acme bookings mail")
		require.Contains(t, text(row), "UnrecognizedClientException")
		require.Equal(t, strconv.Itoa(n), text(row.Find("td.num")))
		link, _ := row.Find("a").Attr("href")
		require.Equal(t, "/t/acme/channels/"+s.acct.ID.String(), link)

		for _, who := range []string{asManager, asOperator} {
			box := s.signIn(who).page("/t/acme/").Find(".credential-refusals")
			require.Equal(t, 1, box.Length(), "on the tenant's dashboard, for %s", who)
			require.Contains(t, text(box), "operator has been alerted", who)
			require.Equal(t, 1, box.Find(`tr[data-account="`+s.acct.ID.String()+`"]`).Length(), who)
		}
		require.Zero(t, s.signIn(asOtherManager).page("/t/globex/").Find(".credential-refusals").Length(),
			"another tenant's accounts are its own business")
	})

	t.Run("AcceptedSendClearsIt", func(t *testing.T) {
		s := refusedScenario(t, n)

		// The operator fixed the credentials: the next send goes out.
		s.aws.reply(t, "../app/provider/ses/testdata/send_email.http")
		out, err := s.dispatch(s.waiting[0], 2)
		require.NoError(t, err)
		require.True(t, out.Done)

		require.Zero(t, s.Count(`SELECT count(*) FROM server_credential_refusals`))
		status, report, _ := readyz(t, s.consoleBundle)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, app.Healthy, report.Status)
		require.Zero(t, s.signIn(asOperator).page("/tenants").Find(".credential-refusals").Length())
		require.Zero(t, s.signIn(asManager).page("/t/acme/").Find(".credential-refusals").Length())
		require.Len(t, s.logs.Lines(slog.LevelError, credentialAlert), 1, "no alert since")
	})
}
