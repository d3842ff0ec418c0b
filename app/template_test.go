package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestRender(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"passenger_name": "Anna <b>&</b>", "tour_name": "Gardasee"}

	out, missing := app.Render("Hi {{ Passenger_Name }}, {{tour_name}} {{seat}}", vars, false)
	require.Equal(t, "Hi Anna <b>&</b>, Gardasee ", out, "names match case-insensitively; plain text is not escaped")
	require.Equal(t, []string{"seat"}, missing)

	out, _ = app.Render("<p>{{passenger_name}}</p>", vars, true)
	require.Equal(t, "<p>Anna &lt;b&gt;&amp;&lt;/b&gt;</p>", out, "e-mail values are HTML-escaped, the template is not")
}

func TestLocaleChain(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"en-GB", "en", "de-DE", "de"}, app.LocaleChain("en-GB", "de-DE"))
	require.Equal(t, []string{"fr", "nl-NL", "nl", "de-DE", "de"}, app.LocaleChain("fr", "nl-NL"))
	require.Equal(t, []string{"de-DE", "de"}, app.LocaleChain("", "de-DE"))
}

func TestRedact(t *testing.T) {
	t.Parallel()
	ctx := map[string]any{
		"passenger_name": "Anna",
		"API_TOKEN":      "t",
		"nested":         map[string]any{"client_secret": "s", "list": []any{map[string]any{"Password": "p", "ok": 1}}},
	}
	paths := app.Redact(ctx)
	require.Equal(t, []string{"API_TOKEN", "nested.client_secret", "nested.list[0].Password"}, paths)
	require.Equal(t, "<redacted>", ctx["API_TOKEN"])
	require.Equal(t, "Anna", ctx["passenger_name"])
	require.Equal(t, 1, ctx["nested"].(map[string]any)["list"].([]any)[0].(map[string]any)["ok"])
}

func TestCanTransition(t *testing.T) {
	t.Parallel()
	allowed := [][2]string{
		{"QUEUED", "SENT"}, {"SENT", "DELIVERED"}, {"SENT", "READ"}, {"DELIVERED", "READ"}, {"QUEUED", "DELIVERED"},
		{"QUEUED", "FAILED"}, {"SENT", "FAILED"}, {"DELIVERED", "FAILED"}, {"QUEUED", "CANCELLED"},
	}
	refused := [][2]string{
		{"READ", "DELIVERED"}, {"DELIVERED", "SENT"}, {"READ", "FAILED"}, {"FAILED", "SENT"}, {"SENT", "CANCELLED"},
		{"CANCELLED", "SENT"}, {"READ", "READ"},
	}
	for _, c := range allowed {
		require.True(t, app.CanTransition(c[0], c[1]), "%s -> %s", c[0], c[1])
	}
	for _, c := range refused {
		require.False(t, app.CanTransition(c[0], c[1]), "%s -> %s", c[0], c[1])
	}
}

func TestNormalizePhone(t *testing.T) {
	t.Parallel()
	got, err := app.NormalizePhone("+49 (151) 234-56789")
	require.NoError(t, err)
	require.Equal(t, "+4915123456789", got)
	got, err = app.NormalizePhone("+919876543210")
	require.NoError(t, err)
	require.Equal(t, "+919876543210", got, "Indian numbers pass unchanged")
	for _, bad := range []string{"0151 23456789", "+49 1", "+999 123456789", "phone",
		// Found by FuzzNormalizePhone: letters are read as keypad digits,
		// and the result was a 16-digit number, longer than E.164 allows.
		"+492100A0A00A0000", "+49 151 CALL NOW", "+4921002020020000"} {
		_, err := app.NormalizePhone(bad)
		require.Error(t, err, bad)
	}
}
