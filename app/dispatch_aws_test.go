package app_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/app/provider/sns"
)

// awsAPI stands in for SES's or SNS's endpoint: it answers every request
// with the raw HTTP response of a file from the adapters' testdata, so
// that the real adapters and the real AWS SDK build, send and classify.
type awsAPI struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests int
	answer   []byte
	// last is the body of the last request, as it came over the wire.
	last []byte
	// before, when set, runs once a request is read, before the answer.
	before func()
}

func newAWSAPI(t *testing.T) *awsAPI {
	t.Helper()
	a := &awsAPI{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.requests++
		a.last = got
		raw, before := a.answer, a.before
		a.mu.Unlock()
		if before != nil {
			before()
		}
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

// reply makes the fake answer with a testdata file (a path below app/).
func (a *awsAPI) reply(t *testing.T, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answer = raw
}

// lastForm is the last request's form (SNS's query protocol).
func (a *awsAPI) lastForm(t *testing.T) url.Values {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	v, err := url.ParseQuery(string(a.last))
	require.NoError(t, err)
	return v
}

func (a *awsAPI) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests
}

// useAWS replaces the tenant's sandbox account of the channel with an
// ACTIVE SES (EMAIL) or SNS (SMS) account with its own keys, and points
// the wired adapter at a fake of the service.
func (b *pipelineBundle) useAWS(t *testing.T, tn *app.Tenant, ch app.Channel) (*app.ChannelAccount, *awsAPI) {
	t.Helper()
	return b.useAWSWith(t, tn, ch, nil)
}

// useAWSWith is useAWS with settings added to the account's.
func (b *pipelineBundle) useAWSWith(t *testing.T, tn *app.Tenant, ch app.Channel, config app.Attrs) (*app.ChannelAccount, *awsAPI) {
	t.Helper()
	api := newAWSAPI(t)
	name, cfg := "sns", app.Attrs{"region": "eu-central-1"}
	if ch == app.Email {
		name, cfg = "ses", app.Attrs{"region": "eu-central-1", "sender_email": "buchungen@reisen.example.de"}
		b.svc.Providers[name].(*ses.Provider).Endpoint = api.srv.URL
	} else {
		b.svc.Providers[name].(*sns.Provider).Endpoint = api.srv.URL
	}
	maps.Copy(cfg, config)
	sb := b.activeAccount(t, tn.ID, ch)
	require.NoError(t, b.svc.Accounts.SetStatus(b.ctx, app.CLIActor, tn.ID, sb.ID, app.AccountDisabled, ""))
	a, err := b.svc.Accounts.Create(b.ctx, app.CLIActor, tn.ID, app.AccountInput{
		Channel: ch, Provider: name, Name: name + " " + tn.Slug, Activate: true, Config: cfg,
		Secrets: map[string]string{"access_key_id": "AKIAHERALDTEST000001", "secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYHERALDTEST"},
	})
	require.NoError(t, err)
	return a, api
}

// TestDispatcher_AWSErrors runs the dispatcher with the real SES and SNS
// adapters against answers as AWS, proxies and emulators send them, and
// checks what becomes of the message and of the tenant's account.
func TestDispatcher_AWSErrors(t *testing.T) {
	t.Parallel()

	// failsMessageOnly: the message fails for good, without a retry, and
	// the account stays ACTIVE for the next passenger.
	failsMessageOnly := []struct {
		name, channel, file, code string
	}{
		{"SESIllegalAddress", "EMAIL", "provider/ses/testdata/errors/bad_request.http", "invalid_recipient"},
		{"SESPlainText400", "EMAIL", "provider/ses/testdata/errors/plain_text_400.http", "http_400"},
		{"SESProxy403", "EMAIL", "provider/ses/testdata/errors/proxy_403_plain.http", "http_403"},
		{"SNSInvalidNumber", "SMS", "provider/sns/testdata/errors/invalid_parameter.http", "invalid_recipient"},
		{"SNSPlainText400", "SMS", "provider/sns/testdata/errors/plain_text_400.http", "http_400"},
	}
	for _, tt := range failsMessageOnly {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupPipeline(t, nil)
			tn := b.tenant(t, "acme")
			acct, api := b.useAWS(t, tn, app.Channel(tt.channel))
			m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, tt.channel))
			api.reply(t, tt.file)

			c := &completion{}
			out, err := b.dispatch(m, 1, 5, c)
			require.NoError(t, err)
			require.Equal(t, app.DispatchOutcome{Done: true}, out, "no retry")
			require.Equal(t, 1, api.count())

			failed := b.message(t, tn.ID, m.ID)
			require.Equal(t, app.MessageFailed, failed.Status)
			require.Equal(t, app.ReasonProviderRejected, *failed.FailedReason)
			require.Equal(t, tt.code, *failed.ErrorCode)
			a := b.account(t, tn.ID, acct.ID)
			require.Equal(t, app.AccountActive, a.Status, "one message's failure leaves the account alone")
			require.Nil(t, a.SuspendedReason)
		})
	}

	// suspendsAccount: the account's keys are refused; the account is
	// SUSPENDED with the reason, and the message fails over instead of
	// being retried.
	suspendsAccount := []struct {
		name, channel, file, code, reason string
	}{
		{"SNSInvalidClientTokenIdFromEmulator", "SMS", "provider/sns/testdata/errors/moto_invalid_client_token.http",
			"InvalidClientTokenId", "The security token included in the request is invalid."},
		{"SNSSignatureDoesNotMatchBareError", "SMS", "provider/sns/testdata/errors/bare_signature_mismatch.http",
			"SignatureDoesNotMatch", "The request signature we calculated does not match"},
		{"SNSInvalidClientTokenId", "SMS", "provider/sns/testdata/errors/invalid_client_token.http",
			"InvalidClientTokenId", "The security token included in the request is invalid."},
		{"SESSendingPaused", "EMAIL", "provider/ses/testdata/errors/sending_paused.http",
			"SendingPausedException", "Sending is paused for this account."},
	}
	for _, tt := range suspendsAccount {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupPipeline(t, nil)
			tn := b.tenant(t, "acme")
			acct, api := b.useAWS(t, tn, app.Channel(tt.channel))
			m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, tt.channel))
			api.reply(t, tt.file)

			c := &completion{}
			out, err := b.dispatch(m, 1, 5, c)
			require.NoError(t, err)
			require.Equal(t, app.DispatchOutcome{Done: true}, out, "not retried")

			failed := b.message(t, tn.ID, m.ID)
			require.Equal(t, app.MessageFailed, failed.Status)
			require.Equal(t, app.ReasonChannelSuspended, *failed.FailedReason)
			require.Equal(t, tt.code, *failed.ErrorCode)
			a := b.account(t, tn.ID, acct.ID)
			require.Equal(t, app.AccountSuspended, a.Status)
			require.NotNil(t, a.SuspendedReason)
			require.Contains(t, *a.SuspendedReason, tt.reason)
			require.Contains(t, *a.SuspendedReason, "("+tt.code+")")
		})
	}

	// retried: the send is tried again later; message and account stay.
	retried := []struct {
		name, channel, file, code string
		snooze                    time.Duration
	}{
		{"SESProxy502", "EMAIL", "provider/ses/testdata/errors/proxy_502_html.http", "http_502", 0},
		{"SNSProxy502", "SMS", "provider/sns/testdata/errors/proxy_502_html.http", "http_502", 0},
		{"SESThrottled", "EMAIL", "provider/ses/testdata/errors/too_many_requests.http", "", time.Second},
		{"SNSThrottling", "SMS", "provider/sns/testdata/errors/throttling.http", "", time.Second},
		{"SESProxy429", "EMAIL", "provider/ses/testdata/errors/proxy_429_plain.http", "", 3 * time.Second},
	}
	for _, tt := range retried {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupPipeline(t, nil)
			// Snoozes after a rate limit are spread by up to half the
			// provider's wait; without jitter they are the wait itself.
			b.setJitter(func(time.Duration) time.Duration { return 0 })
			tn := b.tenant(t, "acme")
			acct, api := b.useAWS(t, tn, app.Channel(tt.channel))
			m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, tt.channel))
			api.reply(t, tt.file)

			c := &completion{}
			out, err := b.dispatch(m, 1, 5, c)
			require.NoError(t, err)
			require.False(t, out.Done)
			require.Equal(t, tt.snooze, out.Snooze)
			if tt.code != "" {
				var pe *provider.Error
				require.ErrorAs(t, out.Retry, &pe)
				require.Equal(t, tt.code, pe.Code)
			}
			require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status)
			require.Equal(t, app.AccountActive, b.account(t, tn.ID, acct.ID).Status)
		})
	}
}

