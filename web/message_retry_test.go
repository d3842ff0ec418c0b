package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestMessages_RetryLimit retries a message whose address fails every time
// (the sandbox refuses numbers ending in 0000), through the API and the
// console alike: a chain of retries stops at three unless a person forces
// one more, as seed 003 asks.
func TestMessages_RetryLimit(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})

	body := webtest.Notification("evt-retry-limit", "BK-RL")
	body["recipients"] = []map[string]any{{"name": "Rita Reject", "phone": "+4915123450000", "email": "rita@example.com"}}
	id := c.Submit(body)
	ms := c.WaitMessages(id, "WhatsApp failed, e-mail done", func(ms []*app.Message) bool {
		wa, em := byChannel(ms, app.WhatsApp), byChannel(ms, app.Email)
		return wa != nil && em != nil && wa.Status == app.MessageFailed && em.Status != app.MessageQueued
	})
	failed, email := byChannel(ms, app.WhatsApp), byChannel(ms, app.Email)
	require.Zero(t, failed.RetryCount)

	type retried struct {
		Message    app.Message `json:"message"`
		RetryCount int         `json:"retry_count"`
	}
	// retry asks the API for a retry of id and, on 201, waits for the new
	// message to fail as the address does.
	retry := func(t *testing.T, id uuid.UUID, body any) (int, retried, apiErrorBody) {
		t.Helper()
		var out struct {
			retried
			apiErrorBody
		}
		status := c.Request(http.MethodPost, "/api/v1/messages/"+id.String()+"/retry", body, &out)
		if status == http.StatusCreated {
			c.WaitUntil("the retry fails as the address does", func() bool {
				return c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'FAILED'`, out.Message.ID) == 1
			})
		}
		return status, out.retried, out.apiErrorBody
	}

	// Three retries in a chain, each of the one before.
	chain := []uuid.UUID{failed.ID}
	for n := 1; n <= app.MaxRetries; n++ {
		status, out, _ := retry(t, chain[len(chain)-1], nil)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, n, out.RetryCount)
		require.Equal(t, n, out.Message.RetryCount)
		require.Equal(t, app.MessageQueued, out.Message.Status)
		chain = append(chain, out.Message.ID)
	}
	last := chain[len(chain)-1]

	t.Run("OnceEach", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM messages`)
		status, _, res := retry(t, failed.ID, map[string]any{"force": true})
		require.Equal(t, http.StatusConflict, status)
		require.Equal(t, "already_retried", res.Error.Code)
		require.Contains(t, res.Error.Message, chain[1].String())
		require.Equal(t, before, c.Count(`SELECT count(*) FROM messages`))
	})

	t.Run("OnlyFailed", func(t *testing.T) {
		status, _, res := retry(t, email.ID, nil)
		require.Equal(t, http.StatusConflict, status)
		require.Equal(t, "not_failed", res.Error.Code)
	})

	t.Run("BadBodiesStoreNothing", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM messages`)
		for name, tc := range map[string]struct {
			body   any
			status int
			code   string
		}{
			"WrongType":    {map[string]any{"force": "yes"}, http.StatusBadRequest, "malformed_json"},
			"UnknownField": {map[string]any{"forever": true}, http.StatusUnprocessableEntity, "unknown_field"},
		} {
			t.Run(name, func(t *testing.T) {
				status, _, res := retry(t, last, tc.body)
				require.Equal(t, tc.status, status)
				require.Equal(t, tc.code, res.Error.Code)
			})
		}
		require.Equal(t, before, c.Count(`SELECT count(*) FROM messages`))
	})

	t.Run("AnotherTenantsMessage", func(t *testing.T) {
		_, key, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.other.ID, "globex system", app.Scopes...)
		require.NoError(t, err)
		var res apiErrorBody
		require.Equal(t, http.StatusNotFound, c.RequestWithKey(key, http.MethodPost, "/api/v1/messages/"+last.String()+"/retry", nil, &res))
		require.Zero(t, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1`, "retry:"+last.String()))
	})

	// The fourth is refused without force, on the API and in the console.
	status, _, res := retry(t, last, map[string]any{"force": false})
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "max_retries", res.Error.Code)
	require.Contains(t, res.Error.Message, "retried 3 times")
	require.Zero(t, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1`, "retry:"+last.String()))

	support := c.signIn(asSupport)
	doc := support.page("/t/acme/messages/" + last.String())
	form := doc.Find(`form[action="/t/acme/messages/` + last.String() + `/retry"]`)
	require.Equal(t, 1, form.Length())
	require.Equal(t, "1", form.Find(`input[name="force"]`).AttrOr("value", ""), "the button forces, behind a question")
	require.Contains(t, form.AttrOr("data-confirm", ""), "retried 3 times already")
	require.Contains(t, text(form), "Retry once more")

	resp := support.post("/t/acme/messages/"+last.String()+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, text(support.follow(resp).Find(".flash-error")), "force the retry")
	require.Zero(t, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1`, "retry:"+last.String()))

	support.page("/t/acme/messages/" + last.String())
	resp = support.post("/t/acme/messages/"+last.String()+"/retry", url.Values{"force": {"1"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1 AND retry_count = 4`, "retry:"+last.String()))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'message.retry' AND target_id = $1
		AND metadata->>'forced' = 'true' AND metadata->>'retry_count' = '4'`, last.String()))
}
