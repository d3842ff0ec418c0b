package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/web/webtest"
)

// TestWebhook_SESOtherConfigurationSet: SES publishes an account's events
// with another configuration set than the account names (a default set on
// the identity, a set renamed in SES). Such an event is not applied, as
// before, but kept as the account's foreign receipt, with a warning in the
// log, and the account's page says how many came and when the last did;
// an event of the account's own set still applies.
func TestWebhook_SESOtherConfigurationSet(t *testing.T) {
	t.Parallel()
	signer := awsnotifytest.New(t)
	logs := &webtest.Logs{}
	c := setupConsole(t, webtest.Options{
		NoWorkers: true,
		Config:    func(cfg *app.Config) { cfg.SNSTopicARNs = []string{sesTopic} },
		Providers: provider.Set{"ses": &ses.Provider{Endpoint: fakeAWS(t).URL}},
		SNS:       signer, Logs: logs,
	})
	sb := c.ActiveAccount(app.Email)
	require.NoError(t, c.Services.Accounts.SetStatus(c.Ctx, app.CLIActor, c.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	acct, err := c.Services.Accounts.Create(c.Ctx, app.CLIActor, c.Tenant.ID, app.AccountInput{
		Channel: app.Email, Provider: "ses", Name: "Acme bookings mail", Activate: true,
		Config:  app.Attrs{"region": "eu-central-1", "sender_email": "bookings@acme.example", "configuration_set": "acme-events"},
		Secrets: map[string]string{"access_key_id": "AKIAHERALDTEST000001", "secret_access_key": "not-a-real-secret"},
	})
	require.NoError(t, err)
	id := c.Submit(webtest.WithRecipient("astray-1", "BK-ASTRAY", map[string]any{"name": "Ada", "email": "ada@example.com"}, "EMAIL"))
	m := webtest.OnlyMessage(t, c.routeNow(c.Tenant.ID, id))
	out, err := c.Services.Dispatcher.Dispatch(c.Ctx, app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel}, 1, 5,
		func(context.Context, app.Tx) error { return nil })
	require.NoError(t, err)
	require.True(t, out.Done)
	m = webtest.OnlyMessage(t, c.Event(id).Messages)
	require.Equal(t, app.MessageSent, m.Status)

	// post posts an SES event as SNS does, then runs the applier's rounds
	// until the inbox has nothing due, as the workers' applier would.
	post := func(body []byte) {
		t.Helper()
		code, out := postWebhookNow(c.Herald, "/webhooks/ses", body, map[string]string{"x-amz-sns-message-type": "Notification"})
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		for {
			round, err := c.Services.Receipts.ApplyInbox(c.Ctx, 0)
			require.NoError(t, err)
			if round.Taken == 0 {
				return
			}
		}
	}

	delivery := func(set string) []byte {
		return envelopeJSON(t, signer.Notification(sesTopic, `{"eventType":"Delivery","mail":{"messageId":"`+*m.ExternalMessageID+
			`","tags":{"ses:configuration-set":["`+set+`"],"message_id":["`+m.ID.String()+`"]}},"delivery":{"timestamp":"2026-11-21T10:00:00.000Z"}}`))
	}
	astray := delivery("acme-default")
	post(astray)
	post(astray)

	// Kept once, as the account's foreign receipt; not applied.
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign' AND tenant_id = $1 AND channel_account_id = $2
		AND body->>'account_ref' = 'acme-default'`, c.Tenant.ID, acct.ID))
	require.Zero(t, c.Count(`SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign' AND tenant_id IS NULL`))
	var got struct{ Status string }
	c.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &got)
	require.Equal(t, app.MessageSent, got.Status)
	require.Empty(t, webhookEntries(c.Timeline(m.ID)))

	warnings := logs.Lines(slog.LevelWarn, "another configuration set than its message's account")
	require.NotEmpty(t, warnings)
	require.Equal(t, acct.ID.String(), webtest.Attr(warnings[0], "channel_account_id"))
	require.Equal(t, "acme-default", webtest.Attr(warnings[0], "configuration_set"))
	require.Equal(t, "acme-events", webtest.Attr(warnings[0], "account_configuration_set"))

	// The account's page counts them and says when the last came.
	doc := c.signIn(asManager).page("/t/acme/channels/" + acct.ID.String())
	dd := doc.Find("dd.astray-receipts")
	require.Equal(t, "1", text(dd.Find(".astray-count")))
	require.Equal(t, 1, dd.Find("time").Length(), "when the newest came")
	require.Contains(t, text(dd), "acme-default")
	warning := text(doc.Find(".astray-warning"))
	require.Contains(t, warning, "“acme-default”")
	require.Contains(t, warning, "“acme-events”")

	// An event of the account's own configuration set applies.
	post(delivery("acme-events"))
	c.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &got)
	require.Equal(t, app.MessageDelivered, got.Status)
	require.Equal(t, "1", text(c.signIn(asManager).page("/t/acme/channels/"+acct.ID.String()).Find("dd.astray-receipts .astray-count")))
}