// TestDispatcher_SMSLength checks SNS's limit of 1,600 characters per
// publish on rendered messages: a long German text with more bytes than
// characters goes out, a longer one fails before SNS is called, as a
// failure of the message that leaves the account alone.
func TestDispatcher_SMSLength(t *testing.T) {
	t.Parallel()

	// smsWithTour routes a booking confirmation by SMS whose tour name
	// makes the rendered text long.
	smsWithTour := func(t *testing.T, b *pipelineBundle, tn *app.Tenant, tour string) *app.Message {
		t.Helper()
		req := booking("evt-1", "BK-1", anna, "SMS")
		req["context"].(map[string]any)["tour_name"] = tour
		return b.routeOne(t, tn, req)
	}

	t.Run("UmlautsCountAsCharacters", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		_, api := b.useAWS(t, tn, app.SMS)
		api.reply(t, "provider/sns/testdata/publish.http")
		// Ten parts: past the default limit, within the highest an
		// operator may set.
		require.NoError(t, b.svc.Limits.Set(b.ctx, app.CLIActor, tn.ID, app.LimitInput{MaxSMSParts: "10"}))
		m := smsWithTour(t, b, tn, strings.Repeat("Süße Grüße aus Österreich – Übergänge über Flüsse, ", 26))
		require.Equal(t, 10, *m.SMSParts)
		require.LessOrEqual(t, utf8.RuneCountInString(m.Body), 1600)
		require.Greater(t, len(m.Body), 1600, "more bytes than SNS takes characters")

		sent := b.sendOK(t, m)
		require.Equal(t, "8d2c1f7e-5a3b-5c9d-b0e4-71f6a2d8c3b5", *sent.ExternalMessageID)
		require.Equal(t, 1, api.count())
	})

	t.Run("TooLongFailsBeforeSNS", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct, api := b.useAWS(t, tn, app.SMS)
		api.reply(t, "provider/sns/testdata/publish.http")
		// SNS's 1,600 characters are eleven GSM-7 parts: no tenant's
		// limit lets them through.
		require.NoError(t, b.svc.Limits.Set(b.ctx, app.CLIActor, tn.ID, app.LimitInput{MaxSMSParts: strconv.Itoa(app.MaxSMSPartsCeiling)}))
		m := smsWithTour(t, b, tn, strings.Repeat("Gardasee und Verona ", 80))
		require.Greater(t, utf8.RuneCountInString(m.Body), 1600)

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Zero(t, api.count(), "SNS is not called")
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonSMSTooLong, *failed.FailedReason)
		require.Equal(t, app.ReasonSMSTooLong, *failed.ErrorCode)
		require.Equal(t, app.AccountActive, b.account(t, tn.ID, acct.ID).Status)
	})
}

