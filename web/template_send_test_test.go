package web_test

import (
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
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/web/webtest"
)

// templateTestForm is the editor's form of a template with a test to send.
func templateTestForm(c *consoleBundle, id uuid.UUID, to string, account uuid.UUID) url.Values {
	version, subject, body := c.templateText(id)
	return url.Values{
		"template_id": {id.String()}, "version": {strconv.Itoa(version)}, "subject": {subject}, "body": {body},
		"test_to": {to}, "test_account": {account.String()},
	}
}

// lastTestMessage returns the tenant's newest test message, or nil.
func lastTestMessage(c *consoleBundle) *app.Message {
	var found *app.Message
	for _, m := range c.testMessages() {
		if found == nil || m.CreatedAt.After(found.CreatedAt) {
			found = m
		}
	}
	return found
}

func (c *consoleBundle) testMessages() []*app.Message {
	c.T.Helper()
	ms, _, err := c.Server.MessageConsole.List(c.Ctx, c.Tenant.ID, console.MessageFilter{}, console.PageRequest{Limit: 200})
	require.NoError(c.T, err)
	var out []*app.Message
	for _, m := range ms {
		if m.Test {
			out = append(out, m)
		}
	}
	return out
}

func TestConsoleTemplates_SendTest(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	s := c.signIn(asManager)
	emailTpl := c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.Email, "de-DE")
	editor := "/t/acme/templates/" + emailTpl.String()
	email := c.accountsNamed(c.Tenant.ID, "Sandbox EMAIL")[0]
	sms := c.accountsNamed(c.Tenant.ID, "Sandbox SMS")[0]
	countMessages := func() int {
		return c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, c.Tenant.ID)
	}

	t.Run("SentWithEditedSamples", func(t *testing.T) {
		pending, _, err := c.Server.Accounts.Create(c.Ctx, c.users[asManager], c.Tenant.ID,
			console.AccountForm{Provider: "sandbox", Name: "New e-mail", Channel: "EMAIL"})
		require.NoError(t, err)
		doc := s.page(editor)
		options := doc.Find(`#template-test select[name=test_account] option`)
		labels := options.Map(func(_ int, o *goquery.Selection) string { return o.Text() })
		require.Contains(t, strings.Join(labels, "|"), "Sandbox EMAIL (active)")
		require.Contains(t, strings.Join(labels, "|"), "New e-mail (pending")
		require.NotContains(t, strings.Join(labels, "|"), "Sandbox SMS", "only accounts of the template's channel")
		require.Equal(t, "template-form", doc.Find(`#template-test input[name=test_to]`).AttrOr("form", ""))

		form := templateTestForm(c, emailTpl, " Anna.Test@Example.com ", pending.ID)
		form.Set("body", "<p>Hallo {{passenger_name}}, {{tour_name}} ist gebucht.</p>")
		form.Set("sample.tour_name", "Nordkap & Lofoten")
		doc, resp := s.postPage("/t/acme/templates/test", form)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		result := doc.Find("#template-test-result")
		require.Equal(t, 1, result.Length(), "the editor shows the test's result")
		require.Contains(t, doc.Find(`textarea[name=body]`).Text(), "{{tour_name}} ist gebucht", "the unsaved content stays in the editor")
		require.Equal(t, "Nordkap & Lofoten", doc.Find(`input[name="sample.tour_name"]`).AttrOr("value", ""))

		m := lastTestMessage(c)
		require.NotNil(t, m)
		require.True(t, m.Test)
		require.Equal(t, "anna.test@example.com", m.ToAddress)
		require.Equal(t, pending.ID, *m.ChannelAccountID)
		require.Equal(t, emailTpl, *m.TemplateID)
		require.Equal(t, "BOOKING_CONFIRMED", m.TriggerEvent)
		require.Contains(t, m.Body, "Nordkap &amp; Lofoten ist gebucht", "e-mail values are escaped as routing does")
		_, _, saved := c.templateText(emailTpl)
		require.NotContains(t, saved, "ist gebucht", "a test saves nothing")

		c.WaitUntil("the test is delivered", func() bool {
			d, err := c.Services.Messages.Get(c.Ctx, c.Tenant.ID, m.ID)
			require.NoError(t, err)
			return d.Status == app.MessageDelivered || d.Status == app.MessageRead
		})
		frag := s.page("/t/acme/templates/tests/" + m.ID.String())
		require.Contains(t, text(frag.Find(".test-outcome")), "Sent")
		_, polling := frag.Find("#template-test-result").Attr("hx-get")
		require.False(t, polling)
		require.Equal(t, app.AccountPending, c.account(c.Tenant.ID, pending.ID).Status)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.test_send' AND target_id = $1`, emailTpl.String()))
	})

	t.Run("ProviderErrorInWords", func(t *testing.T) {
		s.page(editor)
		doc, resp := s.postPage("/t/acme/templates/test", templateTestForm(c, emailTpl, "fail@example.com", email.ID))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, 1, doc.Find("#template-test-result").Length())
		m := lastTestMessage(c)
		c.WaitUntil("the test fails", func() bool {
			d, err := c.Services.Messages.Get(c.Ctx, c.Tenant.ID, m.ID)
			require.NoError(t, err)
			return d.Status == app.MessageFailed
		})
		frag := s.page("/t/acme/templates/tests/" + m.ID.String())
		outcome := text(frag.Find(".test-outcome"))
		require.Contains(t, outcome, "Not sent.")
		require.NotContains(t, outcome, "provider_rejected", "words, not codes")
		require.Zero(t, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1`, "retry:"+m.ID.String()))
	})

	bad := []struct {
		name, field, want string
		form              func() url.Values
	}{
		{"BadAddress", "test_to", "not an e-mail address", func() url.Values {
			return templateTestForm(c, emailTpl, "anna at example", email.ID)
		}},
		{"NoAddress", "test_to", "Enter the e-mail address", func() url.Values {
			return templateTestForm(c, emailTpl, "  ", email.ID)
		}},
		{"WrongChannelAccount", "test_account", "is a SMS account; this template is sent on e-mail", func() url.Values {
			return templateTestForm(c, emailTpl, "anna@example.com", sms.ID)
		}},
		{"OtherTenantsAccount", "test_account", "does not exist", func() url.Values {
			return templateTestForm(c, emailTpl, "anna@example.com", c.accountsNamed(c.other.ID, "Sandbox EMAIL")[0].ID)
		}},
		{"NoAccount", "test_account", "Choose the account", func() url.Values {
			return templateTestForm(c, emailTpl, "anna@example.com", uuid.Nil)
		}},
		{"MissingSampleValue", "sample.tour_name", "Give tour_name a sample value", func() url.Values {
			f := templateTestForm(c, emailTpl, "anna@example.com", email.ID)
			f.Set("sample.tour_name", " ")
			return f
		}},
		{"EmptyBody", "body", "Body is required", func() url.Values {
			f := templateTestForm(c, emailTpl, "anna@example.com", email.ID)
			f.Set("body", "")
			return f
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			n := countMessages()
			s.page(editor)
			form := tc.form()
			if tc.name == "NoAccount" {
				form.Set("test_account", "")
			}
			doc, resp := s.postPage("/t/acme/templates/test", form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Contains(t, text(doc.Find(".field-error")), tc.want)
			require.Zero(t, doc.Find("#template-test-result").Length())
			require.Equal(t, n, countMessages(), "a refused test stores nothing")
		})
	}

	t.Run("OtherTenantsTemplate", func(t *testing.T) {
		other := c.templateID(c.other.ID, "BOOKING_CONFIRMED", app.Email, "de-DE")
		s.page(editor)
		form := templateTestForm(c, emailTpl, "anna@example.com", email.ID)
		form.Set("template_id", other.String())
		_, resp := s.postPage("/t/acme/templates/test", form)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("SupportMayNot", func(t *testing.T) {
		support := c.signIn(asSupport)
		_, resp := support.get(editor)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

func TestConsoleTemplates_SendTestRateLimit(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	c.Server.Accounts.TestSendLimit = 3
	tpl, err := c.Server.Templates.Get(c.Ctx, c.users[asManager], c.Tenant.ID, c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.SMS, "de-DE"))
	require.NoError(t, err)
	sms := c.accountsNamed(c.Tenant.ID, "Sandbox SMS")[0]

	// Ten tests at once: the count and the insert happen under one lock, so
	// exactly the limit gets through.
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := c.Server.Accounts.SendTemplateTest(c.Ctx, c.users[asManager], c.Tenant.ID, console.TemplateTestInput{
				Template: tpl, Content: app.TemplateInput{Body: tpl.Body}, AccountID: sms.ID.String(), To: "+49 151 12345678",
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	refused := 0
	for err := range errs {
		if err != nil {
			require.Equal(t, app.ECONFLICT, app.ErrorCode(err))
			require.Contains(t, app.ErrorMessage(err), "the most it may")
			refused++
		}
	}
	require.Equal(t, 7, refused)
	require.Equal(t, 3, c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND test`, c.Tenant.ID))
	require.Equal(t, 3, c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND to_address = '+4915112345678'`, c.Tenant.ID),
		"phone numbers are normalised")

	// The console says so plainly, with 429.
	s := c.signIn(asManager)
	editor := "/t/acme/templates/" + tpl.ID.String()
	s.page(editor)
	doc, resp := s.postPage("/t/acme/templates/test", templateTestForm(c, tpl.ID, "+4915112345678", sms.ID))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Contains(t, text(doc.Find(".flash-error")), "Try again later")

	// Tests older than the window no longer count.
	c.Exec(`UPDATE messages SET created_at = created_at - interval '2 hours' WHERE tenant_id = $1 AND test`, c.Tenant.ID)
	_, err = c.Server.Accounts.SendTemplateTest(c.Ctx, c.users[asManager], c.Tenant.ID, console.TemplateTestInput{
		Template: tpl, Content: app.TemplateInput{Body: tpl.Body}, AccountID: sms.ID.String(), To: "+4915112345678",
	})
	require.NoError(t, err)
}
