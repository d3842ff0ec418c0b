package web_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// personalLeft counts the places Anna's phone number, e-mail address or
// name are still stored in the tenant: her contact, its history, the
// messages, their timelines, the events and what she wrote.
func (c *consoleBundle) personalLeft(t *testing.T) int {
	t.Helper()
	n := 0
	for _, v := range []string{annaPhone, annaEmail, "Anna"} {
		n += c.Count(`SELECT
			(SELECT count(*) FROM contacts x WHERE x.tenant_id = $1 AND x::text LIKE '%' || $2 || '%')
			+ (SELECT count(*) FROM contact_changes x WHERE x.tenant_id = $1 AND x::text LIKE '%' || $2 || '%')
			+ (SELECT count(*) FROM messages x WHERE x.tenant_id = $1 AND x::text LIKE '%' || $2 || '%')
			+ (SELECT count(*) FROM message_events x WHERE x.tenant_id = $1 AND x::text LIKE '%' || $2 || '%')
			+ (SELECT count(*) FROM events x WHERE x.tenant_id = $1 AND x::text LIKE '%' || $2 || '%')
			+ (SELECT count(*) FROM inbound_messages x WHERE x.tenant_id = $1 AND x::text LIKE '%' || $2 || '%')`,
			c.Tenant.ID, v)
	}
	return n
}

// auditLeaks counts contact.erase audit entries that name Anna's phone,
// e-mail address or name anywhere in the row.
func (c *consoleBundle) auditLeaks(t *testing.T) int {
	t.Helper()
	n := 0
	for _, v := range []string{annaPhone, "15123456789", annaEmail, "Anna", "Schmidt"} {
		n += c.Count(`SELECT count(*) FROM audit_log a WHERE a.action = 'contact.erase' AND a::text LIKE '%' || $1 || '%'`, v)
	}
	return n
}

