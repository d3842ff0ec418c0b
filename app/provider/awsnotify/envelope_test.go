package awsnotify_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
)

const topic = "arn:aws:sns:eu-central-1:123456789012:ses-events"

func TestVerifier(t *testing.T) {
	t.Parallel()
	sns := awsnotifytest.New(t)
	ctx := context.Background()

	for _, version := range []string{"1", "2"} {
		t.Run("SignatureVersion"+version, func(t *testing.T) {
			e := sns.Notification(topic, `{"eventType":"Delivery"}`)
			sns.Sign(e, version)
			require.NoError(t, sns.Verifier.Verify(ctx, e))
			e.Message = `{"eventType":"Bounce"}`
			require.ErrorContains(t, sns.Verifier.Verify(ctx, e), "does not verify", "a changed message fails")
		})
	}

	t.Run("SubjectIsSigned", func(t *testing.T) {
		e := sns.Notification(topic, "m")
		e.Subject = "Amazon SES Email Event Notification"
		sns.Sign(e, "2")
		require.NoError(t, sns.Verifier.Verify(ctx, e))
		e.Subject = "changed"
		require.Error(t, sns.Verifier.Verify(ctx, e))
	})

	t.Run("ConfirmationSigned", func(t *testing.T) {
		e := sns.Confirmation(topic)
		require.NoError(t, sns.Verifier.Verify(ctx, e))
		e.SubscribeURL = "https://evil.example/confirm"
		require.Error(t, sns.Verifier.Verify(ctx, e), "the SubscribeURL is covered by the signature")
	})

	t.Run("CertificateCached", func(t *testing.T) {
		before := sns.CertFetches.Load()
		for range 3 {
			require.NoError(t, sns.Verifier.Verify(ctx, sns.Notification(topic, "x")))
		}
		require.LessOrEqual(t, sns.CertFetches.Load()-before, int64(0))
	})

	t.Run("WrongCertificateHost", func(t *testing.T) {
		e := sns.Notification(topic, "x")
		e.SigningCertURL = "https://attacker.example.com/SimpleNotificationService-test.pem"
		require.ErrorContains(t, sns.Verifier.Verify(ctx, e), "not an SNS host")
	})

	t.Run("CertificateNotPEMPath", func(t *testing.T) {
		e := sns.Notification(topic, "x")
		e.SigningCertURL = sns.Server.URL + "/cert.txt"
		require.ErrorContains(t, sns.Verifier.Verify(ctx, e), ".pem")
	})

	t.Run("PlainHTTPCertificate", func(t *testing.T) {
		e := sns.Notification(topic, "x")
		e.SigningCertURL = "http://127.0.0.1/SimpleNotificationService-test.pem"
		require.ErrorContains(t, sns.Verifier.Verify(ctx, e), "not https")
	})

	t.Run("UnknownVersionOrGarbage", func(t *testing.T) {
		e := sns.Notification(topic, "x")
		e.SignatureVersion = "3"
		require.Error(t, sns.Verifier.Verify(ctx, e))
		e = sns.Notification(topic, "x")
		e.Signature = "%%%"
		require.Error(t, sns.Verifier.Verify(ctx, e))
	})

	t.Run("AmazonHostPattern", func(t *testing.T) {
		for host, ok := range map[string]bool{
			"sns.eu-central-1.amazonaws.com": true, "sns.cn-north-1.amazonaws.com.cn": true,
			"sns.eu-central-1.amazonaws.com.evil.com": false, "evilsns.eu-central-1.amazonaws.com": false, "sns.x.amazonaws.com": false,
		} {
			require.Equal(t, ok, awsnotify.AmazonHost.MatchString(host), host)
		}
		v := &awsnotify.Verifier{HostPattern: regexp.MustCompile(`^nothing$`)}
		require.Error(t, v.Verify(ctx, sns.Notification(topic, "x")))
	})

	t.Run("Confirm", func(t *testing.T) {
		before := sns.Confirmations.Load()
		require.NoError(t, sns.Verifier.Confirm(ctx, sns.Confirmation(topic)))
		require.Equal(t, before+1, sns.Confirmations.Load())
		e := sns.Confirmation(topic)
		e.SubscribeURL = "https://sns.eu-central-1.amazonaws.com.evil.com/confirm"
		require.Error(t, sns.Verifier.Confirm(ctx, e))
	})
}

// TestVerifier_Loopback checks the development verifier: it takes a
// certificate served on 127.0.0.1, over plain http too, and still holds
// every other host to Amazon's pattern and https; the production one
// (Loopback off) refuses the loopback certificate.
func TestVerifier_Loopback(t *testing.T) {
	t.Parallel()
	sns := awsnotifytest.NewLoopback(t)
	ctx := context.Background()

	t.Run("DevAcceptsLoopback", func(t *testing.T) {
		require.True(t, strings.HasPrefix(sns.CertURL(), "http://127.0.0.1:"), sns.CertURL())
		require.NoError(t, sns.Verifier.Verify(ctx, sns.Notification(topic, "x")))
		require.NoError(t, sns.Verifier.Confirm(ctx, sns.Confirmation(topic)))
	})

	t.Run("ProdRefusesLoopback", func(t *testing.T) {
		prod := &awsnotify.Verifier{}
		require.ErrorContains(t, prod.Verify(ctx, sns.Notification(topic, "x")), "not https")
		require.ErrorContains(t, prod.Confirm(ctx, sns.Confirmation(topic)), "not https")
	})

	t.Run("DevHoldsOtherHosts", func(t *testing.T) {
		for _, u := range []string{
			"http://sns.eu-central-1.amazonaws.com/SimpleNotificationService-test.pem",
			"https://attacker.example.com/SimpleNotificationService-test.pem",
			"http://localhost/SimpleNotificationService-test.pem",
			"http://127.0.0.2/SimpleNotificationService-test.pem",
			"ftp://127.0.0.1/SimpleNotificationService-test.pem",
		} {
			e := sns.Notification(topic, "x")
			e.SigningCertURL = u
			require.Error(t, sns.Verifier.Verify(ctx, e), u)
		}
	})
}

