package app_test

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// The alert of the server's own credentials, as an operator reads it.
const credentialAlert = "AWS refused the server's own credentials"

// useServerCredentials replaces the tenant's sandbox account of the
// channel with an ACTIVE SES (EMAIL) or SNS (SMS) account without keys of
// its own, which sends with the server's default AWS credential chain, and
// points every given process's adapter at a fake of the service.
func (b *pipelineBundle) useServerCredentials(t *testing.T, tn *app.Tenant, ch app.Channel, procs ...*wire.Services) (*app.ChannelAccount, *awsAPI) {
	t.Helper()
	api := newAWSAPI(t)
	name, cfg := "sns", app.Attrs{"region": "eu-central-1"}
	if ch == app.Email {
		name, cfg = "ses", app.Attrs{"region": "eu-central-1", "sender_email": "buchungen@reisen.example.de"}
	}
	for _, svc := range append([]*wire.Services{b.svc}, procs...) {
		if ch == app.Email {
			svc.Providers[name].(*ses.Provider).Endpoint = api.srv.URL
		} else {
			svc.Providers[name].(*sns.Provider).Endpoint = api.srv.URL
		}
	}
	sb := b.activeAccount(t, tn.ID, ch)
	require.NoError(t, b.svc.Accounts.SetStatus(b.ctx, app.CLIActor, tn.ID, sb.ID, app.AccountDisabled, ""))
	a, err := b.svc.Accounts.Create(b.ctx, app.CLIActor, tn.ID, app.AccountInput{
		Channel: ch, Provider: name, Name: name + " " + tn.Slug, Activate: true, Config: cfg,
	})
	require.NoError(t, err)
	return a, api
}

// refusalRow is the account's recorded spell of refusals, nil when it has
// none.
func (b *pipelineBundle) refusalRow(t *testing.T, a *app.ChannelAccount) *app.CredentialRefusal {
	t.Helper()
	var rs []*app.CredentialRefusal
	require.NoError(t, b.svc.Store.InTenant(b.ctx, a.TenantID, func(tx *db.Tx) (err error) {
		rs, err = tx.TenantCredentialRefusals(b.ctx, a.TenantID, time.Time{})
		return err
	}))
	var mine []*app.CredentialRefusal
	for _, r := range rs {
		if r.AccountID == a.ID {
			mine = append(mine, r)
		}
	}
	require.LessOrEqual(t, len(mine), 1, "one row per account")
	if len(mine) == 0 {
		return nil
	}
	return mine[0]
}

// alerts returns the ERROR lines about the account's refused server
// credentials.
func (b *pipelineBundle) alerts(a *app.ChannelAccount) []slog.Record {
	var out []slog.Record
	for _, r := range b.logs.Lines(slog.LevelError, credentialAlert) {
		if webtest.Attr(r, "channel_account_id") == a.ID.String() {
			out = append(out, r)
		}
	}
	return out
}

// refusedCount reads herald_server_credentials_refused_total of one
// process from its registry.
func refusedCount(t *testing.T, svc *wire.Services, providerName, code string) float64 {
	t.Helper()
	families, err := svc.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "herald_server_credentials_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] == providerName && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// refuse dispatches the message once, as its job's attempt, and checks
// that it waits for a retry because the server's credentials were refused.
func (b *pipelineBundle) refuse(t *testing.T, svc *wire.Services, m *app.Message, attempt int) {
	t.Helper()
	out, err := svc.Dispatcher.Dispatch(b.ctx, app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel}, attempt, 5, (&completion{}).complete)
	require.NoError(t, err)
	var pe *provider.Error
	require.ErrorAs(t, out.Retry, &pe, "retried: %+v", out)
	require.True(t, pe.ServerCredentials)
}