func TestContactErase_API(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	_, otherKey, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.other.ID, "globex system", app.Scopes...)
	require.NoError(t, err)
	id, ms := c.annaContact("evt-erase-api", "BK-ERASE")
	_, err = c.Server.Inbound.Record(c.Ctx, c.Tenant.ID, app.InboundMessage{
		Channel: app.WhatsApp, Provider: "meta", ExternalID: "wamid.erase-1", From: annaPhone, Kind: "text",
		Body: "Anna here, call me on " + annaPhone, ReceivedAt: time.Now(),
	})
	require.NoError(t, err)
	path := "/api/v1/contacts/" + id.String() + "/erase"
	require.Positive(t, c.personalLeft(t))
	countsBefore := c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, c.Tenant.ID)

	t.Run("BadInputsEraseNothing", func(t *testing.T) {
		var e apiError
		require.Equal(t, http.StatusNotFound, c.Request(http.MethodPost, "/api/v1/contacts/not-a-uuid/erase", nil, &e))
		require.NotEmpty(t, e.Error.Code)
		e = apiError{}
		require.Equal(t, http.StatusNotFound, c.Request(http.MethodPost, "/api/v1/contacts/"+uuid.NewString()+"/erase", nil, &e))
		e = apiError{}
		// A body is not in the OpenAPI document: sent as a caller's
		// mistake, past the request's contract check.
		require.Equal(t, http.StatusUnprocessableEntity, c.RequestGarbage(http.MethodPost, path, `{"confirm": true}`, &e))
		require.Equal(t, "unexpected_body", e.Error.Code)
		e = apiError{}
		require.Equal(t, http.StatusNotFound, c.RequestWithKey(otherKey, http.MethodPost, path, nil, &e), "another tenant's contact")
		require.Zero(t, c.Count(`SELECT count(*) FROM contacts WHERE id = $1 AND erased_at IS NOT NULL`, id))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'contact.erase'`))
	})

	t.Run("ErasesAndKeepsFacts", func(t *testing.T) {
		var res app.ErasureResult
		require.Equal(t, http.StatusOK, c.Request(http.MethodPost, path, nil, &res))
		require.False(t, res.AlreadyErased)
		require.Equal(t, id, res.ContactID)
		require.Equal(t, len(ms), res.Removed.Messages)
		require.Equal(t, len(ms), res.Removed.Cancelled, "routed but never dispatched: all were waiting")
		require.Equal(t, 1, res.Removed.Inbound)
		require.Positive(t, res.Removed.History)
		require.Equal(t, 1, res.Removed.Events)
		require.Zero(t, c.personalLeft(t), "no phone, e-mail address or name of Anna is left")
		require.Equal(t, countsBefore, c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, c.Tenant.ID),
			"every message stays, with its facts")
		require.Equal(t, len(ms), c.Count(`SELECT count(*) FROM messages WHERE contact_id = $1 AND redaction = 'erasure'
			AND to_address = '' AND body = '' AND trigger_event <> '' AND channel <> ''`, id))

		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'contact.erase'
			AND target_id = $2 AND actor_type = 'api_key' AND (metadata->>'messages')::int = $3`, c.Tenant.ID, id.String(), len(ms)))
		require.Zero(t, c.auditLeaks(t), "the audit entry records counts, never the data")

		var got app.ContactDetail
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/contacts/"+id.String(), nil, &got))
		require.NotNil(t, got.ErasedAt)
		require.Empty(t, got.Name)
		require.Nil(t, got.Phone)
		require.Empty(t, got.History)

		var m app.Message
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/messages/"+ms[0].ID.String(), nil, &m))
		require.NotNil(t, m.RedactedAt)
		require.Empty(t, m.ToAddress)
		require.Equal(t, ms[0].Channel, m.Channel)

		var conv uuid.UUID
		require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(c.Ctx, `SELECT id FROM conversations WHERE contact_id = $1 AND erased_at IS NOT NULL`, id).Scan(&conv)
		}))
		page := c.signIn(asManager).page("/t/acme/inbox/" + conv.String())
		require.Contains(t, text(page.Find(".conversation-erased")), "was removed")
		html, err := page.Html()
		require.NoError(t, err)
		require.NotContains(t, html, annaPhone)

		var e apiError
		require.Equal(t, http.StatusConflict, c.Request(http.MethodPatch, "/api/v1/contacts/"+id.String(),
			map[string]any{"phone": annaPhone}, &e), "an erased contact is not filled in again")
		require.Equal(t, "contact_erased", e.Error.Code)
	})

	t.Run("Idempotent", func(t *testing.T) {
		var res app.ErasureResult
		require.Equal(t, http.StatusOK, c.Request(http.MethodPost, path, nil, &res))
		require.True(t, res.AlreadyErased)
		require.Equal(t, app.ContactErasure{}, res.Removed)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'contact.erase'`), "a repeat records nothing")
	})
}

func TestContactErase_Console(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	id, ms := c.annaContact("evt-erase-console", "BK-CONSOLE")
	path := "/t/acme/contacts/" + id.String()

	t.Run("SupportMayNot", func(t *testing.T) {
		s := c.signIn(asSupport)
		doc := s.page(path)
		require.Zero(t, doc.Find(`form[action="`+path+`/erase"]`).Length(), "managers only")
		require.Equal(t, http.StatusForbidden, s.post(path+"/erase", url.Values{"confirm": {"ERASE"}}).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM contacts WHERE id = $1 AND erased_at IS NOT NULL`, id))
	})

	t.Run("OtherTenant404", func(t *testing.T) {
		s := c.signIn(asOtherManager)
		s.page("/t/globex/")
		require.Equal(t, http.StatusNotFound, s.post("/t/globex/contacts/"+id.String()+"/erase", url.Values{"confirm": {"ERASE"}}).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM contacts WHERE id = $1 AND erased_at IS NOT NULL`, id))
	})

	s := c.signIn(asManager)
	doc := s.page(path)
	form := doc.Find(`form[action="` + path + `/erase"]`)
	require.Equal(t, 1, form.Find(`input[name=csrf]`).Length())
	require.NotEmpty(t, form.AttrOr("data-confirm", ""), "the browser asks once more")

	t.Run("ForgedCSRF", func(t *testing.T) {
		require.Equal(t, http.StatusForbidden, s.post(path+"/erase", url.Values{"csrf": {"forged"}, "confirm": {"ERASE"}}).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM contacts WHERE id = $1 AND erased_at IS NOT NULL`, id))
	})

	t.Run("NotConfirmed", func(t *testing.T) {
		s.page(path)
		doc := s.follow(s.post(path+"/erase", url.Values{"confirm": {"yes"}}))
		require.Contains(t, text(doc.Find(".flash-error")), "Type ERASE to confirm")
		require.Zero(t, c.Count(`SELECT count(*) FROM contacts WHERE id = $1 AND erased_at IS NOT NULL`, id))
		require.Contains(t, text(doc.Find(".contact-facts")), annaPhone)
	})

	t.Run("Erases", func(t *testing.T) {
		s.page(path)
		doc := s.follow(s.post(path+"/erase", url.Values{"confirm": {"ERASE"}}))
		require.Contains(t, text(doc.Find(".flash-success")), "Contact erased")
		require.Contains(t, text(doc.Find(".contact-erased")), "erased at the passenger's request")
		html, err := doc.Html()
		require.NoError(t, err)
		require.NotContains(t, html, annaPhone)
		require.NotContains(t, html, annaEmail)
		require.Zero(t, doc.Find(`form[action="`+path+`/erase"]`).Length())
		require.Zero(t, c.personalLeft(t))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'contact.erase' AND actor_type = 'user' AND target_id = $1`, id.String()))
		require.Zero(t, c.auditLeaks(t))
	})

	t.Run("MessagePageSaysSo", func(t *testing.T) {
		doc := s.page("/t/acme/messages/" + ms[0].ID.String())
		require.Contains(t, text(doc.Find(".personal-data-removed")), "erased at the contact's request")
		require.Contains(t, text(doc.Find("dl.facts")), string(ms[0].Channel))
		require.Contains(t, text(doc.Find("dl.facts")), "removed")
	})

	t.Run("Idempotent", func(t *testing.T) {
		s.page(path)
		doc := s.follow(s.post(path+"/erase", url.Values{"confirm": {"ERASE"}}))
		require.Contains(t, text(doc.Find(".flash-success")), "already erased")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'contact.erase'`))
	})
}
