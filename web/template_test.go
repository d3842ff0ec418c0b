package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// templateID returns the id of a tenant's template.
func (c *consoleBundle) templateID(tenantID uuid.UUID, event string, ch app.Channel, locale string) uuid.UUID {
	c.T.Helper()
	var id uuid.UUID
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(c.Ctx,
			`SELECT id FROM templates WHERE tenant_id = $1 AND trigger_event = $2 AND channel = $3 AND locale = $4`,
			tenantID, event, ch, locale).Scan(&id)
	}))
	return id
}

// templateText returns a template's version, subject and body as stored.
func (c *consoleBundle) templateText(id uuid.UUID) (version int, subject, body string) {
	c.T.Helper()
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(c.Ctx, `SELECT version, subject, body FROM templates WHERE id = $1`, id).
			Scan(&version, &subject, &body)
	}))
	return version, subject, body
}

// listRows returns the template list's rows as "EVENT CHANNEL locale".
func listRows(doc *goquery.Document) []string {
	return doc.Find("table.templates tbody tr").Map(func(_ int, tr *goquery.Selection) string {
		return text(tr.Find("td").First().Find("code")) + " " + text(tr.Find("td.channel")) + " " + text(tr.Find("td.locale"))
	})
}

func TestConsoleTemplates_List(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	total := c.Count(`SELECT count(*) FROM templates WHERE tenant_id = $1`, c.Tenant.ID)
	require.Greater(t, total, 50, "a new tenant has its default templates")

	t.Run("NewestFirstWithColumns", func(t *testing.T) {
		id := c.templateID(c.Tenant.ID, "BOOKING_REFUNDED", app.Email, "en")
		c.Exec(`UPDATE templates SET updated_at = now() + interval '1 hour' WHERE id = $1`, id)
		doc := s.page("/t/acme/templates")
		rows := doc.Find("table.templates tbody tr")
		require.Equal(t, 25, rows.Length(), "25 rows a page")
		require.True(t, sortedStrings(listRows(doc)), "sorted by event, channel and locale, not by the last change: %q", listRows(doc))
		doc = s.page("/t/acme/templates?event=BOOKING_REFUNDED&channel=EMAIL&locale=en")
		first := doc.Find("table.templates tbody tr").First()
		require.Contains(t, text(first), "BOOKING_REFUNDED")
		require.Contains(t, text(first), "Money was refunded for a booking.", "the event's label")
		require.Equal(t, "E-mail", text(first.Find("td.channel")))
		require.Equal(t, "en", text(first.Find("td.locale")))
		require.NotEmpty(t, text(first.Find("td.first-line")), "the subject")
		require.Equal(t, "v1", text(first.Find("td.version")))
		require.Equal(t, "ACTIVE", text(first.Find("td.state")))
		require.Equal(t, 1, first.Find("time").Length())
		href, _ := first.Find("a").First().Attr("href")
		require.Equal(t, "/t/acme/templates/"+id.String(), href)
		require.Equal(t, 1, doc.Find(`a[href="/t/acme/templates/new"]`).Length())
		require.Equal(t, "Templates", text(doc.Find(`.mainnav a[aria-current=page]`)))
	})

	t.Run("Filters", func(t *testing.T) {
		doc := s.page("/t/acme/templates?event=BOOKING_CONFIRMED")
		require.ElementsMatch(t, []string{
			"BOOKING_CONFIRMED E-mail de-DE", "BOOKING_CONFIRMED E-mail en",
			"BOOKING_CONFIRMED WhatsApp de-DE", "BOOKING_CONFIRMED WhatsApp en",
			"BOOKING_CONFIRMED SMS de-DE", "BOOKING_CONFIRMED SMS en",
		}, listRows(doc))
		sel, _ := doc.Find(`select[name=event] option[selected]`).Attr("value")
		require.Equal(t, "BOOKING_CONFIRMED", sel, "the filter bar shows the filter")

		doc = s.page("/t/acme/templates?event=BOOKING_CONFIRMED&channel=SMS&locale=en")
		require.Equal(t, []string{"BOOKING_CONFIRMED SMS en"}, listRows(doc))

		doc = s.page("/t/acme/templates?state=inactive")
		require.Equal(t, 0, doc.Find("table.templates").Length())
		require.Contains(t, text(doc.Find(".empty")), "No template matches these filters")

		id := c.templateID(c.Tenant.ID, "INVOICE_ISSUED", app.Email, "de-DE")
		c.Exec(`UPDATE templates SET is_active = false WHERE id = $1`, id)
		doc = s.page("/t/acme/templates?state=inactive")
		require.Equal(t, []string{"INVOICE_ISSUED E-mail de-DE"}, listRows(doc))
		require.Equal(t, "inactive", text(doc.Find("td.state")))
		doc = s.page("/t/acme/templates?state=active&event=INVOICE_ISSUED")
		require.Equal(t, []string{"INVOICE_ISSUED E-mail en"}, listRows(doc))
		c.Exec(`UPDATE templates SET is_active = true WHERE id = $1`, id)

		// Unknown values are dropped, not refused.
		doc = s.page("/t/acme/templates?event=NO_SUCH&channel=PIGEON&locale=!!")
		require.Equal(t, 25, doc.Find("table.templates tbody tr").Length())
	})

	t.Run("PaginationKeepsFilters", func(t *testing.T) {
		emails := c.Count(`SELECT count(*) FROM templates WHERE tenant_id = $1 AND channel = 'EMAIL'`, c.Tenant.ID)
		require.Greater(t, emails, 25)
		doc := s.page("/t/acme/templates?channel=EMAIL")
		require.Equal(t, 25, doc.Find("table.templates tbody tr").Length())
		next, ok := doc.Find(`.pager a[rel=next]`).Attr("href")
		require.True(t, ok)
		u, err := url.Parse(next)
		require.NoError(t, err)
		require.Equal(t, "EMAIL", u.Query().Get("channel"))
		require.Equal(t, "2", u.Query().Get("page"))

		doc = s.page(next)
		rows := listRows(doc)
		require.Len(t, rows, emails-25)
		for _, r := range rows {
			require.Contains(t, r, " E-mail ")
		}
		require.Equal(t, 0, doc.Find(`.pager a[rel=next]`).Length())
		prev, _ := doc.Find(`.pager a[rel=prev]`).Attr("href")
		require.Equal(t, "/t/acme/templates?channel=EMAIL", prev)

		// Every template appears exactly once over the pages.
		seen := map[string]bool{}
		for path := "/t/acme/templates"; path != ""; {
			doc := s.page(path)
			doc.Find("table.templates tbody tr").Each(func(_ int, tr *goquery.Selection) {
				id := tr.AttrOr("data-id", "")
				require.False(t, seen[id], "template %s on two pages", id)
				seen[id] = true
			})
			path = doc.Find(`.pager a[rel=next]`).AttrOr("href", "")
		}
		require.Len(t, seen, total)
	})

	t.Run("EmptyTenant", func(t *testing.T) {
		c.Exec(`DELETE FROM templates WHERE tenant_id = $1`, c.other.ID)
		doc := c.signIn(asOtherManager).page("/t/globex/templates")
		require.Contains(t, text(doc.Find(".empty")), "No templates yet")
		require.Equal(t, 2, doc.Find(`a[href="/t/globex/templates/new"]`).Length(), "the page head and the empty state offer it")
	})
}