func TestSESReceipt(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		event, status, code string
		complaint           bool
	}{
		"Delivery":        {`{"eventType":"Delivery","mail":{"messageId":"m1"},"delivery":{"timestamp":"2026-11-21T10:00:00.000Z","smtpResponse":"250 OK"}}`, provider.StatusDelivered, "delivery", false},
		"BouncePermanent": {`{"eventType":"Bounce","mail":{"messageId":"m1"},"bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"a@x","diagnosticCode":"smtp; 550 5.1.1 user unknown"}]}}`, provider.StatusFailed, "bounce:Permanent/General", false},
		"BounceTransient": {`{"eventType":"Bounce","mail":{"messageId":"m1"},"bounce":{"bounceType":"Transient","bounceSubType":"MailboxFull"}}`, provider.StatusInfo, "bounce:Transient/MailboxFull", false},
		"Complaint":       {`{"eventType":"Complaint","mail":{"messageId":"m1"},"complaint":{"complaintFeedbackType":"abuse"}}`, provider.StatusFailed, "complaint", true},
		"Reject":          {`{"eventType":"Reject","mail":{"messageId":"m1"},"reject":{"reason":"Bad content"}}`, provider.StatusFailed, "reject", false},
		"Open":            {`{"eventType":"Open","mail":{"messageId":"m1"}}`, provider.StatusInfo, "open", false},
		"OlderIdentity":   {`{"notificationType":"Delivery","mail":{"messageId":"m1"}}`, provider.StatusDelivered, "delivery", false},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := awsnotify.SESReceipt(tc.event, "sns-1")
			require.NoError(t, err)
			require.Equal(t, "ses", r.Provider)
			require.Equal(t, "m1", r.ExternalID)
			require.Equal(t, "sns-1", r.ReceiptID)
			require.Equal(t, tc.status, r.Status)
			require.Equal(t, tc.code, r.Code)
			require.Equal(t, tc.complaint, r.Complaint)
		})
	}
	r, err := awsnotify.SESReceipt(`{"eventType":"Delivery","mail":{"messageId":"m1","tags":{"ses:configuration-set":["acme-events"],"tenant_id":["t"]}}}`, "sns-2")
	require.NoError(t, err)
	require.Equal(t, "acme-events", r.AccountRef, "the configuration set names the account")
	require.Equal(t, uuid.Nil, r.MessageRef, "no message_id tag, no message named")
	// Herald's message_id tag names the message, strictly: one canonical id.
	const id = "6f1c2ad4-1c5e-4c7b-9d0e-3a5b8e2f9a10"
	for tags, want := range map[string]uuid.UUID{
		`{"message_id":["` + id + `"]}`:                       uuid.MustParse(id),
		`{"message_id":["` + strings.ToUpper(id) + `"]}`:      uuid.Nil,
		`{"message_id":["` + id + `","` + id + `"]}`:          uuid.Nil,
		`{"message_id":["urn:uuid:` + id + `"]}`:              uuid.Nil,
		`{"message_id":["6f1c2ad41c5e4c7b9d0e3a5b8e2f9a10"]}`: uuid.Nil,
		`{"message_id":[]}`:                                   uuid.Nil,
	} {
		r, err := awsnotify.SESReceipt(`{"eventType":"Send","mail":{"messageId":"m1","tags":`+tags+`}}`, "sns-3")
		require.NoError(t, err)
		require.Equal(t, want, r.MessageRef, tags)
	}
	_, err = awsnotify.SESReceipt(`{"eventType":"Delivery"}`, "x")
	require.Error(t, err, "an event without mail.messageId is refused")
}

func TestSMSReceipt(t *testing.T) {
	t.Parallel()
	r, err := awsnotify.SMSReceipt([]byte(`{"notification":{"messageId":"s1","timestamp":"2026-11-21 10:00:00.123"},"delivery":{"destination":"+4915123456789","providerResponse":"Message has been accepted by phone carrier"},"status":"SUCCESS"}`))
	require.NoError(t, err)
	require.Equal(t, provider.StatusDelivered, r.Status)
	require.Equal(t, "s1:SUCCESS", r.ReceiptID)
	require.Equal(t, 2026, r.At.Year())

	r, err = awsnotify.SMSReceipt([]byte(`{"notification":{"messageId":"s2"},"delivery":{"providerResponse":"Phone is currently unreachable/unavailable"},"status":"FAILURE"}`))
	require.NoError(t, err)
	require.Equal(t, provider.StatusFailed, r.Status)
	require.Equal(t, "Phone is currently unreachable/unavailable", r.Reason)

	_, err = awsnotify.SMSReceipt([]byte(`{"notification":{"messageId":"s3"},"status":"MAYBE"}`))
	require.Error(t, err)
}
