package meta_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
)

const appSecret = "9f3c2b1a8e7d6c5b4a39281706f5e4d3"

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestVerifySignature(t *testing.T) {
	t.Parallel()
	body := readFile(t, "status_webhook.json")
	good := sign(appSecret, body)

	for _, tt := range []struct {
		name   string
		secret string
		body   []byte
		header string
		want   bool
	}{
		{"Good", appSecret, body, good, true},
		{"GoodUppercaseHex", appSecret, body, "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), true},
		{"WrongSecret", appSecret, body, sign("another-secret", body), false},
		{"TamperedBody", appSecret, append([]byte(" "), body...), good, false},
		{"Missing", appSecret, body, "", false},
		{"NoPrefix", appSecret, body, strings.TrimPrefix(good, "sha256="), false},
		{"SHA1Prefix", appSecret, body, "sha1=" + strings.TrimPrefix(good, "sha256="), false},
		{"NotHex", appSecret, body, "sha256=zz" + good[9:], false},
		{"Truncated", appSecret, body, good[:len(good)-2], false},
		{"EmptySecret", "", body, sign("", body), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, meta.VerifySignature(tt.secret, tt.body, tt.header))
		})
	}
}

func TestVerifyChallenge(t *testing.T) {
	t.Parallel()
	const token = "k4q7zr2m9xw3"

	for _, tt := range []struct {
		name      string
		query     string
		token     string
		challenge string
		ok        bool
	}{
		{"Good", "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=" + token, token, "1158201444", true},
		{"BadToken", "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=guess", token, "", false},
		{"MissingToken", "hub.mode=subscribe&hub.challenge=1158201444", token, "", false},
		{"WrongMode", "hub.mode=unsubscribe&hub.challenge=1158201444&hub.verify_token=" + token, token, "", false},
		{"NoMode", "hub.challenge=1158201444&hub.verify_token=" + token, token, "", false},
		{"NoChallenge", "hub.mode=subscribe&hub.verify_token=" + token, token, "", false},
		{"AccountWithoutToken", "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=", "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			challenge, ok := meta.VerifyChallenge(q, tt.token)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.challenge, challenge)
		})
	}
}

func TestParseWebhook(t *testing.T) {
	t.Parallel()

	t.Run("Statuses", func(t *testing.T) {
		t.Parallel()
		w, err := meta.ParseWebhook(readFile(t, "status_webhook.json"))
		require.NoError(t, err)
		require.Empty(t, w.Inbound)

		const failedID = "wamid.HBgNNDkxNzAxMTExMjIyMxUCABEYEkE4QzdFRjg0RTU3RDFGMjlCNwA="
		// Payload order is kept (delivered before sent, as Meta may send
		// them); the "deleted" status is skipped.
		require.Len(t, w.Receipts, 4)
		want := []provider.Receipt{
			{Provider: "meta", ExternalID: wamid, ReceiptID: wamid + ":delivered:1750857390", Status: provider.StatusDelivered, At: time.Unix(1750857390, 0).UTC()},
			{Provider: "meta", ExternalID: wamid, ReceiptID: wamid + ":sent:1750857384", Status: provider.StatusSent, At: time.Unix(1750857384, 0).UTC()},
			{Provider: "meta", ExternalID: wamid, ReceiptID: wamid + ":read:1750857512", Status: provider.StatusRead, At: time.Unix(1750857512, 0).UTC()},
			{Provider: "meta", ExternalID: failedID, ReceiptID: failedID + ":failed:1750857401", Status: provider.StatusFailed, At: time.Unix(1750857401, 0).UTC(),
				Code: "131026", Reason: "Message undeliverable",
				Error: &provider.Error{Code: "131026", Class: provider.Permanent, Reason: "Message undeliverable"}},
		}
		for i := range want {
			// Each status names the business number it is about.
			want[i].AccountRef = "106540352242922"
		}
		// The sent and delivered statuses echo the send's
		// biz_opaque_callback_data; another application's value on the
		// read status names no message.
		ref := uuid.MustParse("6f1c2ad4-1c5e-4c7b-9d0e-3a5b8e2f9a10")
		want[0].MessageRef, want[1].MessageRef = ref, ref
		for i, r := range w.Receipts {
			require.NotEmpty(t, r.Raw)
			require.LessOrEqual(t, len(r.Raw), 310, "Raw is an excerpt")
			require.Contains(t, r.Raw, `"status":"`+want[i].Status+`"`)
			r.Raw = ""
			require.Equal(t, want[i], r)
		}
	})

	t.Run("StatusesAreStableOnReplay", func(t *testing.T) {
		t.Parallel()
		a, err := meta.ParseWebhook(readFile(t, "status_webhook.json"))
		require.NoError(t, err)
		b, err := meta.ParseWebhook(readFile(t, "status_webhook.json"))
		require.NoError(t, err)
		require.Equal(t, a.Receipts, b.Receipts)
	})

	t.Run("Inbound", func(t *testing.T) {
		t.Parallel()
		w, err := meta.ParseWebhook(readFile(t, "inbound_webhook.json"))
		require.NoError(t, err)
		require.Empty(t, w.Receipts)
		require.Equal(t, []meta.Inbound{
			{From: "4915112345678", Name: "Ada Lovelace", ExternalID: "wamid.HBgNNDkxNTExMjM0NTY3OBUCABIYFjNFQjBDMEI0RTVBQjhGNjQ3OUQ5NjIA",
				Type: "text", Text: "Danke, bis Freitag!", At: time.Unix(1750857600, 0).UTC(), PhoneNumberID: phoneNumberID},
			{From: "4915112345678", Name: "Ada Lovelace", ExternalID: "wamid.HBgNNDkxNTExMjM0NTY3OBUCABIYFjNFQjBFNTdCQUY4QjNCOEMxNDAA",
				Type: "image", At: time.Unix(1750857645, 0).UTC(), PhoneNumberID: phoneNumberID},
		}, w.Inbound)
	})

	t.Run("ErrorDetailsJoinTheReason", func(t *testing.T) {
		t.Parallel()
		body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{
			"messaging_product":"whatsapp","metadata":{"phone_number_id":"106540352242922"},
			"statuses":[{"id":"wamid.X","status":"failed","timestamp":"not-a-number","recipient_id":"49151",
			"errors":[{"code":131047,"title":"Re-engagement message","message":"Re-engagement message",
			"error_data":{"details":"Message failed to send because more than 24 hours have passed since the customer last replied to this number."}}]}]}}]}]}`
		w, err := meta.ParseWebhook([]byte(body))
		require.NoError(t, err)
		require.Len(t, w.Receipts, 1)
		r := w.Receipts[0]
		require.Equal(t, "131047", r.Code)
		require.Equal(t, "Re-engagement message: Message failed to send because more than 24 hours have passed since the customer last replied to this number.", r.Reason)
		require.True(t, r.At.IsZero(), "an unreadable timestamp is left for the receiver")
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		w, err := meta.ParseWebhook([]byte(`{"object":"whatsapp_business_account","entry":[]}`))
		require.NoError(t, err)
		require.Empty(t, w.Receipts)
		require.Empty(t, w.Inbound)
	})

	t.Run("NotWhatsApp", func(t *testing.T) {
		t.Parallel()
		_, err := meta.ParseWebhook([]byte(`{"object":"page","entry":[]}`))
		require.Error(t, err)
	})

	t.Run("Malformed", func(t *testing.T) {
		t.Parallel()
		_, err := meta.ParseWebhook([]byte(`{"object":"whatsapp_business_account","entry":[`))
		require.Error(t, err)
	})
}
