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

func TestRender_OptionalBlocks(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"seat": "12A", "blank": "  ", "tour_name": "Gardasee"}

	out, missing := app.Render("A{{#if seat}} seat {{seat}}{{else}} free seating{{/if}}.", vars, false)
	require.Equal(t, "A seat 12A.", out)
	require.Empty(t, missing)

	out, missing = app.Render("{{#if blank}}x{{else}}empty{{/if}} {{#if absent}}{{absent}}{{/if}}", vars, false)
	require.Equal(t, "empty ", out, "a blank or absent variable hides the block, and its placeholders are not missing")
	require.Empty(t, missing)

	out, _ = app.Render("{{#if tour_name}}T{{#if seat}}S{{#if absent}}A{{else}}-{{/if}}{{/if}}{{else}}no{{/if}}", vars, false)
	require.Equal(t, "TS-", out, "blocks nest")

	out, _ = app.Render("{{ #if SEAT }}<b>{{seat}}</b>{{ /if }}", map[string]string{"seat": "<i>"}, true)
	require.Equal(t, "<b>&lt;i&gt;</b>", out, "tags allow spaces and any case; values stay escaped")

	out, _ = app.Render("{{#if seat}}open", vars, false)
	require.Equal(t, "{{#if seat}}open", out, "a template whose blocks do not parse renders as it is, never failing a send")
}

func TestValidateBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, text, message string }{
		{"Unclosed", "Hello\n  {{#if seat}}x", "Line 2, column 3: {{#if seat}} is not closed by {{/if}}."},
		{"StrayClose", "a {{/if}}", "Line 1, column 3: {{/if}} without its {{#if}}."},
		{"StrayElse", "ä{{else}}", "Line 1, column 2: {{else}} outside a {{#if}} block."},
		{"TwoElse", "{{#if a}}1{{else}}2{{else}}3{{/if}}", "Line 1, column 20: A second {{else}} in one {{#if}} block."},
		{"Unknown", "x\ny\n{{#each seats}}{{/each}}", "Line 3, column 1: {{#each seats}} is not a block this template language knows; use {{#if name}}, {{else}} and {{/if}}."},
		{"NoName", "{{#if}}x{{/if}}", "Line 1, column 1: {{#if}} needs one variable name, as in {{#if seat}}."},
		{"TwoNames", "{{#if a b}}x{{/if}}", "Line 1, column 1: {{#if a b}} needs one variable name, as in {{#if seat}}."},
		{"WrongClose", "{{#if a}}x{{/unless}}", "Line 1, column 11: {{/unless}} is not a block this template language knows; use {{#if name}}, {{else}} and {{/if}}."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := app.ValidateBlocks("body", tc.text)
			require.Error(t, err)
			require.Equal(t, "body", app.ErrorField(err))
			require.Equal(t, tc.message, app.ErrorMessage(err))
		})
	}
	require.NoError(t, app.ValidateBlocks("body", "{{#if a}}{{#if b}}x{{else}}y{{/if}}{{/if}} {{name}}"))

	def, ok := app.BuiltInEvent("BOOKING_CONFIRMED")
	require.True(t, ok)
	_, err := app.ValidateTemplate(def, app.SMS, app.TemplateInput{Body: "Hi {{#if passenger_name}}{{passenger_name}}"})
	require.Equal(t, "body", app.ErrorField(err), "saving a template checks its blocks")
	_, err = app.ValidateTemplate(def, app.Email, app.TemplateInput{Subject: "{{/if}}", Body: "x"})
	require.Equal(t, "subject", app.ErrorField(err))
	warnings, err := app.ValidateTemplate(def, app.SMS, app.TemplateInput{Body: "{{#if no_such}}x{{/if}}"})
	require.NoError(t, err)
	require.Contains(t, warnings, "no_such", "a condition on a variable the event lacks is a warning, as a placeholder is")
}