func TestConsoleTemplates_Create(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	countAll := func() int { return c.Count(`SELECT count(*) FROM templates WHERE tenant_id = $1`, c.Tenant.ID) }

	t.Run("Form", func(t *testing.T) {
		doc := s.page("/t/acme/templates/new")
		require.Equal(t, len(app.Events()), doc.Find(`select[name=event] option[value!=""]`).Length(), "every registry event")
		require.Equal(t, 0, doc.Find(`select[name=channel] option[value!=""]`).Length(), "no channels before an event is chosen")
		require.Equal(t, 1, doc.Find(`#template-form input[name=csrf]`).Length())

		doc = s.page("/t/acme/templates/new?event=BOOKING_CONFIRMED")
		channels := doc.Find(`select[name=channel] option[value!=""]`).Map(func(_ int, o *goquery.Selection) string { return o.AttrOr("value", "") })
		require.Equal(t, []string{"EMAIL", "WHATSAPP", "SMS"}, channels, "the event's channels, with SMS as WhatsApp's fallback")
		vars := doc.Find("#template-variables tr")
		require.Equal(t, 5+len(app.RecipientVariables), vars.Length())
		require.Equal(t, "{{passenger_name}}", text(vars.First().Find("code")))
		require.Equal(t, "Anna Schmidt", vars.First().Find("input").AttrOr("value", ""), "listed with its sample value")
		require.Equal(t, "BK-2027-0412", doc.Find(`input[name="sample.booking_reference"]`).AttrOr("value", ""))
		preview := doc.Find("#template-preview")
		require.Equal(t, "/t/acme/templates/preview", preview.AttrOr("hx-post", ""))
		require.Contains(t, preview.AttrOr("hx-trigger", ""), "delay:")
		require.Equal(t, "#template-form, #template-variables", preview.AttrOr("hx-include", ""))
	})

	t.Run("Created", func(t *testing.T) {
		s.page("/t/acme/templates/new")
		before := countAll()
		resp := s.post("/t/acme/templates", url.Values{
			"event": {"BOOKING_REFUNDED"}, "channel": {"EMAIL"}, "locale": {"fr-fr"},
			"subject": {"Remboursement {{booking_reference}}"}, "body": {"<p>Bonjour {{passenger_name}},\r\n{{refund_amount}}</p>"},
		})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		id := c.templateID(c.Tenant.ID, "BOOKING_REFUNDED", app.Email, "fr-FR")
		require.Equal(t, "/t/acme/templates/"+id.String(), resp.Header.Get("Location"), "the locale is stored in its canonical form")
		doc := s.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Template created as version 1")
		require.Equal(t, 0, doc.Find(".flash-warning").Length())
		require.Equal(t, before+1, countAll())
		version, subject, body := c.templateText(id)
		require.Equal(t, 1, version)
		require.Equal(t, "Remboursement {{booking_reference}}", subject)
		require.Equal(t, "<p>Bonjour {{passenger_name}},\n{{refund_amount}}</p>", body, "line endings are stored as LF")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.create' AND target_id = $1 AND actor_id = $2`, id.String(), c.users[asManager].ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM templates WHERE id = $1 AND updated_by = $2 AND is_active`, id, c.users[asManager].ID))
	})

	t.Run("UnknownPlaceholderWarns", func(t *testing.T) {
		s.page("/t/acme/templates/new")
		resp := s.post("/t/acme/templates", url.Values{
			"event": {"BOOKING_REFUNDED"}, "channel": {"EMAIL"}, "locale": {"it"},
			"subject": {"Rimborso"}, "body": {"<p>{{passenger_name}} {{seat_number}}</p>"},
		})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "unknown placeholders do not stop saving")
		doc := s.follow(resp)
		require.Contains(t, text(doc.Find(".flash-warning")), "Template created as version 1")
		require.Contains(t, text(doc.Find(".flash-warning")), "Unknown placeholders: {{seat_number}}")
		require.Contains(t, text(doc.Find("#template-preview .preview-warning")), "{{seat_number}}", "the editor's preview warns too")
	})

	t.Run("WhatsAppMetaTemplate", func(t *testing.T) {
		s.page("/t/acme/templates/new")
		resp := s.post("/t/acme/templates", url.Values{
			"event": {"SERVICE_LEG_STARTED"}, "channel": {"WHATSAPP"}, "locale": {"nl"},
			"body":    {"Hallo {{passenger_name}}, de bus rijdt naar {{boarding_point_name}}."},
			"wa_name": {"leg_started"}, "wa_language": {"nl"}, "wa_parameters": {"passenger_name, {{boarding_point_name}}"},
		})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		id := c.templateID(c.Tenant.ID, "SERVICE_LEG_STARTED", app.WhatsApp, "nl")
		var spec string
		require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(c.Ctx, `SELECT whatsapp_template::text FROM templates WHERE id = $1`, id).Scan(&spec)
		}))
		require.JSONEq(t, `{"name":"leg_started","language":"nl","parameters":["passenger_name","boarding_point_name"]}`, spec)
		tp, err := c.Services.Console.Templates.Get(c.Ctx, c.users[asManager], c.Tenant.ID, id)
		require.NoError(t, err)
		got, err := tp.Spec()
		require.NoError(t, err)
		require.Equal(t, &app.WhatsAppTemplateSpec{Name: "leg_started", Language: "nl", Parameters: []string{"passenger_name", "boarding_point_name"}}, got)

		doc := s.page("/t/acme/templates/" + id.String())
		require.Equal(t, "leg_started", doc.Find(`input[name=wa_name]`).AttrOr("value", ""))
		require.Equal(t, "passenger_name, boarding_point_name", doc.Find(`input[name=wa_parameters]`).AttrOr("value", ""))
		require.Equal(t, 0, doc.Find(`input[name=subject]`).Length(), "WhatsApp has no subject")
		require.Equal(t, []string{"passenger_name: Anna Schmidt", "boarding_point_name: Munich Central Bus Station"},
			doc.Find(".preview-parameters li").Map(func(_ int, li *goquery.Selection) string { return text(li) }))
	})

	t.Run("BadInputsStoreNothing", func(t *testing.T) {
		good := url.Values{"event": {"BOOKING_REFUNDED"}, "channel": {"EMAIL"}, "locale": {"es"}, "subject": {"Reembolso"}, "body": {"<p>{{refund_amount}}</p>"}}
		for name, tc := range map[string]struct {
			set   url.Values
			field string
			msg   string
		}{
			"EmptyBody":            {url.Values{"body": {"  \r\n "}}, "body", "Body is required."},
			"EmailWithoutSubject":  {url.Values{"subject": {""}}, "subject", "E-mail templates need a subject."},
			"NoEvent":              {url.Values{"event": {""}}, "event", "Choose the event"},
			"UnknownEvent":         {url.Values{"event": {"BOOKING_EXPLODED"}}, "event", `"BOOKING_EXPLODED" is not an event Herald knows.`},
			"ChannelNotOffered":    {url.Values{"channel": {"WHATSAPP"}}, "channel", "BOOKING_REFUNDED is not sent on \"WHATSAPP\"; choose one of EMAIL."},
			"UnknownChannel":       {url.Values{"channel": {"PIGEON"}}, "channel", "choose one of EMAIL"},
			"NoLocale":             {url.Values{"locale": {""}}, "locale", "Locale is required"},
			"BadLocale":            {url.Values{"locale": {"not a locale!"}}, "locale", `Locale "not a locale!" is not a valid language tag`},
			"MetaOnEmail":          {url.Values{"wa_name": {"refund"}, "wa_language": {"de"}}, "whatsapp_template", "Only WhatsApp templates can name a Meta template."},
			"SubjectWithLineBreak": {url.Values{"subject": {"Reembolso\r\nBcc: all@example.com"}}, "subject", "The subject must be one line, without line breaks."},
		} {
			t.Run(name, func(t *testing.T) {
				form := url.Values{}
				for k, v := range good {
					form[k] = v
				}
				for k, v := range tc.set {
					form[k] = v
				}
				s.page("/t/acme/templates/new")
				before := countAll()
				audits := c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.create'`)
				doc, resp := s.postPage("/t/acme/templates", form)
				require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
				fieldErr := text(doc.Find(".field-error[role=alert]"))
				require.Contains(t, fieldErr, tc.msg)
				if tc.field == "whatsapp_template" {
					require.Equal(t, 1, doc.Find("fieldset.meta-template .field-error").Length())
				} else {
					require.Equal(t, 1, doc.Find(`[name=`+tc.field+`] ~ .field-error`).Length(), "the error sits under %s", tc.field)
				}
				require.Equal(t, before, countAll(), "nothing stored")
				require.Equal(t, audits, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.create'`))
				// What was typed stays in the form.
				require.Equal(t, strings.ReplaceAll(form.Get("body"), "\r\n", "\n"), doc.Find(`textarea[name=body]`).Text())
				require.Equal(t, form.Get("locale"), doc.Find(`input[name=locale]`).AttrOr("value", ""))
			})
		}
	})

	t.Run("BadMetaTemplate", func(t *testing.T) {
		for name, tc := range map[string]struct{ name, lang, params, msg string }{
			"NoLanguage":      {"leg", "", "", "A Meta template needs its name and language."},
			"BadName":         {"Leg Started!", "de", "", "lower-case letters, digits and underscores"},
			"BadLanguage":     {"leg", "de-DE", "", "codes such as de, en_US"},
			"UnknownVariable": {"leg", "de", "passenger_name, seat", "not variables of SERVICE_LEG_STARTED"},
		} {
			t.Run(name, func(t *testing.T) {
				s.page("/t/acme/templates/new")
				before := countAll()
				doc, resp := s.postPage("/t/acme/templates", url.Values{
					"event": {"SERVICE_LEG_STARTED"}, "channel": {"WHATSAPP"}, "locale": {"pl"}, "body": {"Hej {{passenger_name}}."},
					"wa_name": {tc.name}, "wa_language": {tc.lang}, "wa_parameters": {tc.params},
				})
				require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
				require.Contains(t, text(doc.Find("fieldset.meta-template .field-error")), tc.msg)
				require.Equal(t, before, countAll())
			})
		}
	})
}

