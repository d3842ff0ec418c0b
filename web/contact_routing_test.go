package web_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// The family shares one e-mail address; each has a phone of their own. The
// sandbox rejects numbers ending in 0000 for good, so Maria's WhatsApp
// message fails and can be retried.
const (
	mariaPhone  = "+4915123450000"
	maxPhone    = "+4915123457777"
	familyEmail = "family@example.com"
)

// failNow dispatches a queued message as its job would; the sandbox fails
// it for good (its number ends in 0000), which also plans its fallback.
func (c *consoleBundle) failNow(m *app.Message) {
	c.T.Helper()
	_, err := c.Services.Dispatcher.Dispatch(c.Ctx, app.DispatchJob{TenantID: c.Tenant.ID, MessageID: m.ID, Channel: m.Channel}, 1, 5,
		func(context.Context, app.Tx) error { return nil })
	require.NoError(c.T, err)
	require.Equal(c.T, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'FAILED'`, m.ID))
}

// messageTo returns the event's message to an address.
func messageTo(t *testing.T, ms []*app.Message, addr string) *app.Message {
	t.Helper()
	for _, m := range ms {
		if m.ToAddress == addr {
			return m
		}
	}
	t.Fatalf("no message to %s in %s", addr, webtest.DescribeMessages(ms))
	return nil
}

// retryAsSupport retries a failed message from the console and returns the
// retry's id.
func (c *consoleBundle) retryAsSupport(id uuid.UUID) uuid.UUID {
	c.T.Helper()
	s := c.signIn(asSupport)
	s.page("/t/acme/messages/" + id.String())
	resp := s.post("/t/acme/messages/"+id.String()+"/retry", nil)
	require.Equal(c.T, http.StatusSeeOther, resp.StatusCode)
	next := strings.TrimPrefix(resp.Header.Get("Location"), "/t/acme/messages/")
	retryID, err := uuid.Parse(next)
	require.NoError(c.T, err, "retry redirected to %s", resp.Header.Get("Location"))
	return retryID
}

func (c *consoleBundle) toAddress(id uuid.UUID) string {
	c.T.Helper()
	var addr string
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(c.Ctx, `SELECT to_address FROM messages WHERE id = $1`, id).Scan(&addr)
	}))
	return addr
}

func TestContacts_SharedEmailFamily(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	first := webtest.Notification("evt-family", "BK-FAM")
	first["channels"] = []string{"WHATSAPP"}
	first["recipients"] = []map[string]any{
		{"name": "Maria Huber", "phone": mariaPhone, "email": familyEmail},
		{"name": "Max Huber", "phone": maxPhone, "email": familyEmail},
	}
	ms := c.routeNow(c.Tenant.ID, c.Submit(first))
	require.Len(t, ms, 2)
	maria, max := messageTo(t, ms, mariaPhone), messageTo(t, ms, maxPhone)
	require.NotEqual(t, *maria.ContactID, *max.ContactID, "two phones are two people, whatever e-mail they share")
	require.Equal(t, 2, c.Count(`SELECT count(*) FROM contacts WHERE tenant_id = $1 AND email = $2`, c.Tenant.ID, familyEmail))

	// A later booking for Max alone changes nothing about Maria.
	second := webtest.Notification("evt-max", "BK-MAX")
	second["channels"] = []string{"WHATSAPP"}
	second["recipients"] = []map[string]any{{"name": "Max Huber", "phone": maxPhone, "email": familyEmail}}
	later := c.routeNow(c.Tenant.ID, c.Submit(second))
	require.Equal(t, *max.ContactID, *later[0].ContactID)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM contacts WHERE id = $1 AND phone = $2`, *maria.ContactID, mariaPhone))

	c.failNow(maria)

	// The retry goes to Maria's phone.
	retry := c.retryAsSupport(maria.ID)
	require.Equal(t, mariaPhone, c.toAddress(retry))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND contact_id = $2 AND recipient_index = 0`, retry, *maria.ContactID))

	// A resend goes to each one's own phone.
	var res struct{ Messages []*app.Message }
	require.Equal(t, http.StatusAccepted, c.Request(http.MethodPost, "/api/v1/bookings/BK-FAM/resend", map[string]any{"channel": "SMS"}, &res))
	require.Len(t, res.Messages, 2)
	require.Equal(t, *maria.ContactID, *messageTo(t, res.Messages, mariaPhone).ContactID)
	require.Equal(t, *max.ContactID, *messageTo(t, res.Messages, maxPhone).ContactID)
}

func TestContacts_ProfileGetsNewPhone(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	const oldPhone, newPhone = "+4915123450000", "+4915123458888"

	first := webtest.WithRecipient("evt-p1", "BK-P1", map[string]any{"name": "Paula", "phone": oldPhone, "passenger_profile_id": "pax-7"}, "WHATSAPP")
	old := webtest.OnlyMessage(t, c.routeNow(c.Tenant.ID, c.Submit(first)))
	require.Equal(t, oldPhone, old.ToAddress)

	second := webtest.WithRecipient("evt-p2", "BK-P2", map[string]any{"name": "Paula", "phone": newPhone, "passenger_profile_id": "pax-7"}, "WHATSAPP")
	secondID := c.Submit(second)
	later := webtest.OnlyMessage(t, c.routeNow(c.Tenant.ID, secondID))
	require.Equal(t, *old.ContactID, *later.ContactID, "the profile id is the person")
	require.Equal(t, newPhone, later.ToAddress)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM contacts WHERE id = $1 AND phone = $2`, *old.ContactID, newPhone))

	c.failNow(old)
	retry := c.retryAsSupport(old.ID)
	require.Equal(t, oldPhone, c.toAddress(retry), "a retry goes where the message went, not to the contact's new number")

	require.Equal(t, 1, c.Count(`SELECT count(*) FROM contact_changes WHERE contact_id = $1 AND field = 'phone'
		AND old_value = $2 AND new_value = $3 AND source = 'event' AND event_id = $4`, *old.ContactID, oldPhone, newPhone, secondID))
}