// TestDispatcher_SMSParts sends SMS through the real SNS adapter: the text
// that reaches the wire is the stored one, prepared for GSM-7 where that
// costs the reader nothing, and its parts are stored with it.
func TestDispatcher_SMSParts(t *testing.T) {
	t.Parallel()

	// smsWith routes a booking confirmation by SMS with the tour name and
	// deposit given.
	smsWith := func(t *testing.T, b *pipelineBundle, tn *app.Tenant, tour, deposit string) *app.Message {
		t.Helper()
		req := booking("evt-1", "BK-1", anna, "SMS")
		req["context"].(map[string]any)["tour_name"] = tour
		req["context"].(map[string]any)["deposit_amount"] = deposit
		return b.routeOne(t, tn, req)
	}

	t.Run("NoBreakSpaceAndQuotesBecomeGSM7", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		_, api := b.useAWS(t, tn, app.SMS)
		api.reply(t, "provider/sns/testdata/publish.http")
		m := smsWith(t, b, tn, "„Gardasee“ – Frühling…", "150,00\u00a0€")
		want := "Ihre Buchung BK-1 ist bestätigt: \"Gardasee\" - Frühling... am 2027-04-12. " +
			"Ihre Anzahlung von 150,00 € haben wir erhalten. Wir freuen uns auf Sie!"
		require.Equal(t, want, m.Body)
		require.Equal(t, 1, *m.SMSParts)
		written := app.CountSMS(strings.Replace(want, "150,00 €", "150,00\u00a0€", 1))
		require.Equal(t, app.EncodingUCS2, written.Encoding, "the no-break space alone would make it UCS-2")
		require.Greater(t, written.Parts, 1)
		require.Equal(t, app.EncodingGSM7, *m.SMSEncoding)

		sent := b.sendOK(t, m)
		require.Equal(t, want, api.lastForm(t).Get("Message"), "what is counted is what is sent")
		require.Equal(t, 1, *sent.SMSParts)
		require.Equal(t, app.EncodingGSM7, *sent.SMSEncoding)
	})

	t.Run("CharacterWithoutGSM7FormKeepsTextAsWritten", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		_, api := b.useAWS(t, tn, app.SMS)
		api.reply(t, "provider/sns/testdata/publish.http")
		m := smsWith(t, b, tn, "Łódź – „Altstadt“ 🚌", "150,00\u00a0€")
		require.Contains(t, m.Body, "Łódź – „Altstadt“ 🚌")
		require.Contains(t, m.Body, "150,00\u00a0€")
		require.Equal(t, app.EncodingUCS2, *m.SMSEncoding)
		require.Equal(t, app.CountSMS(m.Body).Parts, *m.SMSParts)
		require.Equal(t, 3, *m.SMSParts)

		b.sendOK(t, m)
		require.Equal(t, m.Body, api.lastForm(t).Get("Message"))
	})

	t.Run("LongerThanTenantLimitFailsUnsent", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct, api := b.useAWS(t, tn, app.SMS)
		api.reply(t, "provider/sns/testdata/publish.http")
		require.NoError(t, b.svc.Limits.Set(b.ctx, app.CLIActor, tn.ID, app.LimitInput{MaxSMSParts: "1"}))
		m := smsWith(t, b, tn, "Gardasee, Verona und Venedig mit Bootsfahrt", "150,00 €")
		require.Equal(t, 2, *m.SMSParts)

		out, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Zero(t, api.count(), "SNS is not called")
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonSMSTooLong, *failed.FailedReason)
		tl := b.timeline(t, tn.ID, m.ID)
		require.Contains(t, fmt.Sprint(tl[len(tl)-1].Detail), "2 parts long")
		require.Contains(t, fmt.Sprint(tl[len(tl)-1].Detail), "limit is 1 part")
		require.Equal(t, app.AccountActive, b.account(t, tn.ID, acct.ID).Status)
	})
}