func TestConsoleTemplates_Preview(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	s.page("/t/acme/templates/new")

	preview := func(form url.Values) *goquery.Document {
		t.Helper()
		doc, resp := s.postPage("/t/acme/templates/preview", form)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, 0, doc.Find("header.topbar").Length(), "a fragment, not a page")
		return doc
	}

	t.Run("EmailEscapesValues", func(t *testing.T) {
		doc := preview(url.Values{
			"event": {"BOOKING_CONFIRMED"}, "channel": {"EMAIL"},
			"subject":               {"Booking {{booking_reference}} for {{passenger_name}}"},
			"body":                  {"<p>Dear {{passenger_name}},</p>\n<p>{{tour_name}} leaves on {{departure_date}}.</p>"},
			"sample.passenger_name": {`<b>Tom & "Jerry"</b>`},
		})
		require.Equal(t, `Booking BK-2027-0412 for <b>Tom & "Jerry"</b>`, text(doc.Find(".preview-subject")), "subjects are not HTML")
		srcdoc := doc.Find("iframe.email-frame").AttrOr("srcdoc", "")
		require.Contains(t, srcdoc, "\n<p>Dear &lt;b&gt;Tom &amp; &#34;Jerry&#34;&lt;/b&gt;,</p>\n<p>Lake Garda Spring Tour leaves on 2027-04-12.</p>\n",
			"the values are escaped, the template's own HTML is not")
		require.Contains(t, srcdoc, `<meta name="color-scheme" content="light dark">`, "the preview is the e-mail in the tenant's layout, as sent")
		require.Equal(t, 0, doc.Find("pre.preview b, pre.preview p").Length(), "the HTML is shown as text, never injected into the console")
		require.Equal(t, 0, doc.Find(".preview-warning").Length())
	})

	t.Run("SMSIsPlainText", func(t *testing.T) {
		doc := preview(url.Values{
			"event": {"BOOKING_CONFIRMED"}, "channel": {"SMS"},
			"body":                  {"{{passenger_name}}: {{tour_name}} is confirmed ({{booking_reference}})."},
			"sample.passenger_name": {"Tom & Jerry <3"},
		})
		require.Equal(t, "Tom & Jerry <3: Lake Garda Spring Tour is confirmed (BK-2027-0412).", doc.Find("pre.preview").Text())
		require.Contains(t, text(doc.Find(".preview-label")), "SMS text · 67 characters")
		require.Equal(t, 0, doc.Find(".preview-subject").Length())
	})

	t.Run("SampleValuesByDefault", func(t *testing.T) {
		doc := preview(url.Values{"event": {"FINAL_PAYMENT_OVERDUE"}, "channel": {"WHATSAPP"},
			"body": {"{{passenger_name}} owes {{remaining_amount}}, {{days_overdue}} days late; {{recipient_email}}"}})
		require.Equal(t, "Anna Schmidt owes 740.00 EUR, 3 days late; anna.schmidt@example.com", doc.Find("pre.preview").Text())
	})

	t.Run("UnknownPlaceholderWarning", func(t *testing.T) {
		doc := preview(url.Values{"event": {"BOOKING_CONFIRMED"}, "channel": {"EMAIL"}, "subject": {"Hi {{nickname}}"},
			"body": {"<p>{{passenger_name}} {{seat_number}}</p>"}, "sample.nickname": {"ignored"}})
		require.Contains(t, text(doc.Find(".preview-warning")), "Unknown placeholders: {{nickname}}, {{seat_number}}")
		require.Contains(t, doc.Find("iframe.email-frame").AttrOr("srcdoc", ""), "\n<p>Anna Schmidt </p>\n", "unknown placeholders render empty, as in the pipeline")
	})

	t.Run("Problems", func(t *testing.T) {
		doc := preview(url.Values{"event": {"BOOKING_CONFIRMED"}, "channel": {"EMAIL"}, "body": {"<p>x</p>"}})
		require.Equal(t, "E-mail templates need a subject.", text(doc.Find(".preview-problem")))
		doc = preview(url.Values{"channel": {"EMAIL"}, "body": {"x"}})
		require.Equal(t, "Choose an event to see a preview.", text(doc.Find(".preview-hint")))
		doc = preview(url.Values{"event": {"BOOKING_CONFIRMED"}, "body": {"x"}})
		require.Equal(t, "Choose a channel to see a preview.", text(doc.Find(".preview-hint")))
	})

	t.Run("NeedsCSRF", func(t *testing.T) {
		resp := s.post("/t/acme/templates/preview", url.Values{"csrf": {"forged"}, "event": {"BOOKING_CONFIRMED"}, "channel": {"SMS"}, "body": {"x"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = s.post("/t/acme/templates/preview", url.Values{"csrf": {""}, "event": {"BOOKING_CONFIRMED"}, "channel": {"SMS"}, "body": {"x"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

func TestConsoleTemplates_VersionsAndRestore(t *testing.T) {
	t.Parallel()
	edited := "Booking {{booking_reference}} confirmed.\nSee you on {{departure_date}}, {{passenger_name}}!"
	// setup gives each subtest its own console with the SMS template of
	// BOOKING_CONFIRMED at the given version: 1 is the provisioned text,
	// 2 is edited, 3 is edited with an unknown placeholder.
	setup := func(t *testing.T, version int) (c *consoleBundle, s *session, id uuid.UUID, path, original string) {
		t.Helper()
		c = setupConsole(t, webtest.Options{NoWorkers: true})
		s = c.signIn(asManager)
		id = c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.SMS, "en")
		path = "/t/acme/templates/" + id.String()
		_, _, original = c.templateText(id)
		for v, body := range []string{edited, edited + " {{gate}}"}[:version-1] {
			s.page(path)
			resp := s.post(path, url.Values{"version": {strconv.Itoa(v + 1)}, "body": {body}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		}
		got, _, _ := c.templateText(id)
		require.Equal(t, version, got)
		return c, s, id, path, original
	}

	t.Run("Editor", func(t *testing.T) {
		t.Parallel()
		_, s, _, path, original := setup(t, 1)
		doc := s.page(path)
		require.Equal(t, original, doc.Find(`textarea[name=body]`).Text())
		require.Equal(t, "1", doc.Find(`input[name=version]`).AttrOr("value", ""))
		require.Contains(t, text(doc.Find(`#template-form button[type=submit]`)), "Save as version 2")
		require.Equal(t, 0, doc.Find(`select[name=event]`).Length(), "the key of a template is fixed")
		require.NotEmpty(t, doc.Find("#template-preview pre.preview").Text(), "the editor opens with a preview")
		require.Equal(t, 1, doc.Find(`a[href="/t/acme/templates/new?event=BOOKING_CONFIRMED&channel=SMS"]`).Length(), "another locale of the same text is one click away")
	})

	t.Run("SaveBumpsVersion", func(t *testing.T) {
		t.Parallel()
		c, s, id, path, original := setup(t, 1)
		s.page(path)
		resp := s.post(path, url.Values{"version": {"1"}, "body": {edited}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := s.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Saved as version 2")
		version, _, body := c.templateText(id)
		require.Equal(t, 2, version)
		require.Equal(t, edited, body)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM template_versions WHERE template_id = $1 AND version = 1 AND body = $2`, id, original))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.update' AND target_id = $1`, id.String()))
	})

	t.Run("UnknownPlaceholderWarnsAfterSave", func(t *testing.T) {
		t.Parallel()
		c, s, id, path, _ := setup(t, 2)
		s.page(path)
		resp := s.post(path, url.Values{"version": {"2"}, "body": {edited + " {{gate}}"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := s.follow(resp)
		require.Contains(t, text(doc.Find(".flash-warning")), "Saved as version 3")
		require.Contains(t, text(doc.Find(".flash-warning")), "Unknown placeholders: {{gate}}")
		require.Contains(t, text(doc.Find("#template-preview .preview-warning")), "{{gate}}")
		version, _, _ := c.templateText(id)
		require.Equal(t, 3, version)
	})

	t.Run("BadEditStoresNothing", func(t *testing.T) {
		t.Parallel()
		c, s, id, path, _ := setup(t, 3)
		s.page(path)
		doc, resp := s.postPage(path, url.Values{"version": {"3"}, "body": {"   "}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Equal(t, "Body is required.", text(doc.Find(`textarea[name=body] ~ .field-error`)))
		version, _, _ := c.templateText(id)
		require.Equal(t, 3, version)
		require.Equal(t, 2, c.Count(`SELECT count(*) FROM template_versions WHERE template_id = $1`, id))

		// Someone else saved in between: nothing is overwritten.
		doc, resp = s.postPage(path, url.Values{"version": {"2"}, "body": {"stale text"}})
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "saved as version 3 by someone else")
		require.Equal(t, "stale text", doc.Find(`textarea[name=body]`).Text(), "the typed text is kept to copy")
		_, _, body := c.templateText(id)
		require.NotEqual(t, "stale text", body)
	})

	t.Run("History", func(t *testing.T) {
		t.Parallel()
		_, s, _, path, _ := setup(t, 3)
		doc := s.page(path + "/versions")
		rows := doc.Find("table.versions tbody tr")
		require.Equal(t, []string{"3", "2", "1"}, rows.Map(func(_ int, r *goquery.Selection) string { return r.AttrOr("data-version", "") }))
		require.Contains(t, text(rows.Eq(0)), "current")
		require.Equal(t, "manager@acme.test", text(rows.Eq(0).Find(".author")))
		require.Equal(t, "manager@acme.test", text(rows.Eq(1).Find(".author")))
		require.Equal(t, "Herald (default text)", text(rows.Eq(2).Find(".author")), "version 1 is the provisioned text")
		require.Equal(t, 1, rows.Eq(0).Find("time").Length())
		require.Equal(t, 0, rows.Eq(0).Find("form").Length(), "the current version cannot be restored")
		action, _ := rows.Eq(2).Find("form").Attr("action")
		require.Equal(t, path+"/versions/1/restore?current=3", action, "the restore says which version the page showed as current")
		require.NotEmpty(t, rows.Eq(2).Find("form").AttrOr("data-confirm", ""))
		require.Equal(t, path+"/versions/1", rows.Eq(2).Find("a").AttrOr("href", ""))
	})

	t.Run("Diff", func(t *testing.T) {
		t.Parallel()
		_, s, _, path, original := setup(t, 3)
		doc := s.page(path + "/versions/1")
		lines := doc.Find("table.diff-body tr")
		var removed, added []string
		lines.Each(func(_ int, tr *goquery.Selection) {
			switch {
			case tr.HasClass("diff-removed"):
				removed = append(removed, tr.Find(".diff-text").Text())
				require.Equal(t, "−", text(tr.Find(".diff-mark")))
			case tr.HasClass("diff-added"):
				added = append(added, tr.Find(".diff-text").Text())
				require.Equal(t, "+", text(tr.Find(".diff-mark")))
			}
		})
		require.Equal(t, strings.Split(original, "\n"), removed, "version 1's lines, marked removed")
		require.Equal(t, []string{"Booking {{booking_reference}} confirmed.", "See you on {{departure_date}}, {{passenger_name}}! {{gate}}"}, added)
		require.Equal(t, 0, doc.Find("table.diff-subject").Length(), "SMS templates have no subject to compare")

		require.Equal(t, "Herald (default text)", text(doc.Find("dl.facts .author")))

		doc = s.page(path + "/versions/2")
		require.Equal(t, []string{"See you on {{departure_date}}, {{passenger_name}}!"},
			doc.Find("table.diff-body tr.diff-removed .diff-text").Map(func(_ int, s *goquery.Selection) string { return s.Text() }))
		require.Equal(t, "Booking {{booking_reference}} confirmed.", doc.Find("table.diff-body tr.diff-same .diff-text").First().Text())

		for _, v := range []string{"3", "4", "0", "x"} {
			_, resp := s.get(path + "/versions/" + v)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, "version %s", v)
		}
	})

	t.Run("RestoreOverAnUnseenSave", func(t *testing.T) {
		t.Parallel()
		c, s, id, path, _ := setup(t, 3)
		s.page(path + "/versions")
		doc, resp := s.postPage(path+"/versions/1/restore?current=2", nil)
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Selection), "saved as version 3 by someone else")
		doc, resp = s.postPage(path+"/versions/1/restore", nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Selection), "did not say which version of the template you started from")
		version, _, _ := c.templateText(id)
		require.Equal(t, 3, version, "nothing restored")
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.restore' AND target_id = $1`, id.String()))
	})

	t.Run("Restore", func(t *testing.T) {
		t.Parallel()
		c, s, id, path, original := setup(t, 3)
		s.page(path + "/versions")
		resp := s.post(path+"/versions/1/restore?current=3", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := s.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Version 1 restored as version 4")
		version, _, body := c.templateText(id)
		require.Equal(t, 4, version)
		require.Equal(t, original, body)
		require.Equal(t, 3, c.Count(`SELECT count(*) FROM template_versions WHERE template_id = $1`, id), "the restore keeps what it replaced")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.restore' AND target_id = $1 AND (metadata->>'restored_version')::int = 1 AND (metadata->>'version')::int = 4 AND actor_id = $2`,
			id.String(), c.users[asManager].ID))
		doc = s.page(path + "/versions/1")
		require.Contains(t, text(doc.Find(".flash-info")), "same text as the current version")

		resp = s.post(path+"/versions/4/restore?current=4", nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "the current version is not an earlier one")
		resp = s.post(path+"/versions/1/restore?current=4", url.Values{"csrf": {"forged"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		version, _, _ = c.templateText(id)
		require.Equal(t, 4, version)
	})

	t.Run("SaveNeedsCSRF", func(t *testing.T) {
		t.Parallel()
		c, s, id, path, original := setup(t, 1)
		s.page(path)
		resp := s.post(path, url.Values{"csrf": {"forged"}, "version": {"1"}, "body": {"forged"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = s.post("/t/acme/templates", url.Values{"csrf": {"forged"}, "event": {"BOOKING_REFUNDED"}, "channel": {"EMAIL"}, "locale": {"sv"}, "subject": {"x"}, "body": {"x"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		version, _, body := c.templateText(id)
		require.Equal(t, 1, version)
		require.Equal(t, original, body)
		require.Zero(t, c.Count(`SELECT count(*) FROM templates WHERE locale = 'sv'`))
	})
}

func TestConsoleTemplates_DeactivateChangesRouting(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	s := c.signIn(asManager)
	enID := c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.Email, "en")
	deID := c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.Email, "de-DE")

	send := func(eventID string) *app.Message {
		t.Helper()
		n := webtest.Notification(eventID, "BK-"+eventID)
		n["recipients"].([]map[string]any)[0]["locale"] = "en"
		n["channels"] = []string{"EMAIL"}
		ms := c.WaitMessages(c.Submit(n), "the e-mail message", func(ms []*app.Message) bool {
			return len(ms) == 1 && ms[0].Status != app.MessageQueued
		})
		return ms[0]
	}
	locale := func(m *app.Message) string {
		require.NotNil(t, m.Locale)
		return *m.Locale
	}

	m := send("ev-1")
	require.Equal(t, "en", locale(m), "the recipient's locale first")
	require.Equal(t, enID, *m.TemplateID)

	doc := s.page("/t/acme/templates/" + enID.String())
	form := doc.Find(`form[action="/t/acme/templates/` + enID.String() + `/deactivate"]`)
	require.Equal(t, 1, form.Length())
	require.Contains(t, form.AttrOr("data-confirm", ""), "Deactivate this template?")
	resp := s.post("/t/acme/templates/"+enID.String()+"/deactivate", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	doc = s.follow(resp)
	require.Contains(t, text(doc.Find(".flash-success")), "Template deactivated")
	require.Contains(t, text(doc.Find(".flash-warning")), "This template is inactive")
	require.Equal(t, 1, doc.Find(`form[action$="/reactivate"]`).Length())
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.deactivate' AND target_id = $1 AND actor_id = $2`, enID.String(), c.users[asManager].ID))
	version, _, _ := c.templateText(enID)
	require.Equal(t, 1, version, "activation is not a content change")

	m = send("ev-2")
	require.Equal(t, "de-DE", locale(m), "the tenant's default locale is next in the chain")
	require.Equal(t, deID, *m.TemplateID)
	require.True(t, strings.HasPrefix(m.Subject, "Buchungsbestätigung"), m.Subject)

	s.page("/t/acme/templates/" + deID.String())
	require.Equal(t, http.StatusSeeOther, s.post("/t/acme/templates/"+deID.String()+"/deactivate", nil).StatusCode)
	m = send("ev-3")
	require.Equal(t, app.MessageFailed, m.Status)
	require.Equal(t, app.ReasonNoTemplates, *m.FailedReason)

	s.page("/t/acme/templates/" + enID.String())
	resp = s.post("/t/acme/templates/"+enID.String()+"/reactivate", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.reactivate' AND target_id = $1`, enID.String()))
	m = send("ev-4")
	require.Equal(t, "en", locale(m))

	// Deactivating needs the form's token.
	resp = s.post("/t/acme/templates/"+enID.String()+"/deactivate", url.Values{"csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM templates WHERE id = $1 AND is_active`, enID))
}

func TestConsoleTemplates_Access(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	acmeID := c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.Email, "en")
	globexID := c.templateID(c.other.ID, "BOOKING_CONFIRMED", app.Email, "en")

	t.Run("SupportHasNoTemplates", func(t *testing.T) {
		s := c.signIn(asSupport)
		doc := s.page("/t/acme/")
		require.Equal(t, 0, doc.Find(`.mainnav a[href="/t/acme/templates"]`).Length())
		for _, p := range []string{"/t/acme/templates", "/t/acme/templates/new", "/t/acme/templates/" + acmeID.String(), "/t/acme/templates/" + acmeID.String() + "/versions"} {
			_, resp := s.get(p)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, p)
		}
		resp := s.post("/t/acme/templates/preview", url.Values{"event": {"BOOKING_CONFIRMED"}, "channel": {"SMS"}, "body": {"x"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = s.post("/t/acme/templates/"+acmeID.String()+"/deactivate", nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM templates WHERE id = $1 AND is_active`, acmeID))

		// The service refuses too, whatever route calls it.
		_, err := c.Services.Console.Templates.SetActive(c.Ctx, c.users[asSupport], c.Tenant.ID, acmeID, false)
		require.Equal(t, app.EFORBIDDEN, app.ErrorCode(err))
		_, _, err = c.Services.Console.Templates.Edit(c.Ctx, c.users[asSupport], c.Tenant.ID, acmeID, 0, app.TemplateInput{Subject: "x", Body: "x"})
		require.Equal(t, app.EFORBIDDEN, app.ErrorCode(err))
	})

	t.Run("ManagerAndOperatorSeeNav", func(t *testing.T) {
		doc := c.signIn(asManager).page("/t/acme/templates")
		require.Equal(t, 1, doc.Find(`.mainnav a[href="/t/acme/templates"]`).Length())
		c.signIn(asOperator).page("/t/acme/templates/" + acmeID.String() + "/versions")
	})

	t.Run("AnotherTenantsTemplateIsNotFound", func(t *testing.T) {
		s := c.signIn(asOtherManager)
		s.page("/t/globex/templates/" + globexID.String())
		for _, p := range []string{
			"/t/globex/templates/" + acmeID.String(),
			"/t/globex/templates/" + acmeID.String() + "/versions",
			"/t/acme/templates/" + acmeID.String(),
			"/t/acme/templates",
		} {
			_, resp := s.get(p)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		}
		for _, p := range []string{"", "/deactivate", "/versions/1/restore"} {
			resp := s.post("/t/globex/templates/"+acmeID.String()+p, url.Values{"version": {"1"}, "body": {"taken over"}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		}
		version, _, body := c.templateText(acmeID)
		require.Equal(t, 1, version)
		require.NotEqual(t, "taken over", body)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM templates WHERE id = $1 AND is_active`, acmeID))

		// The manager of acme cannot reach globex's template through acme either.
		m := c.signIn(asManager)
		_, resp := m.get("/t/acme/templates/" + globexID.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		_, resp = m.get("/t/acme/templates/not-a-uuid")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

// TestConsoleTemplates_ConcurrentSaves has two editors save the same
// template from the same version at the same moment, round after round:
// exactly one save lands, the other editor is told to reload (409, their
// text kept to copy) and nothing is overwritten unseen. Restores race the
// same way, and the pipeline's own Save serialises without a conflict.
func TestConsoleTemplates_ConcurrentSaves(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	id := c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.SMS, "en")
	path := "/t/acme/templates/" + id.String()
	editors := []*session{c.signIn(asManager), c.signIn(asManager)}

	type answer struct {
		status int
		doc    *goquery.Document
	}
	// race posts one request per editor at once and returns the answers
	// in editor order.
	race := func(post func(i int, s *session) *http.Response) []answer {
		answers := make([]answer, len(editors))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, s := range editors {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				resp := post(i, s)
				defer resp.Body.Close()
				doc, err := goquery.NewDocumentFromReader(resp.Body)
				if err != nil {
					panic(err)
				}
				answers[i] = answer{resp.StatusCode, doc}
			}()
		}
		close(start)
		wg.Wait()
		return answers
	}

	t.Run("Edit", func(t *testing.T) {
		for round := range 10 {
			base, _, _ := c.templateText(id)
			for _, s := range editors {
				s.page(path)
			}
			bodies := []string{fmt.Sprintf("Round %d by the first editor.", round), fmt.Sprintf("Round %d by the second editor.", round)}
			answers := race(func(i int, s *session) *http.Response {
				return s.post(path, url.Values{"version": {strconv.Itoa(base)}, "body": {bodies[i]}})
			})
			won := -1
			for i, a := range answers {
				switch a.status {
				case http.StatusSeeOther:
					require.Equal(t, -1, won, "round %d: both saves landed", round)
					won = i
				case http.StatusConflict:
					require.Contains(t, text(a.doc.Find(".flash-error")), fmt.Sprintf("saved as version %d by someone else while you were working from version %d", base+1, base), "round %d", round)
					require.Equal(t, bodies[i], a.doc.Find(`textarea[name=body]`).Text(), "round %d: the loser's text is kept to copy", round)
					require.Equal(t, strconv.Itoa(base), a.doc.Find(`input[name=version]`).AttrOr("value", ""), "round %d: saving again still needs a reload", round)
				default:
					t.Fatalf("round %d: editor %d answered %d: %s", round, i, a.status, text(a.doc.Selection))
				}
			}
			require.NotEqual(t, -1, won, "round %d: one save lands", round)
			version, _, body := c.templateText(id)
			require.Equal(t, base+1, version, "round %d", round)
			require.Equal(t, bodies[won], body, "round %d: the winner's text is current", round)
			require.Equal(t, 1, c.Count(`SELECT count(*) FROM template_versions WHERE template_id = $1 AND version = $2`, id, base), "round %d: the replaced text is kept", round)
		}
		require.Equal(t, 10, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.update' AND target_id = $1`, id.String()))
	})

	t.Run("MissingVersion", func(t *testing.T) {
		before, _, body := c.templateText(id)
		editors[0].page(path)
		for _, form := range []url.Values{{"body": {"No version said."}}, {"version": {""}, "body": {"No version said."}}, {"version": {"x"}, "body": {"No version said."}}} {
			doc, resp := editors[0].postPage(path, form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, form)
			require.Contains(t, text(doc.Find(".flash-error")), "did not say which version of the template you started from", form)
			require.Equal(t, "No version said.", doc.Find(`textarea[name=body]`).Text(), "the typed text is kept to copy")
		}
		version, _, after := c.templateText(id)
		require.Equal(t, before, version, "nothing stored")
		require.Equal(t, body, after)
	})

	t.Run("Restore", func(t *testing.T) {
		for round := range 5 {
			base, _, _ := c.templateText(id)
			for _, s := range editors {
				s.page(path + "/versions")
			}
			answers := race(func(i int, s *session) *http.Response {
				return s.post(fmt.Sprintf("%s/versions/%d/restore?current=%d", path, 1+i, base), nil)
			})
			won := 0
			for i, a := range answers {
				switch a.status {
				case http.StatusSeeOther:
					won++
				case http.StatusConflict:
					require.Contains(t, text(a.doc.Selection), fmt.Sprintf("saved as version %d by someone else", base+1), "round %d", round)
				default:
					t.Fatalf("round %d: editor %d answered %d: %s", round, i, a.status, text(a.doc.Selection))
				}
			}
			require.Equal(t, 1, won, "round %d: one restore lands", round)
			version, _, _ := c.templateText(id)
			require.Equal(t, base+1, version, "round %d", round)
		}
	})

	t.Run("PipelineSaves", func(t *testing.T) {
		// Provisioning and the API save without a base version: saves at
		// the same moment each land, one on top of the other.
		base, _, _ := c.templateText(id)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = c.Services.Templates.Save(c.Ctx, app.CLIActor, c.Tenant.ID, id, app.TemplateInput{Body: fmt.Sprintf("Save %d.", i), IsActive: true})
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		version, _, _ := c.templateText(id)
		require.Equal(t, base+len(errs), version)
		require.Equal(t, base+len(errs)-1, c.Count(`SELECT count(*) FROM template_versions WHERE template_id = $1`, id))
	})
}

// A tenant overrides Herald's default text for a locale by creating a
// template over it: the default becomes the history, the tenant's text
// version 2. A key that holds the tenant's own text already is offered for
// editing instead of refused.
func TestConsoleTemplates_OverrideDefault(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	id := c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.Email, "de-DE")
	count := func() int {
		return c.Count(`SELECT count(*) FROM templates WHERE tenant_id = $1 AND trigger_event = 'BOOKING_CONFIRMED' AND channel = 'EMAIL'`, c.Tenant.ID)
	}
	before := count()
	own := url.Values{
		"event": {"BOOKING_CONFIRMED"}, "channel": {"EMAIL"}, "locale": {"de-DE"},
		"subject": {"Ihre Buchung {{booking_reference}}"}, "body": {"<p>Hallo {{passenger_name}}, wir freuen uns auf {{tour_name}}.</p>"},
	}

	s.page("/t/acme/templates/new")
	resp := s.post("/t/acme/templates", own)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/t/acme/templates/"+id.String(), resp.Header.Get("Location"), "the default's key, not a new template")
	doc := s.follow(resp)
	require.Contains(t, text(doc.Find(".flash-success")), "replaces Herald's default")
	version, subject, _ := c.templateText(id)
	require.Equal(t, 2, version)
	require.Equal(t, "Ihre Buchung {{booking_reference}}", subject)
	require.Equal(t, before, count(), "no second template for the key")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM template_versions WHERE template_id = $1 AND version = 1`, id), "the default kept in the history")

	// Now the key holds the tenant's own text: a second create is refused
	// with a link to edit it, and stores nothing.
	s.page("/t/acme/templates/new")
	own.Set("subject", "Noch einmal")
	doc, resp = s.postPage("/t/acme/templates", own)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, "/t/acme/templates/"+id.String(), doc.Find(".template-exists a").AttrOr("href", ""))
	version, subject, _ = c.templateText(id)
	require.Equal(t, 2, version)
	require.Equal(t, "Ihre Buchung {{booking_reference}}", subject)
}
