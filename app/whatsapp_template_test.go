package app_test

import (
	"encoding/json"
	"io/fs"
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
		event, ok := app.LookupEvent(d.Event)
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

// TestMigration_DefaultMetaTemplatesBackfill runs migration 00014 over a
// tenant provisioned before default texts carried a Meta template. A later
// change of a default WhatsApp text makes it fail on purpose: tenants still
// on the earlier text need a backfill migration of their own.
func TestMigration_DefaultMetaTemplatesBackfill(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "acme")
	templateOf := func(event, locale string) *app.Template {
		var tpl *app.Template
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			tpl, err = tx.TemplateByKey(b.ctx, tn.ID, event, app.WhatsApp, locale)
			return err
		}))
		return tpl
	}
	edited := templateOf("BOOKING_CANCELLED", "en")
	exec := func(query string, args ...any) {
		require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, query, args...)
			return err
		}))
	}
	// As before: no Meta template anywhere, and one text the tenant edited.
	exec(`UPDATE templates SET whatsapp_template = NULL WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, tn.ID)
	exec(`UPDATE templates SET body = body || ' Bis bald!' WHERE id = $1`, edited.ID)

	// The backfill, then the later migration that changed default texts
	// (and backfills its own).
	runMigration(t, b, "00014_whatsapp_default_meta_templates.sql")
	runMigration(t, b, migrationNamed(t, "_incident_greeting.sql"))

	for _, d := range app.DefaultTemplates() {
		// TRIP_CANCELLED and DEPARTURE_CHANGED came after these
		// migrations: their texts were provisioned with their Meta
		// templates from the start, never backfilled.
		if d.WhatsApp == nil || d.Event == "TRIP_CANCELLED" || d.Event == "DEPARTURE_CHANGED" {
			continue
		}
		spec, err := templateOf(d.Event, d.Locale).Spec()
		require.NoError(t, err)
		if d.Event == edited.TriggerEvent && d.Locale == edited.Locale {
			require.Nil(t, spec, "an edited text gets no Meta body that would not match it")
			continue
		}
		require.Equal(t, d.WhatsApp, spec, "%s/%s", d.Event, d.Locale)
	}
}

// migrationNamed returns the file name of the one migration whose name ends
// with suffix (migrations are renumbered as they land).
func migrationNamed(t *testing.T, suffix string) string {
	t.Helper()
	entries, err := fs.ReadDir(db.Migrations(), ".")
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			found = append(found, e.Name())
		}
	}
	require.Len(t, found, 1, "migrations named *%s", suffix)
	return found[0]
}

// runMigration runs a migration's Up section as goose does: one
// transaction, outside any tenant scope.
func runMigration(t *testing.T, b *pipelineBundle, name string) {
	t.Helper()
	raw, err := fs.ReadFile(db.Migrations(), name)
	require.NoError(t, err)
	up, _, ok := strings.Cut(string(raw), "-- +goose Down")
	require.True(t, ok)
	tx, err := b.svc.DB.SQL.BeginTx(b.ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(b.ctx, up)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
}

// TestMigration_IncidentGreeting runs the migration that makes incident
// texts greet each recipient over a tenant still on the earlier defaults:
// unedited texts move to the new one as a new version, an edited one stays.
func TestMigration_IncidentGreeting(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "acme")
	exec := func(query string, args ...any) {
		require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, query, args...)
			return err
		}))
	}
	count := func(query string, args ...any) int {
		var n int
		require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, query, args...).Scan(&n)
		}))
		return n
	}
	// As before: the earlier greeting, and its Meta template's parameters.
	exec(`UPDATE templates SET body = replace(body, '{{recipient_name}}', '{{passenger_name}}'),
		whatsapp_template = CASE WHEN whatsapp_template IS NULL THEN NULL
			ELSE jsonb_set(whatsapp_template, '{parameters,1}', '"passenger_name"') END
		WHERE tenant_id = $1 AND trigger_event LIKE 'INCIDENT_%'`, tn.ID)
	exec(`UPDATE templates SET body = body || ' Gute Fahrt!' WHERE tenant_id = $1 AND trigger_event = 'INCIDENT_ALLCLEAR'
		AND channel = 'EMAIL' AND locale = 'en'`, tn.ID)

	runMigration(t, b, migrationNamed(t, "_incident_greeting.sql"))

	for _, d := range app.DefaultTemplates() {
		if d.Event != "INCIDENT_BROADCAST" && d.Event != "INCIDENT_ALLCLEAR" || !strings.Contains(d.Body, "{{recipient_name}}") {
			continue
		}
		if d.Event == "INCIDENT_ALLCLEAR" && d.Channel == app.Email && d.Locale == "en" {
			require.Equal(t, 1, count(`SELECT count(*) FROM templates WHERE tenant_id = $1 AND trigger_event = $2 AND channel = $3
				AND locale = $4 AND version = 1 AND body LIKE '%{{passenger_name}}% Gute Fahrt!'`, tn.ID, d.Event, d.Channel, d.Locale),
				"an edited text stays as the tenant wrote it")
			continue
		}
		require.Equal(t, 1, count(`SELECT count(*) FROM templates WHERE tenant_id = $1 AND trigger_event = $2 AND channel = $3
			AND locale = $4 AND version = 2 AND body = $5`, tn.ID, d.Event, d.Channel, d.Locale, d.Body), "%s/%s/%s", d.Event, d.Channel, d.Locale)
		require.Equal(t, 1, count(`SELECT count(*) FROM template_versions v JOIN templates t ON t.id = v.template_id
			WHERE t.tenant_id = $1 AND t.trigger_event = $2 AND t.channel = $3 AND t.locale = $4 AND v.version = 1
			AND v.body LIKE '%{{passenger_name}}%'`, tn.ID, d.Event, d.Channel, d.Locale), "the earlier text is kept")
		if d.WhatsApp != nil {
			spec, err := json.Marshal(d.WhatsApp)
			require.NoError(t, err)
			require.Equal(t, 1, count(`SELECT count(*) FROM templates WHERE tenant_id = $1 AND trigger_event = $2 AND channel = 'WHATSAPP'
				AND locale = $3 AND whatsapp_template = $4::jsonb`, tn.ID, d.Event, d.Locale, string(spec)))
		}
	}
}
