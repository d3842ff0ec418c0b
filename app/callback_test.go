package app_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// The test vector of the Standard Webhooks reference libraries: secret,
// webhook-id, timestamp and body, and the signature they must give.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specPayload   = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignCallback(t *testing.T) {
	t.Parallel()

	t.Run("SpecVector", func(t *testing.T) {
		t.Parallel()
		sig, err := app.SignCallback(specSecret, specMsgID, specTimestamp, []byte(specPayload))
		require.NoError(t, err)
		require.Equal(t, specSignature, sig)
	})

	t.Run("SecretWithoutPrefixSignsTheSame", func(t *testing.T) {
		t.Parallel()
		sig, err := app.SignCallback(strings.TrimPrefix(specSecret, "whsec_"), specMsgID, specTimestamp, []byte(specPayload))
		require.NoError(t, err)
		require.Equal(t, specSignature, sig)
	})

	t.Run("EveryPartIsSigned", func(t *testing.T) {
		t.Parallel()
		for name, sign := range map[string]func() (string, error){
			"id": func() (string, error) {
				return app.SignCallback(specSecret, specMsgID+"x", specTimestamp, []byte(specPayload))
			},
			"timestamp": func() (string, error) {
				return app.SignCallback(specSecret, specMsgID, specTimestamp+1, []byte(specPayload))
			},
			"body": func() (string, error) {
				return app.SignCallback(specSecret, specMsgID, specTimestamp, []byte(`{"test":2432232314}`))
			},
		} {
			sig, err := sign()
			require.NoError(t, err)
			require.NotEqual(t, specSignature, sig, "changing the %s must change the signature", name)
		}
	})

	t.Run("SecretNotBase64", func(t *testing.T) {
		t.Parallel()
		_, err := app.SignCallback("whsec_not base64!", specMsgID, specTimestamp, []byte(specPayload))
		require.Error(t, err)
	})
}

func TestNewCallbackSecret(t *testing.T) {
	t.Parallel()
	a, b := app.NewCallbackSecret(), app.NewCallbackSecret()
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "whsec_"))
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	require.NoError(t, err)
	// Standard Webhooks: at least 24 bytes, at most 64.
	require.Len(t, key, 32)
}

// FuzzSignCallback: any id, timestamp and body sign without a panic, the
// same way twice, and differently under another secret.
func FuzzSignCallback(f *testing.F) {
	f.Add(specMsgID, int64(specTimestamp), []byte(specPayload))
	f.Add("", int64(0), []byte{})
	f.Add("msg_.", int64(-1), []byte("\x00\xff"))
	other := app.NewCallbackSecret()
	f.Fuzz(func(t *testing.T, id string, ts int64, body []byte) {
		a, err := app.SignCallback(specSecret, id, ts, body)
		require.NoError(t, err)
		b, err := app.SignCallback(specSecret, id, ts, body)
		require.NoError(t, err)
		require.Equal(t, a, b)
		c, err := app.SignCallback(other, id, ts, body)
		require.NoError(t, err)
		require.NotEqual(t, a, c)
		require.True(t, strings.HasPrefix(a, "v1,"))
	})
}
