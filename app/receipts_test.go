package app_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

func TestReceipts_Apply(t *testing.T) {
	t.Parallel()

	t.Run("DeliveredThenRead", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		deliveredAt, readAt := testStart.Add(time.Minute), testStart.Add(time.Hour)

		outcome, err := b.apply(b.ctx, b.via(t, tn), receipt(m, provider.StatusDelivered, deliveredAt))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageDelivered, got.Status)
		require.True(t, got.DeliveredAt.Equal(deliveredAt), "delivered at the receipt's time")

		outcome, err = b.apply(b.ctx, b.via(t, tn), receipt(m, provider.StatusRead, readAt))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		got = b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageRead, got.Status)
		require.True(t, got.ReadAt.Equal(readAt))
		require.True(t, got.DeliveredAt.Equal(deliveredAt), "reading keeps the delivery time")

		tl := b.timeline(t, tn.ID, m.ID)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageDelivered, app.MessageRead}, statuses(tl))
		hooks := fromSource(tl, app.SourceWebhook)
		require.Len(t, hooks, 2)
		require.Equal(t, provider.StatusRead, hooks[1].Detail["receipt"])
		require.True(t, hooks[1].At.Equal(readAt))
	})

	t.Run("MetaStatusWebhook", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		// Meta's sample names our message: delivered, sent (late), read, and
		// a failure of a message Herald does not know.
		body := strings.ReplaceAll(string(readTestdata(t, "status_webhook.json")), testdataWamid, *m.ExternalMessageID)
		hook, err := meta.ParseWebhook([]byte(body))
		require.NoError(t, err)
		require.Len(t, hook.Receipts, 4)

		var outcomes []string
		for _, r := range hook.Receipts {
			outcome, err := b.apply(b.ctx, b.via(t, tn), r)
			require.NoError(t, err)
			outcomes = append(outcomes, outcome)
		}
		require.Equal(t, []string{app.ReceiptApplied, app.ReceiptRecorded, app.ReceiptApplied, app.ReceiptPending}, outcomes)
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageRead, got.Status)
		require.True(t, got.ReadAt.Equal(time.Unix(1750857512, 0)))
		hooks := fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook)
		require.Len(t, hooks, 3, "every status of the message is on its timeline")
		require.Equal(t, "no status change: delivered does not move to sent", hooks[1].Detail["note"])
		require.Contains(t, hooks[0].Detail["raw"], `"status":"delivered"`)

		// Meta delivers at least once: the same post again changes nothing.
		for _, r := range hook.Receipts[:3] {
			outcome, err := b.apply(b.ctx, b.via(t, tn), r)
			require.NoError(t, err)
			require.Equal(t, app.ReceiptDuplicate, outcome)
		}
		require.Len(t, fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook), 3)
	})

	t.Run("SameReceiptTwice", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		r := receipt(m, provider.StatusDelivered, testStart.Add(time.Minute))

		outcome, err := b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		delivered := b.message(t, tn.ID, m.ID)
		outcome, err = b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptDuplicate, outcome)

		require.Equal(t, delivered, b.message(t, tn.ID, m.ID))
		require.Len(t, fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook), 1, "the timeline has the receipt once")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE provider = 'meta' AND receipt_id = $1`, r.ReceiptID))
	})

	t.Run("OutOfOrderNeverMovesBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		readAt := testStart.Add(2 * time.Minute)

		outcome, err := b.apply(b.ctx, b.via(t, tn), receipt(m, provider.StatusRead, readAt))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome, "read may come before delivered")
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageRead, got.Status)
		require.True(t, got.DeliveredAt.Equal(readAt), "a read message was delivered, at the latest when read")

		for _, status := range []string{provider.StatusDelivered, provider.StatusSent, provider.StatusFailed} {
			outcome, err := b.apply(b.ctx, b.via(t, tn), receipt(m, status, testStart.Add(time.Minute)))
			require.NoError(t, err)
			require.Equal(t, app.ReceiptRecorded, outcome, "a late %s is recorded only", status)
		}
		got = b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageRead, got.Status)
		require.True(t, got.DeliveredAt.Equal(testStart.Add(time.Minute)), "the late delivered keeps its own time")
		require.Nil(t, got.FailedAt)
		require.Nil(t, got.ErrorCode)

		tl := b.timeline(t, tn.ID, m.ID)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageRead}, statuses(tl))
		hooks := fromSource(tl, app.SourceWebhook)
		require.Len(t, hooks, 4)
		require.Equal(t, "no status change: read does not move to delivered", hooks[1].Detail["note"])
		require.Nil(t, hooks[1].ToStatus)
	})

	t.Run("UnknownProviderIDKeptPending", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		r := provider.Receipt{Provider: meta.Name, ExternalID: "wamid.nobody", Status: provider.StatusDelivered}

		outcome, err := b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptPending, outcome)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE provider = 'meta' AND external_id = 'wamid.nobody'
			AND available_at = 'infinity' AND route_tenant_id = $1`, tn.ID),
			"kept in the inbox, with the route it came through, until its message is known")
		require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_receipts`), "nothing is applied or stored as applied")

		// A replay while it waits waits too (the send applies the first,
		// and the second is then a duplicate).
		outcome, err = b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptPending, outcome)
		require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_receipts`))

		// Messages are matched by provider and id: another provider's
		// receipt with a Meta id names nothing.
		outcome, err = b.apply(b.ctx, app.Internal, provider.Receipt{Provider: "sandbox", ExternalID: *m.ExternalMessageID, Status: provider.StatusRead})
		require.NoError(t, err)
		require.Equal(t, app.ReceiptPending, outcome)
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, m.ID).Status)
	})

	t.Run("ReceiptBeforeSendAppliedAtSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// Meta's statuses can overtake the commit of the send they are
		// about, and each other: delivered is posted before sent.
		early := func(status string, at time.Time) provider.Receipt {
			return provider.Receipt{Provider: meta.Name, ExternalID: fakeWamid(1), ReceiptID: fakeWamid(1) + ":" + status,
				Status: status, At: at, AccountRef: metaPhoneNumberID}
		}
		delivered, sent := early(provider.StatusDelivered, testStart.Add(2*time.Second)), early(provider.StatusSent, testStart.Add(time.Second))
		for _, r := range []provider.Receipt{delivered, sent} {
			outcome, err := b.apply(b.ctx, b.via(t, tn), r)
			require.NoError(t, err)
			require.Equal(t, app.ReceiptPending, outcome)
		}

		// The webhook answered 200, so Meta does not send them again: the
		// send wakes them, and the applier's next round applies them, in
		// their own order.
		b.sendOK(t, m)
		require.Equal(t, map[string]int{app.ReceiptRecorded: 1, app.ReceiptApplied: 1}, outcomes(b.drain(t)))
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageDelivered, got.Status)
		require.True(t, got.DeliveredAt.Equal(delivered.At))
		hooks := fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook)
		require.Len(t, hooks, 2)
		require.Equal(t, provider.StatusSent, hooks[0].Detail["receipt"], "applied in timestamp order")
		require.Equal(t, provider.StatusDelivered, hooks[1].Detail["receipt"])
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE receipt_id LIKE $1 AND outcome = 'matched'
			AND tenant_id = $2 AND message_id = $3`, fakeWamid(1)+":%", tn.ID, m.ID))

		// Now a replay is a duplicate.
		outcome, err := b.apply(b.ctx, b.via(t, tn), delivered)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptDuplicate, outcome)
	})

	t.Run("StatusesPostedBeforeSendAnswers", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		web := b.svc.Web("test").App()
		// The fake Graph API posts the statuses of each message to the
		// tenant's webhook before it answers the send, as Meta does.
		var mu sync.Mutex
		var answers []string
		b.meta.before = func() {
			mu.Lock()
			defer mu.Unlock()
			n := len(answers) + 1
			for _, status := range []string{"delivered", "sent"} {
				body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{
					"messaging_product":"whatsapp","metadata":{"phone_number_id":"` + metaPhoneNumberID + `"},"statuses":[{"id":"` + fakeWamid(n) +
					`","status":"` + status + `","timestamp":"` + strconv.FormatInt(testStart.Unix()+int64(len(status)), 10) + `","recipient_id":"4915112345678"}]}}]}]}`)
				req := httptest.NewRequest(http.MethodPost, "/webhooks/meta/acme", bytes.NewReader(body))
				req.Header.Set(meta.SignatureHeader, signMeta("app-secret-acme", body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := web.Test(req, -1)
				if err != nil {
					answers = append(answers, err.Error())
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				answers = append(answers, string(raw))
				// The applier runs before the send answers: the message
				// is not known yet, so the status is kept pending.
				b.drain(t)
			}
		}
		m := b.sendOK(t, b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP")))
		mu.Lock()
		require.Equal(t, []string{`{"outcomes":{"accepted":1}}`, `{"outcomes":{"accepted":1}}`}, answers)
		mu.Unlock()
		// The record of the send woke them; the applier's next round.
		b.drain(t)
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageDelivered}, statuses(b.timeline(t, tn.ID, m.ID)))
	})

	t.Run("ReceiptRacingSendCommitNeverLost", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		via := b.via(t, tn)
		// Each send's status is applied from another goroutine while the
		// send is being recorded: whichever commits first, the receipt is
		// applied exactly once.
		const n = 6
		results := make(chan error, n)
		var sends int
		b.meta.before = func() {
			sends++
			wamid := fakeWamid(sends)
			go func() {
				err := b.svc.Receipts.Accept(b.ctx, app.InboxReceipt{Via: via, Receipt: provider.Receipt{Provider: meta.Name, ExternalID: wamid,
					ReceiptID: wamid + ":delivered", Status: provider.StatusDelivered, At: testStart.Add(time.Second)}})
				if err == nil {
					_, err = b.applyInbox(b.ctx)
				}
				results <- err
			}()
		}
		var ms []*app.Message
		for i := range n {
			ms = append(ms, b.sendOK(t, b.routeOne(t, tn, booking(fmt.Sprintf("evt-%d", i), fmt.Sprintf("BK-%d", i), anna, "WHATSAPP"))))
		}
		for range n {
			require.NoError(t, <-results)
		}
		// Whatever a round parked while its send was being recorded, the
		// record woke: the next round applies it.
		b.drain(t)
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox`), "no receipt left waiting")
		for _, m := range ms {
			require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status)
			require.Len(t, fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook), 1)
		}
		require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE outcome <> 'matched'`))
	})

	t.Run("PendingReceiptOfOtherAccountNotAppliedAtSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, globex := b.tenant(t, "acme"), b.tenant(t, "globex")
		b.useMeta(t, acme, nil)
		b.useMeta(t, globex, nil)
		m := b.routeOne(t, acme, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// Globex guesses the id of Acme's next message and posts a failure
		// for it through its own webhook before Acme sends.
		forged := provider.Receipt{Provider: meta.Name, ExternalID: fakeWamid(1), ReceiptID: fakeWamid(1) + ":failed",
			Status: provider.StatusFailed, Code: "131026", At: testStart.Add(time.Second)}
		outcome, err := b.apply(b.ctx, b.via(t, globex), forged)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptPending, outcome)

		b.sendOK(t, m)
		require.Equal(t, map[string]int{app.ReceiptForeign: 1}, outcomes(b.drain(t)),
			"once the message is known, the receipt is known to name a message it may not touch")
		require.Equal(t, app.MessageSent, b.message(t, acme.ID, m.ID).Status)
		require.Empty(t, fromSource(b.timeline(t, acme.ID, m.ID), app.SourceWebhook))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign' AND tenant_id = $1`, globex.ID),
			"kept as Globex's, under a key of its own")
		// Acme's genuine receipt with the same id still applies.
		forged.Status, forged.Code = provider.StatusDelivered, ""
		outcome, err = b.apply(b.ctx, b.via(t, acme), forged)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
	})

	t.Run("PendingOfSharedRouteAppliedAtSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, globex := b.tenant(t, "acme"), b.tenant(t, "globex")
		a, g := b.useMeta(t, acme, nil), b.useMeta(t, globex, nil)
		m := b.routeOne(t, acme, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// A route tenants share (as SES's and SNS's are) gives the early
		// receipt no tenant: it waits in the inbox, and once Acme's send
		// names its id it is applied, since it came through an account of
		// Acme's.
		shared := app.Via{Accounts: []uuid.UUID{g.ID, a.ID}, Route: "shared"}
		r := provider.Receipt{Provider: meta.Name, ExternalID: fakeWamid(1), ReceiptID: "shared-1",
			Status: provider.StatusDelivered, At: testStart.Add(time.Second)}
		outcome, err := b.apply(b.ctx, shared, r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptPending, outcome)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE external_id = $1 AND route_tenant_id IS NULL`, fakeWamid(1)))
		var seen int
		require.NoError(t, b.svc.Store.InTenant(b.ctx, globex.ID, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM webhook_receipts`).Scan(&seen)
		}))
		require.Zero(t, seen, "no tenant's receipts hold it while it waits")

		b.sendOK(t, m)
		require.Equal(t, map[string]int{app.ReceiptApplied: 1}, outcomes(b.drain(t)))
		require.Equal(t, app.MessageDelivered, b.message(t, acme.ID, m.ID).Status)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE receipt_id = 'shared-1' AND tenant_id = $1 AND outcome = 'matched'`, acme.ID))
		require.NoError(t, b.svc.Store.InTenant(b.ctx, globex.ID, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM webhook_receipts`).Scan(&seen)
		}))
		require.Zero(t, seen, "once applied it is Acme's alone")
	})

	t.Run("PendingOfAnotherAccountOfTheTenantIsForeignAtSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		sms := b.activeAccount(t, tn.ID, app.SMS)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// Came through a shared route, for the tenant's SMS account only,
		// yet names the id its WhatsApp message will get.
		r := provider.Receipt{Provider: meta.Name, ExternalID: fakeWamid(1), ReceiptID: "shared-1",
			Status: provider.StatusFailed, At: testStart.Add(time.Second)}
		outcome, err := b.apply(b.ctx, app.Via{Accounts: []uuid.UUID{sms.ID}, Route: "shared"}, r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptPending, outcome)

		sent := b.sendOK(t, m)
		require.Equal(t, map[string]int{app.ReceiptForeign: 1}, outcomes(b.drain(t)))
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, sent.ID).Status, "not applied, and the send is recorded")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign'
			AND receipt_id = 'foreign:shared:shared-1' AND tenant_id IS NULL`),
			"kept under the route it came through, which is no tenant's")
	})

	t.Run("BrokenPendingReceiptDoesNotUndoTheSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// A parked receipt of the send's id that cannot be read back.
		require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `INSERT INTO receipt_inbox (provider, receipt, available_at)
				VALUES ('meta', jsonb_build_object('ExternalID', $1::text, 'At', 42), 'infinity')`, fakeWamid(1))
			return err
		}))

		sent := b.sendOK(t, m)
		require.Equal(t, app.MessageSent, sent.Status, "the send is recorded all the same")
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp))
		require.Empty(t, b.drain(t))
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, m.ID).Status)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE last_error IS NOT NULL AND available_at > $1`, testStart.AddDate(1, 0, 0)),
			"woken by the send, then set aside with its error for an operator")
	})

	t.Run("ConcurrentEarlyReplaysKeptAndAppliedOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		via := b.via(t, tn)
		r := provider.Receipt{Provider: meta.Name, ExternalID: fakeWamid(1), ReceiptID: fakeWamid(1) + ":delivered",
			Status: provider.StatusDelivered, At: testStart.Add(time.Second)}

		const n = 8
		rs := make([]provider.Receipt, n)
		for i := range rs {
			rs[i] = r
		}
		require.Equal(t, map[string]int{app.ReceiptPending: n}, b.applyConcurrently(t, via, rs...), "each waits for the send")

		b.sendOK(t, m)
		require.Equal(t, map[string]int{app.ReceiptApplied: 1, app.ReceiptDuplicate: n - 1}, outcomes(b.drain(t)))
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status)
		require.Len(t, fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook), 1)
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox`))
	})

	t.Run("PendingReceiptsExpire", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		old := provider.Receipt{Provider: meta.Name, ExternalID: "wamid.never", Status: provider.StatusDelivered}
		_, err := b.apply(b.ctx, b.via(t, tn), old)
		require.NoError(t, err)
		b.clock.Advance(23 * time.Hour)
		young := provider.Receipt{Provider: meta.Name, ExternalID: "wamid.later", Status: provider.StatusDelivered}
		_, err = b.apply(b.ctx, b.via(t, tn), young)
		require.NoError(t, err)

		b.clock.Advance(time.Hour + time.Second)
		n, err := b.svc.Maintenance.PrunePending(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "only the receipt older than the horizon")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE available_at = 'infinity' AND external_id = 'wamid.later'`))
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE external_id = 'wamid.never'`))
	})

	t.Run("OtherTenantsMessageUntouched", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, globex := b.tenant(t, "acme"), b.tenant(t, "globex")
		ma := b.sentViaMeta(t, acme, "BK-1")
		mg := b.sentViaMeta(t, globex, "BK-1")
		globexBefore := b.timeline(t, globex.ID, mg.ID)

		outcome, err := b.apply(b.ctx, b.via(t, acme), receipt(ma, provider.StatusDelivered, testStart.Add(time.Minute)))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		require.Equal(t, app.MessageDelivered, b.message(t, acme.ID, ma.ID).Status)
		require.Equal(t, app.MessageSent, b.message(t, globex.ID, mg.ID).Status)
		require.Equal(t, globexBefore, b.timeline(t, globex.ID, mg.ID))

		// The receipt is stored as the message's tenant's; the other
		// tenant's scope does not see it.
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE tenant_id = $1 AND message_id = $2`, acme.ID, ma.ID))
		var seen int
		require.NoError(t, b.svc.Store.InTenant(b.ctx, globex.ID, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM webhook_receipts`).Scan(&seen)
		}))
		require.Zero(t, seen)
	})

	t.Run("ForeignReceiptThroughOtherTenantsWebhook", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, globex := b.tenant(t, "acme"), b.tenant(t, "globex")
		ma := b.sentViaMeta(t, acme, "BK-1")
		b.useMeta(t, globex, nil)

		// Globex's own app secret signs a status naming Acme's message.
		body := strings.ReplaceAll(string(readTestdata(t, "status_webhook.json")), testdataWamid, *ma.ExternalMessageID)
		mac := hmac.New(sha256.New, []byte("app-secret-globex"))
		mac.Write([]byte(body))
		req := httptest.NewRequest(http.MethodPost, "/webhooks/meta/globex", bytes.NewReader([]byte(body)))
		req.Header.Set(meta.SignatureHeader, "sha256="+hex.EncodeToString(mac.Sum(nil)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := b.svc.Web("test").App().Test(req, -1)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b.drain(t)

		require.Equal(t, app.MessageSent, b.message(t, acme.ID, ma.ID).Status, "another tenant's webhook cannot move Acme's message")
		require.Empty(t, fromSource(b.timeline(t, acme.ID, ma.ID), app.SourceWebhook))
		// Kept as Globex's, under a key of its own, so that Acme's genuine
		// receipts with the same ids still apply.
		require.Equal(t, 3, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign' AND tenant_id = $1 AND message_id IS NULL`, globex.ID))
		hook, err := meta.ParseWebhook([]byte(body))
		require.NoError(t, err)
		outcome, err := b.apply(b.ctx, b.via(t, acme), hook.Receipts[0])
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		require.Equal(t, app.MessageDelivered, b.message(t, acme.ID, ma.ID).Status)
	})

	t.Run("FailedReceipt", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		// Meta's failed status from the sample, for our message.
		hook, err := meta.ParseWebhook(readTestdata(t, "status_webhook.json"))
		require.NoError(t, err)
		r := hook.Receipts[3]
		require.Equal(t, provider.StatusFailed, r.Status)
		r.ExternalID, r.ReceiptID = *m.ExternalMessageID, *m.ExternalMessageID+":failed:1750857401"

		outcome, err := b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, got.Status)
		require.Equal(t, "131026", *got.ErrorCode)
		require.Equal(t, "meta_131026", *got.FailedReason, "a code, like the synchronous path's")
		require.Equal(t, "Message undeliverable", fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook)[0].Detail["reason"],
			"the provider's text is on the timeline")
		require.True(t, got.FailedAt.Equal(time.Unix(1750857401, 0)))
		require.NotNil(t, got.SentAt, "FAILED after SENT keeps when it was sent")
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageFailed}, statuses(b.timeline(t, tn.ID, m.ID)))

		// Nothing moves a failed message on.
		outcome, err = b.apply(b.ctx, b.via(t, tn), receipt(m, provider.StatusRead, testStart.Add(time.Hour)))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRecorded, outcome)
		require.Equal(t, app.MessageFailed, b.message(t, tn.ID, m.ID).Status)
	})

	t.Run("FailedReceiptFallsBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		wa = b.sendOK(t, wa)

		r := receipt(wa, provider.StatusFailed, testStart.Add(time.Minute))
		r.Code, r.Reason = "131026", "Message undeliverable"
		outcome, err := b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		sms := fallbackOf(t, b, tn, failed)
		require.Equal(t, app.SMS, sms.Channel)
		require.Empty(t, sms.FallbackChain, "the rest of the chain rides on the new message")

		// Meta delivers at least once, and may report the failure again
		// with another timestamp: the chain moves on once.
		outcome, err = b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptDuplicate, outcome)
		again := receipt(wa, provider.StatusFailed, testStart.Add(2*time.Minute))
		again.Code = "131026"
		outcome, err = b.apply(b.ctx, b.via(t, tn), again)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRecorded, outcome)
		require.Equal(t, sms.ID, fallbackOf(t, b, tn, failed).ID)
		require.Len(t, b.messagesOf(t, tn.ID, *wa.EventID), 2)

		// The fallback is sent like any message.
		require.Equal(t, app.MessageSent, b.sendOK(t, sms).Status)
	})

	t.Run("FailedReceiptReplayedConcurrentlyFallsBackOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		wa := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS", "EMAIL")))
		via := b.via(t, tn)

		// Eight posts at once: the same failure replayed, and failures
		// with other timestamps.
		const n = 8
		rs := make([]provider.Receipt, n)
		for i := range rs {
			rs[i] = receipt(wa, provider.StatusFailed, testStart.Add(time.Duration(1+i%2)*time.Minute))
			rs[i].Code = "131026"
		}
		require.Equal(t, map[string]int{app.ReceiptApplied: 1, app.ReceiptRecorded: 1, app.ReceiptDuplicate: n - 2},
			b.applyConcurrently(t, via, rs...))
		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		sms := fallbackOf(t, b, tn, failed)
		require.Equal(t, []string{"EMAIL"}, []string(sms.FallbackChain))
		require.Len(t, b.messagesOf(t, tn.ID, *wa.EventID), 2, "one fallback message")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'dispatch'
			AND args->>'message_id' <> $1`, wa.ID.String()), "and one job for it")
	})

	t.Run("EarlyFailureFallsBackAtSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		// Meta reports the failure before its answer to the send commits.
		outcome, err := b.apply(b.ctx, b.via(t, tn), provider.Receipt{Provider: meta.Name, ExternalID: fakeWamid(1),
			ReceiptID: fakeWamid(1) + ":failed", Status: provider.StatusFailed, Code: "131026", At: testStart.Add(time.Second)})
		require.NoError(t, err)
		require.Equal(t, app.ReceiptPending, outcome)

		b.sendOK(t, wa)
		require.Equal(t, map[string]int{app.ReceiptApplied: 1}, outcomes(b.drain(t)))
		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.NotNil(t, failed.SentAt)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		fallbackOf(t, b, tn, failed)
	})

	t.Run("ComplaintDoesNotFallBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "EMAIL", "SMS")))
		outcome, err := b.apply(b.ctx, app.Internal, provider.Receipt{Provider: "sandbox", ExternalID: *m.ExternalMessageID,
			ReceiptID: "complaint-1", Status: provider.StatusFailed, Code: "complaint", Complaint: true, At: testStart.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1, "the passenger got the message and complained: no other channel")
	})

	t.Run("ComplaintBlocksEmailAddress", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sendOK(t, b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "EMAIL")))
		r := provider.Receipt{Provider: "sandbox", ExternalID: *m.ExternalMessageID, ReceiptID: "ses-complaint-1",
			Status: provider.StatusFailed, Code: "complaint", Complaint: true, At: testStart.Add(time.Hour)}

		outcome, err := b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		require.Equal(t, app.MessageFailed, b.message(t, tn.ID, m.ID).Status)
		var c *app.Contact
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			c, err = tx.ContactByID(b.ctx, tn.ID, *m.ContactID)
			return err
		}))
		require.NotNil(t, c.EmailComplainedAt)
		require.True(t, c.EmailComplainedAt.Equal(r.At))
		require.Empty(t, c.Address(app.Email), "the address is not used for e-mail again")
	})

	t.Run("InfoOnTimelineOnly", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		b.clock.Advance(time.Minute)

		outcome, err := b.apply(b.ctx, b.via(t, tn), provider.Receipt{Provider: meta.Name, ExternalID: *m.ExternalMessageID,
			ReceiptID: "open-1", Status: provider.StatusInfo, Code: "open"})
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRecorded, outcome)
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, m.ID).Status)
		hooks := fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook)
		require.Len(t, hooks, 1)
		require.Nil(t, hooks[0].ToStatus)
		require.Equal(t, "open", hooks[0].Detail["code"])
		require.True(t, hooks[0].At.Equal(b.clock.Now()), "a receipt without a time is stamped with the clock")

		_, err = b.apply(b.ctx, b.via(t, tn), provider.Receipt{Provider: meta.Name, ExternalID: *m.ExternalMessageID, Status: "deleted"})
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts`), "an unknown status is not stored")
	})

	t.Run("ConcurrentDuplicatesApplyOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		r := receipt(m, provider.StatusDelivered, testStart.Add(time.Minute))
		via := b.via(t, tn)

		const n = 8
		rs := make([]provider.Receipt, n)
		for i := range rs {
			rs[i] = r
		}
		require.Equal(t, map[string]int{app.ReceiptApplied: 1, app.ReceiptDuplicate: n - 1}, b.applyConcurrently(t, via, rs...))
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status)
		require.Len(t, fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook), 1)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE receipt_id = $1`, r.ReceiptID))
	})

	t.Run("ConcurrentDeliveredAndRead", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")

		// Hold the message's row so that both receipts read it as SENT and
		// then queue for it, delivered first: the interleaving of two
		// webhook posts arriving together, made certain with a lock.
		locked, release, unlocked := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			unlocked <- b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
				if _, err := tx.SQL().ExecContext(b.ctx, `SELECT 1 FROM messages WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tn.ID, m.ID); err != nil {
					return err
				}
				close(locked)
				<-release
				return nil
			})
		}()
		<-locked
		waiting := func(n int) func() bool {
			return func() bool {
				var got int
				err := b.svc.DB.SQL.QueryRowContext(b.ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got)
				return err == nil && got == n
			}
		}
		var wg sync.WaitGroup
		outcomes := make([]string, 2)
		via := b.via(t, tn)
		for i, status := range []string{provider.StatusDelivered, provider.StatusRead} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outcomes[i], _ = b.apply(b.ctx, via, receipt(m, status, testStart.Add(time.Duration(i+1)*time.Minute)))
			}()
			require.Eventually(t, waiting(i+1), dbtest.HangGuard, 10*time.Millisecond)
		}
		close(release)
		require.NoError(t, <-unlocked)
		wg.Wait()

		require.Equal(t, app.MessageRead, b.message(t, tn.ID, m.ID).Status, "read was received: outcomes %v", outcomes)
	})

	t.Run("SandboxLifecycle", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.SandboxDelay = 0 })
		tn := b.tenant(t, "acme")
		m := b.sendOK(t, b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "SMS")))

		// Both are due at once (no sandbox delay): applied in the order
		// of their own times.
		require.Equal(t, []string{app.ReceiptApplied, app.ReceiptApplied}, resultOutcomes(b.drain(t)))
		require.Equal(t, app.MessageRead, b.message(t, tn.ID, m.ID).Status)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageDelivered, app.MessageRead},
			statuses(b.timeline(t, tn.ID, m.ID)))
	})
}