func TestContacts_FallbackUsesEventAddress(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	first := webtest.WithRecipient("evt-f1", "BK-F1", map[string]any{"name": "Fritz", "phone": "+4915123450000", "email": "fritz@example.com", "passenger_profile_id": "pax-9"})
	first["fallback_chain"] = []string{"WHATSAPP", "EMAIL"}
	wa := webtest.OnlyMessage(t, c.routeNow(c.Tenant.ID, c.Submit(first)))
	require.Equal(t, app.WhatsApp, wa.Channel)

	// Another event gives the profile other addresses before the first fails.
	second := webtest.WithRecipient("evt-f2", "BK-F2", map[string]any{"name": "Fritz", "phone": "+4915123456666", "email": "fritz.new@example.com", "passenger_profile_id": "pax-9"}, "EMAIL")
	c.routeNow(c.Tenant.ID, c.Submit(second))

	c.failNow(wa)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE fallback_of = $1 AND channel = 'EMAIL' AND to_address = 'fritz@example.com'`, wa.ID),
		"the fallback goes to the e-mail address the event gave")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE fallback_of = $1 AND recipient_index = 0`, wa.ID))
}

func TestContacts_ConcurrentNewContact(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	const phone, email = "+4915123454444", "new@example.com"

	// Several events about one new person arrive at once, each knowing a
	// different part of who they are.
	recipients := []map[string]any{
		{"name": "Nina", "phone": phone},
		{"name": "Nina", "phone": phone, "email": email},
		{"name": "Nina", "email": email, "phone": phone},
		{"name": "Nina", "phone": phone},
	}
	ids := make([]uuid.UUID, len(recipients))
	for i, rc := range recipients {
		ids[i] = c.Submit(webtest.WithRecipient("evt-c"+string(rune('a'+i)), "BK-C"+string(rune('a'+i)), rc, "WHATSAPP"))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Services.Router.Route(c.Ctx, app.RouteJob{TenantID: c.Tenant.ID, EventID: id, Version: 1})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM contacts WHERE tenant_id = $1`, c.Tenant.ID), "one person, one contact")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM contacts WHERE tenant_id = $1 AND phone = $2 AND email = $3`, c.Tenant.ID, phone, email),
		"no identifier lost")
	require.Equal(t, 4, c.Count(`SELECT count(DISTINCT event_id) FROM messages m JOIN contacts k ON k.id = m.contact_id WHERE k.phone = $1`, phone))
}
