package web_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// TestConsoleMessages_SendFileAgain sends the second of an SMS's two files
// again from the booking panel: one new SMS on the same number linking
// that file alone, a timeline note on the original and an audit entry;
// a second post sends nothing more, a forged CSRF token and another
// tenant's manager change nothing.
func TestConsoleMessages_SendFileAgain(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	body := webtest.Notification("evt-file-again", "BK-FA")
	body["channels"] = []string{"SMS"}
	pdf := base64.StdEncoding.EncodeToString(filePDF)
	body["attachments"] = []map[string]any{
		{"filename": "invoice.pdf", "content_type": "application/pdf", "content": pdf},
		{"filename": "ticket.pdf", "content_type": "application/pdf", "content": base64.StdEncoding.EncodeToString(append([]byte("%PDF-1.7\n"), filePDF[9:]...))},
	}
	id := c.Submit(body)
	orig := webtest.OnlyMessage(t, c.WaitMessages(id, "sent", sentOrLater))
	require.Equal(t, 2, strings.Count(orig.Body, "/f/"), orig.Body)
	var fileID uuid.UUID
	require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(c.Ctx, `SELECT id FROM attachments WHERE event_id = $1 AND filename = 'ticket.pdf'`, id).Scan(&fileID)
	}))
	action := "/t/acme/messages/" + orig.ID.String() + "/files/" + fileID.String() + "/send"

	support := c.signIn(asSupport)
	panel := support.page("/t/acme/bookings/booking/BK-FA")
	require.Equal(t, 1, panel.Find(`form[action="`+action+`"]`).Length(), "each file has its button")

	forged := support.post(action, url.Values{"csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, forged.StatusCode)
	globex := c.signIn(asOtherManager)
	globex.page("/t/globex/messages")
	other := globex.post("/t/globex/messages/"+orig.ID.String()+"/files/"+fileID.String()+"/send", nil)
	require.Equal(t, http.StatusNotFound, other.StatusCode)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE event_id = $1`, id), "nothing sent yet")

	resp := support.post(action, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	again := support.post(action, nil)
	require.Equal(t, http.StatusSeeOther, again.StatusCode)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1 AND file_id = $2 AND channel = 'SMS'
		AND to_address = $3`, "file:"+orig.ID.String()+":"+fileID.String(), fileID, orig.ToAddress), "a double post sends once")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM message_events WHERE message_id = $1 AND detail->>'file_id' = $2`, orig.ID, fileID.String()))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'message.resend_file' AND target_id = $1`, orig.ID.String()))

	ms := c.WaitMessages(id, "the file sent again", func(ms []*app.Message) bool { return len(ms) == 2 && sentOrLater(ms) })
	for _, m := range ms {
		if m.ID == orig.ID {
			continue
		}
		require.Equal(t, 1, strings.Count(m.Body, "/f/"), "only the one file is linked: %s", m.Body)
		require.NotNil(t, m.FileID)

		// Should that one fail, its retry carries the one file too.
		c.Exec(`UPDATE messages SET status = 'FAILED', failed_reason = 'sns_sms_failure', error_code = 'sms_failure', failed_at = now() WHERE id = $1`, m.ID)
		retry, err := c.Server.MessageConsole.Retry(c.Ctx, c.users[asSupport], c.Tenant.ID, m.ID, app.RetryOptions{})
		require.NoError(t, err)
		require.Equal(t, &fileID, retry.FileID)
		require.Equal(t, 1, strings.Count(retry.Body, "/f/"), "the retry links the one file: %s", retry.Body)
	}
}
