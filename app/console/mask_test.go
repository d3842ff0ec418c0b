package console_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/console"
)

func TestMaskAddress_WebhookURLKeepsOnlySchemeAndHost(t *testing.T) {
	cases := map[string]string{
		"https://hooks.example.com/in/abc?token=s3cret":         "https://hooks.example.com/…",
		"https://user:pa55@hooks.example.com/in?sig=1#frag":     "https://hooks.example.com/…",
		"http://10.0.0.5:8080/herald/callback/k3y":              "http://10.0.0.5:8080/…",
		"https://hooks.example.com":                             "https://hooks.example.com/…",
		"https://hooks.example.com/?access_token=abcdef0123456": "https://hooks.example.com/…",
		"https://":          "•••",
		"http://%zz/broken": "•••",
	}
	for in, want := range cases {
		got := console.MaskAddress(in)
		require.Equal(t, want, got, in)
		for _, secret := range []string{"s3cret", "pa55", "k3y", "abcdef0123456", "user", "/in", "callback"} {
			require.NotContains(t, got, secret, in)
		}
	}
}

func TestMaskAddress_PeopleAddresses(t *testing.T) {
	require.Equal(t, "+49 ••• ••• 4567", console.MaskAddress("+4915112344567"))
	require.Equal(t, "m•••@example.com", console.MaskAddress("maria.schmidt@example.com"))
}

func TestMaskText_MasksEveryAddress(t *testing.T) {
	got := console.MaskText("550 5.1.1 <anna@example.com> user unknown; also +4917612345678 and ben.o@example.org")
	require.NotContains(t, got, "anna@")
	require.NotContains(t, got, "ben.o@")
	require.NotContains(t, got, "17612345678")
	require.Contains(t, got, "a•••@example.com")
	require.Contains(t, got, "b•••@example.org")
	require.Contains(t, got, "+49 ••• ••• 5678")
}
