package meta_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
)

// FuzzWebhook feeds the Meta webhook receiver's two steps any body: the
// signature check accepts exactly the body the app secret signed, and the
// parser never panics and yields only statuses Herald knows.
func FuzzWebhook(f *testing.F) {
	for _, name := range []string{"status_webhook.json", "inbound_webhook.json", "template_status_webhook.json"} {
		body, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(body, "app-secret")
	}
	f.Add([]byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"statuses":[{"id":"wamid.1","status":"failed","timestamp":"x","errors":[{"code":"131047"}]}]}}]}]}`), "s")
	f.Add([]byte(`{"object":"page"}`), "")
	f.Add([]byte(`{`), "s")
	known := []string{provider.StatusSent, provider.StatusDelivered, provider.StatusRead, provider.StatusFailed, provider.StatusInfo}
	f.Fuzz(func(t *testing.T, body []byte, secret string) {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		header := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		require.Equal(t, secret != "", meta.VerifySignature(secret, body, header), "a signed body verifies (an empty secret never does)")
		require.False(t, meta.VerifySignature(secret, append(slices.Clone(body), ' '), header), "a changed body does not")
		require.False(t, meta.VerifySignature(secret+"x", body, header), "another secret does not")
		require.False(t, meta.VerifySignature(secret, body, strings.TrimPrefix(header, "sha256=")), "the header names its algorithm")
		require.False(t, meta.VerifySignature(secret, body, header[:len(header)-2]), "a cut signature does not")

		w, err := meta.ParseWebhook(body)
		if err != nil {
			require.Nil(t, w)
			return
		}
		for _, r := range w.Receipts {
			require.Contains(t, known, r.Status)
			require.Equal(t, "meta", r.Provider)
		}
	})
}
