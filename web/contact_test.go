package web_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// annaContact routes webtest.Notification for a booking and returns Anna's
// contact id and her messages.
func (c *consoleBundle) annaContact(eventID, booking string) (uuid.UUID, []*app.Message) {
	c.T.Helper()
	ms := c.routeNow(c.Tenant.ID, c.Submit(webtest.Notification(eventID, booking)))
	require.NotNil(c.T, ms[0].ContactID)
	return *ms[0].ContactID, ms
}

func TestConsoleContacts_Page(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	id, ms := c.annaContact("evt-anna", "BK-ANNA")
	path := "/t/acme/contacts/" + id.String()

	t.Run("Manager", func(t *testing.T) {
		doc := c.signIn(asManager).page(path)
		facts := text(doc.Find(".contact-facts"))
		require.Contains(t, facts, "Anna Schmidt")
		require.Contains(t, facts, annaPhone)
		require.Contains(t, facts, annaEmail)
		require.Equal(t, "/t/acme/bookings/booking/BK-ANNA", doc.Find(".contact-bookings a").AttrOr("href", ""))
		rows := doc.Find(".contact-messages tbody tr")
		require.Equal(t, len(ms), rows.Length())
		for _, m := range ms {
			row := doc.Find("#message-" + m.ID.String())
			require.Contains(t, text(row), m.ToAddress, "the exact address used")
			require.Contains(t, text(row), string(m.Channel))
			require.Contains(t, text(row), app.MessageQueued)
		}
		require.Contains(t, text(doc.Find(".contact-history")), "created")
		require.Equal(t, 1, doc.Find(`form[action="`+path+`/opt-out"] input[name=csrf]`).Length(), "managers may opt out")
	})

	t.Run("SupportSeesMasked", func(t *testing.T) {
		s := c.signIn(asSupport)
		_, resp := s.get(path)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		doc := s.page(path)
		html, err := doc.Html()
		require.NoError(t, err)
		require.NotContains(t, html, annaPhone)
		require.NotContains(t, html, "15123456789")
		require.NotContains(t, html, annaEmail)
		require.Contains(t, text(doc.Find(".contact-facts")), "+49 ••• ••• 6789")
		require.Contains(t, text(doc.Find(".contact-messages")), "a•••@example.com")
		require.Equal(t, 1, doc.Find(`form[action="`+path+`/opt-out"] input[name=csrf]`).Length(), "support records a passenger's opt-out")
		require.Contains(t, text(doc.Find(".contact-opt")), "Transactional messages are still sent")
		require.Equal(t, http.StatusForbidden, s.post(path+"/opt-out", url.Values{"csrf": {"forged"}, "channels": {"SMS"}}).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM contact_changes WHERE contact_id = $1 AND field = 'opted_out'`, id))
	})

	t.Run("LinkedFromPanelAndMessage", func(t *testing.T) {
		s := c.signIn(asSupport)
		panel := s.page("/t/acme/bookings/booking/BK-ANNA")
		require.Equal(t, path, panel.Find("#message-"+ms[0].ID.String()+" a.contact-link").AttrOr("href", ""))
		msg := s.page("/t/acme/messages/" + ms[0].ID.String())
		require.Equal(t, path, msg.Find("dl.facts a.contact-link").AttrOr("href", ""))
	})

	t.Run("OtherTenant404", func(t *testing.T) {
		s := c.signIn(asOtherManager)
		_, resp := s.get("/t/globex/contacts/" + id.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		_, resp = s.get(path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		_, resp = c.signIn(asManager).get("/t/acme/contacts/not-a-uuid")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func TestConsoleContacts_OptOut(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	id, _ := c.annaContact("evt-1", "BK-1")
	path := "/t/acme/contacts/" + id.String()
	s := c.signIn(asManager)
	s.page(path)

	require.Equal(t, http.StatusForbidden, s.post(path+"/opt-out", url.Values{"csrf": {"forged"}, "channels": {"WHATSAPP"}}).StatusCode)
	require.Zero(t, c.Count(`SELECT count(*) FROM contact_changes WHERE contact_id = $1 AND field = 'opted_out'`, id))

	resp := s.post(path+"/opt-out", url.Values{"channels": {"WHATSAPP"}})
	doc := s.follow(resp)
	require.Contains(t, text(doc.Find(".flash-success")), "Opted out")
	require.Equal(t, "WHATSAPP", text(doc.Find(".contact-opted-out")))
	require.Contains(t, text(doc.Find(".contact-history")), "opted out of")
	require.Contains(t, text(doc.Find(".contact-history")), "manager@acme.test")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'contact.opt_out' AND target_id = $1 AND actor_id = $2`,
		id.String(), c.users[asManager].ID))

	// An optional event skips the opted-out channel; e-mail still goes.
	reminder := c.Submit(webtest.Reminder("evt-2", "BK-2"))
	ms := c.routeNow(c.Tenant.ID, reminder)
	require.Len(t, ms, 1)
	require.Equal(t, app.Email, ms[0].Channel)
	// The booking panel and the API's answer say which channel was not
	// sent and why, not only the event's page.
	skip := c.signIn(asSupport).page("/t/acme/bookings/booking/BK-2").Find(`#event-` + reminder.String() + ` .skip`)
	require.Equal(t, 1, skip.Length())
	require.Equal(t, "WHATSAPP", skip.AttrOr("data-skip-channel", ""))
	require.Equal(t, app.ReasonOptedOut, skip.AttrOr("data-skip-reason", ""))
	require.Equal(t, "WHATSAPP not sent: "+app.ReasonText(app.ReasonOptedOut), text(skip))
	var answer app.EventDetail
	require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/notifications/"+reminder.String(), nil, &answer))
	require.Len(t, answer.Skipped, 1)
	require.Equal(t, app.EventSkip{Recipient: 0, Channel: app.WhatsApp, Reason: app.ReasonOptedOut, Text: app.ReasonText(app.ReasonOptedOut),
		At: answer.Skipped[0].At}, answer.Skipped[0])
	require.False(t, answer.Skipped[0].At.IsZero())
	// A transactional one is sent on every channel all the same.
	ms = c.routeNow(c.Tenant.ID, c.Submit(webtest.Notification("evt-2b", "BK-2")))
	require.Len(t, ms, 2)

	// Every channel opted out: one failed message says why.
	resp = s.post(path+"/opt-out", nil)
	require.Equal(t, "WHATSAPP, EMAIL, SMS", text(s.follow(resp).Find(".contact-opted-out")))
	ms = c.routeNow(c.Tenant.ID, c.Submit(webtest.Reminder("evt-3", "BK-3")))
	m := webtest.OnlyMessage(t, ms)
	require.Equal(t, app.MessageFailed, m.Status)
	require.Equal(t, app.ReasonOptedOut, *m.FailedReason)

	resp = s.post(path+"/opt-in", url.Values{"channels": {"EMAIL", "SMS"}})
	require.Equal(t, "WHATSAPP", text(s.follow(resp).Find(".contact-opted-out")))

	resp = s.post(path+"/opt-in", url.Values{"channels": {"FAX"}})
	require.Contains(t, text(s.follow(resp).Find(".flash-error")), "FAX")
}

// contactJSON is a contact as the API answers it.
type contactJSON struct {
	ID                 uuid.UUID `json:"id"`
	Name               string    `json:"name"`
	Phone              *string   `json:"phone"`
	Email              *string   `json:"email"`
	Locale             *string   `json:"locale"`
	PassengerProfileID *string   `json:"passenger_profile_id"`
	OptedOut           []string  `json:"opted_out"`
	History            []struct {
		Field     string  `json:"field"`
		OldValue  *string `json:"old_value"`
		NewValue  *string `json:"new_value"`
		Source    string  `json:"source"`
		ActorType string  `json:"actor_type"`
	} `json:"history"`
}

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Field   string `json:"field"`
		Details []struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		} `json:"details"`
	} `json:"error"`
}

