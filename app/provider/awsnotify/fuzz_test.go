package awsnotify_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
)

// FuzzEnvelope signs an SNS notification with any message and subject the
// way SNS does, sends it through JSON and the parser, and checks that it
// verifies, and that any change to what was signed does not.
func FuzzEnvelope(f *testing.F) {
	sns := awsnotifytest.New(f)
	ctx := context.Background()
	f.Add(`{"eventType":"Delivery","mail":{"messageId":"m1"}}`, "", true)
	f.Add("line one\nSubject\nforged", "Amazon SES Email Event Notification", false)
	f.Add("\u2028\u00e4\x00", "\r\n", true)
	f.Fuzz(func(t *testing.T, message, subject string, v2 bool) {
		// SNS posts JSON, which carries only valid UTF-8.
		message, subject = strings.ToValidUTF8(message, "\uFFFD"), strings.ToValidUTF8(subject, "\uFFFD")
		e := sns.Notification(topic, message)
		e.Subject = subject
		version := "1"
		if v2 {
			version = "2"
		}
		sns.Sign(e, version)
		raw, err := json.Marshal(e)
		require.NoError(t, err)
		got, err := awsnotify.ParseEnvelope(raw)
		require.NoError(t, err)
		require.NoError(t, sns.Verifier.Verify(ctx, got), "what SNS signed verifies after the trip through JSON")

		got.Message = message + "x"
		require.Error(t, sns.Verifier.Verify(ctx, got), "a changed message does not")
		got.Message, got.Subject = message, subject+"x"
		require.Error(t, sns.Verifier.Verify(ctx, got), "a changed subject does not")
	})
}

// FuzzParseEnvelope: any body either parses into an envelope with its
// required fields or is refused; it never panics.
func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(`{"Type":"Notification","MessageId":"1","TopicArn":"arn","Message":"m"}`))
	f.Add([]byte(`{"Type":"SubscriptionConfirmation"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := awsnotify.ParseEnvelope(body)
		if err != nil {
			return
		}
		require.NotEmpty(t, e.Type)
		require.NotEmpty(t, e.MessageID)
		require.NotEmpty(t, e.TopicArn)
	})
}

// FuzzReceipts feeds the SES event and SMS delivery-status readers any
// message: they never panic and report only statuses Herald knows.
func FuzzReceipts(f *testing.F) {
	f.Add(`{"eventType":"Bounce","mail":{"messageId":"m1"},"bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"a@x","diagnosticCode":"smtp; 550"}]}}`)
	f.Add(`{"notification":{"messageId":"m1","timestamp":"2026-11-21 10:00:00.000"},"delivery":{"phoneCarrier":"x","providerResponse":"Phone is currently unreachable","destination":"+4915112345678"},"status":"FAILURE"}`)
	f.Add(`{"eventType":"Complaint","mail":{}}`)
	known := []string{provider.StatusSent, provider.StatusDelivered, provider.StatusRead, provider.StatusFailed, provider.StatusInfo}
	f.Fuzz(func(t *testing.T, message string) {
		if r, err := awsnotify.SESReceipt(message, "n-1"); err == nil {
			require.Contains(t, known, r.Status)
		}
		if r, err := awsnotify.SMSReceipt([]byte(message)); err == nil {
			require.Contains(t, known, r.Status)
		}
	})
}