func signMeta(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// via is what a receipt posted to the tenant's own webhooks came through:
// any of its channel accounts.
func (b *pipelineBundle) via(t *testing.T, tn *app.Tenant) app.Via {
	t.Helper()
	return b.viaTenant(t, tn.ID)
}

// viaTenant is via by the tenant's id.
func (b *pipelineBundle) viaTenant(t *testing.T, tenantID uuid.UUID) app.Via {
	t.Helper()
	via := app.Via{TenantID: tenantID, Route: "test:" + tenantID.String()}
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tenantID, func(tx *db.Tx) error {
		rows, err := tx.SQL().QueryContext(b.ctx, `SELECT id FROM channel_accounts WHERE tenant_id = $1`, tenantID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				return err
			}
			via.Accounts = append(via.Accounts, id)
		}
		return rows.Err()
	}))
	return via
}

// sentViaMeta gives the tenant a Meta WhatsApp account and sends one
// message through it (the fake answers with a fresh id).
func (b *pipelineBundle) sentViaMeta(t *testing.T, tn *app.Tenant, ref string) *app.Message {
	t.Helper()
	if a := b.activeAccount(t, tn.ID, app.WhatsApp); a.Provider != meta.Name {
		b.useMeta(t, tn, nil)
	}
	return b.sendOK(t, b.routeOne(t, tn, booking("evt-"+ref, ref, anna, "WHATSAPP")))
}