func TestAPIContacts(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	annaID, _ := c.annaContact("evt-anna", "BK-ANNA")
	body := webtest.WithRecipient("evt-ben", "BK-BEN", map[string]any{"name": "Ben", "phone": "+4915123451111", "passenger_profile_id": "pax-ben"}, "WHATSAPP")
	benID := *c.routeNow(c.Tenant.ID, c.Submit(body))[0].ContactID

	t.Run("List", func(t *testing.T) {
		var res struct {
			Contacts []contactJSON `json:"contacts"`
			Page     struct {
				HasMore    bool `json:"has_more"`
				NextOffset *int `json:"next_offset"`
			} `json:"page"`
		}
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/contacts?limit=1", nil, &res))
		require.Len(t, res.Contacts, 1)
		require.True(t, res.Page.HasMore)
		require.Equal(t, 1, *res.Page.NextOffset)
		require.Equal(t, benID, res.Contacts[0].ID, "newest first")

		res.Contacts, res.Page.NextOffset = nil, nil
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/contacts?limit=1&offset=1", nil, &res))
		require.Equal(t, annaID, res.Contacts[0].ID)
		require.False(t, res.Page.HasMore)
		require.Nil(t, res.Page.NextOffset)

		for q, want := range map[string]uuid.UUID{
			"phone=" + url.QueryEscape("+49 151 23456789"): annaID,
			"email=ANNA@example.com":                       annaID,
			"passenger_profile_id=pax-ben":                 benID,
		} {
			res.Contacts = nil
			require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/contacts?"+q, nil, &res), q)
			require.Len(t, res.Contacts, 1, q)
			require.Equal(t, want, res.Contacts[0].ID, q)
		}
	})

	t.Run("ListBadInput", func(t *testing.T) {
		for q, field := range map[string]string{"phone=12": "phone", "email=nope": "email", "limit=0": "limit", "limit=x": "limit", "offset=-1": "offset"} {
			var e apiError
			require.Equal(t, http.StatusUnprocessableEntity, c.Request(http.MethodGet, "/api/v1/contacts?"+q, nil, &e), q)
			require.Equal(t, field, e.Error.Field, q)
		}
	})

	t.Run("GetWithHistory", func(t *testing.T) {
		var got contactJSON
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/contacts/"+annaID.String(), nil, &got))
		require.Equal(t, "Anna Schmidt", got.Name)
		require.Equal(t, annaPhone, *got.Phone)
		require.NotEmpty(t, got.History)
		require.Equal(t, app.ChangeCreated, got.History[len(got.History)-1].Field)
		require.Equal(t, "event", got.History[len(got.History)-1].Source)
		require.Equal(t, http.StatusNotFound, c.Request(http.MethodGet, "/api/v1/contacts/"+uuid.NewString(), nil, nil))
		require.Equal(t, http.StatusNotFound, c.Request(http.MethodGet, "/api/v1/contacts/nope", nil, nil))
	})

	t.Run("OtherTenant404", func(t *testing.T) {
		_, key, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.other.ID, "globex", app.Scopes...)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, c.RequestWithKey(key, http.MethodGet, "/api/v1/contacts/"+annaID.String(), nil, nil))
		require.Equal(t, http.StatusNotFound, c.RequestWithKey(key, http.MethodPatch, "/api/v1/contacts/"+annaID.String(), map[string]any{"name": "X"}, nil))
		require.Equal(t, http.StatusNotFound, c.RequestWithKey(key, http.MethodPost, "/api/v1/contacts/"+annaID.String()+"/opt-out", nil, nil))
		var res struct{ Contacts []contactJSON }
		require.Equal(t, http.StatusOK, c.RequestWithKey(key, http.MethodGet, "/api/v1/contacts", nil, &res))
		require.Empty(t, res.Contacts)
	})

	t.Run("Scopes", func(t *testing.T) {
		// Reading needs read; changing needs manage.
		_, reader, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.Tenant.ID, "reader", app.ScopeRead)
		require.NoError(t, err)
		path := "/api/v1/contacts/" + annaID.String()
		require.Equal(t, http.StatusOK, c.RequestWithKey(reader, http.MethodGet, "/api/v1/contacts", nil, nil))
		require.Equal(t, http.StatusOK, c.RequestWithKey(reader, http.MethodGet, path, nil, nil))
		var e apiError
		require.Equal(t, http.StatusForbidden, c.RequestWithKey(reader, http.MethodPatch, path, map[string]any{"name": "X"}, &e))
		require.Equal(t, "insufficient_scope", e.Error.Code)
		require.Equal(t, http.StatusForbidden, c.RequestWithKey(reader, http.MethodPost, path+"/opt-out", nil, nil))
		require.Equal(t, http.StatusForbidden, c.RequestWithKey(reader, http.MethodPost, path+"/opt-in", nil, nil))
		_, sender, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.Tenant.ID, "sender", app.ScopeSend)
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, c.RequestWithKey(sender, http.MethodGet, path, nil, nil))
		require.Zero(t, c.Count(`SELECT count(*) FROM contact_changes WHERE contact_id = $1 AND source = 'api'`, annaID))
	})

	t.Run("Update", func(t *testing.T) {
		var got contactJSON
		require.Equal(t, http.StatusOK, c.Request(http.MethodPatch, "/api/v1/contacts/"+benID.String(),
			map[string]any{"name": "Ben Braun", "locale": "en-gb", "email": "Ben@Example.com"}, &got))
		require.Equal(t, "Ben Braun", got.Name)
		require.Equal(t, "en-GB", *got.Locale)
		require.Equal(t, "ben@example.com", *got.Email)
		fields := map[string]string{}
		for _, h := range got.History {
			if h.Source == "api" {
				fields[h.Field] = *h.NewValue
				require.Equal(t, app.ActorAPIKey, h.ActorType)
			}
		}
		require.Equal(t, map[string]string{"name": "Ben Braun", "locale": "en-GB", "email": "ben@example.com"}, fields)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'contact.update' AND target_id = $1`, benID.String()))
	})

	t.Run("UpdateBadInput", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM contact_changes`)
		cases := []struct {
			body   map[string]any
			status int
			field  string
		}{
			{map[string]any{"phone": annaPhone}, http.StatusConflict, "phone"},
			{map[string]any{"phone": "12"}, http.StatusUnprocessableEntity, "phone"},
			{map[string]any{"email": "nope", "locale": "??"}, http.StatusUnprocessableEntity, "locale"},
			{map[string]any{"phone": "", "email": ""}, http.StatusUnprocessableEntity, "phone"},
			{map[string]any{}, http.StatusUnprocessableEntity, ""},
			{map[string]any{"tenant_id": "x"}, http.StatusUnprocessableEntity, "tenant_id"},
		}
		for _, tc := range cases {
			var e apiError
			require.Equal(t, tc.status, c.Request(http.MethodPatch, "/api/v1/contacts/"+benID.String(), tc.body, &e), "%v", tc.body)
			require.Equal(t, tc.field, e.Error.Field, "%v", tc.body)
		}
		require.Equal(t, before, c.Count(`SELECT count(*) FROM contact_changes`), "a refused change stores nothing")
	})

	t.Run("OptOutAndIn", func(t *testing.T) {
		var got contactJSON
		require.Equal(t, http.StatusOK, c.Request(http.MethodPost, "/api/v1/contacts/"+annaID.String()+"/opt-out", map[string]any{"channels": []string{"sms", "EMAIL"}}, &got))
		require.Equal(t, []string{"EMAIL", "SMS"}, got.OptedOut)
		require.Equal(t, http.StatusOK, c.Request(http.MethodPost, "/api/v1/contacts/"+annaID.String()+"/opt-in", map[string]any{"channels": []string{"EMAIL"}}, &got))
		require.Equal(t, []string{"SMS"}, got.OptedOut)
		require.Equal(t, http.StatusOK, c.Request(http.MethodPost, "/api/v1/contacts/"+annaID.String()+"/opt-out", nil, &got))
		require.Equal(t, []string{"WHATSAPP", "EMAIL", "SMS"}, got.OptedOut)
		require.Equal(t, 2, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'contact.opt_out' AND target_id = $1`, annaID.String()))

		var e apiError
		require.Equal(t, http.StatusUnprocessableEntity, c.Request(http.MethodPost, "/api/v1/contacts/"+annaID.String()+"/opt-in",
			map[string]any{"channels": []string{"EMAIL", "FAX", "WEBHOOK"}}, &e))
		require.Equal(t, "channels[1]", e.Error.Field)
		require.Len(t, e.Error.Details, 2)
		require.Equal(t, "channels[2]", e.Error.Details[1].Field)
	})
}

// Two edits giving two contacts the same phone number at once: the
// conflict check and the write are one atomic step, so exactly one wins.
func TestAPIContacts_ConcurrentPhoneConflict(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	var ids []uuid.UUID
	for i, email := range []string{"a@example.com", "b@example.com"} {
		body := webtest.WithRecipient("evt-"+email, "BK-"+email, map[string]any{"name": "P" + string(rune('A'+i)), "email": email}, "EMAIL")
		ids = append(ids, *c.routeNow(c.Tenant.ID, c.Submit(body))[0].ContactID)
	}
	const phone = "+4915123453333"
	statuses := make([]int, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = c.Request(http.MethodPatch, "/api/v1/contacts/"+id.String(), map[string]any{"phone": phone}, nil)
		}()
	}
	wg.Wait()
	require.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, statuses)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM contacts WHERE tenant_id = $1 AND phone = $2`, c.Tenant.ID, phone))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM contact_changes WHERE field = 'phone' AND new_value = $1`, phone))
}