// TestServerCredentials checks what Herald does when AWS refuses the
// server's own credentials, which the accounts without keys of their own
// send with: every message waits, and the operator hears of it once per
// account and window, in the log, the metrics and the shared record that
// /readyz and the console read; the account's next accepted send ends it.
//
// It cannot run in parallel: it sets the environment the default AWS
// credential chain reads.
func TestServerCredentials(t *testing.T) {
	webtest.UseServerAWSCredentials(t)
	// Breakers stay closed: each refusal here is a call that reaches AWS.
	noBreaker := func(cfg *app.Config) { cfg.BreakerThreshold = 1000 }

	for _, tc := range []struct {
		channel      app.Channel
		providerName string
		file, code   string
	}{
		{app.Email, "ses", "provider/ses/testdata/errors/unrecognized_client.http", "UnrecognizedClientException"},
		{app.SMS, "sns", "provider/sns/testdata/errors/invalid_client_token.http", "InvalidClientTokenId"},
	} {
		t.Run("OneAlertPerAccountAndWindow/"+string(tc.channel), func(t *testing.T) {
			b := setupPipeline(t, noBreaker)
			tn := b.tenant(t, "acme")
			acct, api := b.useServerCredentials(t, tn, tc.channel)
			api.reply(t, tc.file)

			const n = 5
			var ms []*app.Message
			for i := range n {
				ms = append(ms, b.routeOne(t, tn, booking(fmt.Sprintf("evt-%d", i), fmt.Sprintf("BK-%d", i), anna, string(tc.channel))))
			}
			for _, m := range ms {
				b.refuse(t, b.svc, m, 1)
			}
			require.Equal(t, n, api.count())
			require.Len(t, b.alerts(acct), 1, "one line for the account, however many messages wait")
			alert := b.alerts(acct)[0]
			require.Equal(t, tn.ID.String(), webtest.Attr(alert, "tenant_id"))
			require.Equal(t, tc.code, webtest.Attr(alert, "code"))
			row := b.refusalRow(t, acct)
			require.NotNil(t, row)
			require.Equal(t, n, row.Refusals)
			require.Equal(t, tc.code, row.Code)
			require.Equal(t, testStart, row.FirstAt.UTC())
			require.Equal(t, float64(n), refusedCount(t, b.svc, tc.providerName, tc.code))
			for _, m := range ms {
				require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status, "waiting for a retry")
			}
			require.Equal(t, app.AccountActive, b.account(t, tn.ID, acct.ID).Status, "the tenant's account is not to blame")

			// Within the window the spell goes on quietly; once the last
			// alert is a window old, the next refusal alerts again.
			b.clock.Advance(app.DefaultCredentialAlertWindow / 2)
			b.refuse(t, b.svc, ms[0], 2)
			require.Len(t, b.alerts(acct), 1)
			b.clock.Advance(app.DefaultCredentialAlertWindow / 2)
			b.refuse(t, b.svc, ms[1], 2)
			require.Len(t, b.alerts(acct), 2)
			row = b.refusalRow(t, acct)
			require.Equal(t, n+2, row.Refusals, "one spell")
			require.Equal(t, testStart, row.FirstAt.UTC())
			require.Equal(t, testStart.Add(app.DefaultCredentialAlertWindow), row.LastAt.UTC())
		})
	}

	t.Run("WorkerProcessesShareOneAlert", func(t *testing.T) {
		b := setupPipeline(t, noBreaker)
		other := b.connect(t)
		tn := b.tenant(t, "acme")
		acct, api := b.useServerCredentials(t, tn, app.Email, other)
		api.reply(t, "provider/ses/testdata/errors/unrecognized_client.http")
		const n = 8
		var ms []*app.Message
		for i := range n {
			ms = append(ms, b.routeOne(t, tn, booking(fmt.Sprintf("evt-%d", i), fmt.Sprintf("BK-%d", i), anna, "EMAIL")))
		}

		// Two worker processes meet the refusal at the same time.
		var wg sync.WaitGroup
		start := make(chan struct{})
		outs, errs := make([]app.DispatchOutcome, n), make([]error, n)
		for i, m := range ms {
			svc := b.svc
			if i%2 == 1 {
				svc = other
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				outs[i], errs[i] = svc.Dispatcher.Dispatch(b.ctx, app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel},
					1, 5, (&completion{}).complete)
			}()
		}
		close(start)
		wg.Wait()
		for i := range ms {
			require.NoError(t, errs[i])
			require.Error(t, outs[i].Retry)
		}

		require.Len(t, b.alerts(acct), 1, "one line between both processes")
		require.Equal(t, n, b.refusalRow(t, acct).Refusals)
		require.Equal(t, float64(n), refusedCount(t, b.svc, "ses", "UnrecognizedClientException")+
			refusedCount(t, other, "ses", "UnrecognizedClientException"))
	})

	t.Run("AcceptedSendEndsTheSpell", func(t *testing.T) {
		b := setupPipeline(t, noBreaker)
		tn := b.tenant(t, "acme")
		acct, api := b.useServerCredentials(t, tn, app.Email)
		api.reply(t, "provider/ses/testdata/errors/unrecognized_client.http")
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "EMAIL"))
		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "EMAIL"))
		b.refuse(t, b.svc, first, 1)
		b.refuse(t, b.svc, second, 1)
		require.NotNil(t, b.refusalRow(t, acct))

		// The operator fixed the credentials: the next send goes out and
		// ends the spell.
		api.reply(t, "provider/ses/testdata/send_email.http")
		out, err := b.dispatch(first, 2, 5, &completion{})
		require.NoError(t, err)
		require.True(t, out.Done)
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, first.ID).Status)
		require.Nil(t, b.refusalRow(t, acct))

		// A refusal after that is a new spell, and alerts at once.
		api.reply(t, "provider/ses/testdata/errors/unrecognized_client.http")
		b.clock.Advance(time.Minute)
		b.refuse(t, b.svc, second, 2)
		require.Len(t, b.alerts(acct), 2)
		row := b.refusalRow(t, acct)
		require.Equal(t, 1, row.Refusals)
		require.Equal(t, testStart.Add(time.Minute), row.FirstAt.UTC())
	})

	t.Run("OwnKeysAreTheTenants", func(t *testing.T) {
		b := setupPipeline(t, noBreaker)
		tn := b.tenant(t, "acme")
		acct, api := b.useAWS(t, tn, app.Email)
		api.reply(t, "provider/ses/testdata/errors/unrecognized_client.http")
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "EMAIL"))
		out, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.True(t, out.Done)
		require.Equal(t, app.AccountSuspended, b.account(t, tn.ID, acct.ID).Status, "the tenant fixes its own keys")
		require.Nil(t, b.refusalRow(t, acct))
		require.Empty(t, b.alerts(acct))
		require.Zero(t, refusedCount(t, b.svc, "ses", "UnrecognizedClientException"))
	})
}
