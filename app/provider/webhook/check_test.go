package webhook

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://hooks.example.com/herald", "https://93.184.216.34/x"} {
		require.NoError(t, CheckURL(ok, false), ok)
	}
	for raw, want := range map[string]string{
		"http://hooks.example.com/herald":    "https://",
		"https://user:pw@hooks.example.com/": "user name or password",
		"https://127.0.0.1/hook":             "loopback",
		"https://169.254.169.254/latest":     "metadata",
		"https://10.1.2.3/":                  "private",
		"https://metadata.google.internal/":  "internal name",
		"https://printer.local/":             "internal name",
		"https://localhost/":                 "internal name",
		"ftp://hooks.example.com/":           "https://",
		"https:///nohost":                    "no host",
	} {
		err := CheckURL(raw, false)
		require.Error(t, err, raw)
		require.Contains(t, err.Error(), want, raw)
	}
	require.NoError(t, CheckURL("http://hooks.example.com/herald", true), "plain http in development")
}
