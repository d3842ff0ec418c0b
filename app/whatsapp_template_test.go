package app_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

func TestDefaultTemplates_MetaTemplates(t *testing.T) {
	t.Parallel()

	numbered := regexp.MustCompile(`\{\{(\d+)\}\}`)
	names := map[string]string{}
	count := 0
	for _, d := range app.DefaultTemplates() {
		if d.Channel != app.WhatsApp {
			require.Nil(t, d.WhatsApp, "%s/%s/%s: only WhatsApp texts carry a Meta template", d.Event, d.Channel, d.Locale)
			continue
		}
		count++
		key := d.Event + "/" + d.Locale
		s := d.WhatsApp
		require.NotNil(t, s, "%s carries a Meta template", key)
		event, ok := app.BuiltInEvent(d.Event)
		require.True(t, ok)

		require.Equal(t, "herald_"+strings.ToLower(d.Event), s.Name, key)
		require.Regexp(t, `^[a-z0-9_]{1,512}$`, s.Name, key)
		require.Equal(t, map[string]string{"de-DE": "de", "en": "en"}[d.Locale], s.Language, key)
		require.Equal(t, app.MetaCategoryUtility, s.Category, key)
		require.NoError(t, app.ValidateMetaTemplate(s), key)
		require.LessOrEqual(t, len([]rune(s.Body)), 1024, key)
		require.NotContains(t, placeholders(s.Body), "passenger_name", "%s: no named placeholder is left", key)

		// The parameters are the event's variables the text uses, each once,
		// numbered as the text first uses them (Meta's rule).
		require.Equal(t, app.Placeholders(d.Body), s.Parameters, key)
		for _, p := range s.Parameters {
			require.True(t, slices.Contains(event.Variables, p) || slices.Contains(app.RecipientVariables, p), "%s: %s", key, p)
		}
		next := 1
		for _, m := range numbered.FindAllStringSubmatch(s.Body, -1) {
			n, _ := strconv.Atoi(m[1])
			require.LessOrEqual(t, n, next, "%s: {{%d}} is used before {{%d}}", key, n, next)
			if n == next {
				next++
			}
		}
		require.Equal(t, len(s.Parameters), next-1, "%s: every parameter is used", key)

		// Filled with the event's sample, the Meta template says exactly what
		// the Herald text says.
		vars := app.TemplateVars(event.Sample, app.Recipient{})
		rendered, missing := app.Render(d.Body, vars, false)
		require.Empty(t, missing, key)
		filled := numbered.ReplaceAllStringFunc(s.Body, func(m string) string {
			n, _ := strconv.Atoi(numbered.FindStringSubmatch(m)[1])
			return vars[s.Parameters[n-1]]
		})
		require.Equal(t, rendered, filled, key)

		// One name per event, shared by its languages.
		if prev, ok := names[d.Event]; ok {
			require.Equal(t, prev, s.Name)
		}
		names[d.Event] = s.Name
	}
	require.Equal(t, 30, count, "15 WhatsApp events in two locales")
}

func TestMetaLanguage(t *testing.T) {
	t.Parallel()
	for locale, want := range map[string]string{
		"de-DE": "de", "de": "de", "en": "en", "en-GB": "en_GB", "en-US": "en_US", "pt-BR": "pt_BR",
		"pt": "", "fr-FR": "fr", "xx-YY": "", "": "",
	} {
		require.Equal(t, want, app.MetaLanguage(locale), locale)
	}
}

func TestValidateMetaTemplate(t *testing.T) {
	t.Parallel()
	ok := app.WhatsAppTemplateSpec{Name: "herald_x", Language: "de", Category: "UTILITY",
		Body: "Hallo {{1}}, Ihre Reise {{2}} ist bestätigt, {{1}}.", Parameters: []string{"a", "b"}}
	require.NoError(t, app.ValidateMetaTemplate(&ok))
	for name, change := range map[string]func(s *app.WhatsAppTemplateSpec){
		"UpperCaseName":   func(s *app.WhatsAppTemplateSpec) { s.Name = "Herald_X" },
		"UnknownLanguage": func(s *app.WhatsAppTemplateSpec) { s.Language = "de-DE" },
		"Category":        func(s *app.WhatsAppTemplateSpec) { s.Category = "TRANSACTIONAL" },
		"StartsWithParam": func(s *app.WhatsAppTemplateSpec) { s.Body = "{{1}} und {{2}} sind da." },
		"EndsWithParam":   func(s *app.WhatsAppTemplateSpec) { s.Body = "Hallo {{1}}, {{2}}" },
		"OutOfOrder":      func(s *app.WhatsAppTemplateSpec) { s.Body = "Hallo {{2}}, Reise {{1}}." },
		"Gap":             func(s *app.WhatsAppTemplateSpec) { s.Body = "Hallo {{1}}, Reise {{3}}." },
		"Named":           func(s *app.WhatsAppTemplateSpec) { s.Body = "Hallo {{name}}, Reise {{1}}." },
		"CountMismatch":   func(s *app.WhatsAppTemplateSpec) { s.Parameters = []string{"a"} },
		"TooLong":         func(s *app.WhatsAppTemplateSpec) { s.Body = "Hallo {{1}} " + strings.Repeat("x", 1020) + " {{2}}." },
	} {
		s := ok
		change(&s)
		err := app.ValidateMetaTemplate(&s)
		require.Error(t, err, name)
		require.Equal(t, app.EINVALID, app.ErrorCode(err), name)
	}
}

func TestTenants_Create_WhatsAppTemplatesCarryMetaTemplates(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "acme")
	n := 0
	for _, d := range app.DefaultTemplates() {
		if d.Channel != app.WhatsApp {
			continue
		}
		n++
		var tpl *app.Template
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			tpl, err = tx.TemplateByKey(b.ctx, tn.ID, d.Event, app.WhatsApp, d.Locale)
			return err
		}))
		spec, err := tpl.Spec()
		require.NoError(t, err)
		require.NotNil(t, spec, "%s/%s", tpl.TriggerEvent, tpl.Locale)
		require.Equal(t, app.MetaTemplateName(tpl.TriggerEvent), spec.Name)
		require.Equal(t, app.MetaCategoryUtility, spec.Category)
		require.Equal(t, d.WhatsApp, spec, "the provisioned Meta template is the default's")
	}
	require.Equal(t, 30, n)
}

func TestTemplates_Save_KeepsMetaSubmission(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "acme")
	var tpl *app.Template
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
		tpl, err = tx.TemplateByKey(b.ctx, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, "de-DE")
		return err
	}))
	def, err := tpl.Spec()
	require.NoError(t, err)

	// The editor sends name, language and parameters only.
	form := func(body string) app.TemplateInput {
		return app.TemplateInput{Body: body, IsActive: true, WhatsAppTemplate: &app.WhatsAppTemplateSpec{
			Name: def.Name, Language: def.Language, Parameters: def.Parameters}}
	}
	saved, _, err := b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, form(tpl.Body))
	require.NoError(t, err)
	spec, _ := saved.Spec()
	require.Equal(t, def, spec, "an unchanged text keeps its Meta submission")

	saved, _, err = b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, form(tpl.Body+" Bis bald!"))
	require.NoError(t, err)
	spec, _ = saved.Spec()
	require.Equal(t, app.MetaCategoryUtility, spec.Category)
	require.Empty(t, spec.Body, "a changed text is derived anew when submitted")
}
