package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// WhatsApp and e-mail beside the webhook channel: a third of the events
// ask for a WhatsApp message (BOOKING_CONFIRMED, whose default WhatsApp
// text has a Meta template) to a phone number of its own, a third for an
// e-mail through SES (see email.go), the rest for a webhook message as
// before, so each experiment's faults meet both a channel that answers at
// once and two that take seconds and report their outcome later.
// Experiment e stays on the webhook channel alone: it checks the webhook
// account's rate and the webhook quota against the whole intake.

// isWhatsApp says whether event n of experiment name goes to WhatsApp.
func isWhatsApp(name string, n int) bool { return name != "e" && n%3 == 0 }

// whatsAppPhone is event n's recipient: a valid German mobile number, one
// per message, so that the Meta fake can count sends by recipient until
// Herald names the message on its sends.
func whatsAppPhone(n int) string { return fmt.Sprintf("+49151%08d", n) }

// whatsAppEvent is event n as a booking confirmation on WhatsApp. The
// recipient never wrote to the business number, so the 24-hour window is
// closed and Herald must send the approved Meta template.
func whatsAppEvent(eventID string, n int) map[string]any {
	ref := fmt.Sprintf("BK-%d", n)
	return map[string]any{
		"event_id":      eventID,
		"trigger_event": "BOOKING_CONFIRMED",
		"locale":        "en",
		"recipients":    []map[string]any{{"name": "Chaos Passenger", "phone": whatsAppPhone(n)}},
		"context": map[string]any{"passenger_name": "Chaos Passenger", "tour_name": "Chaos Coast Tour",
			"departure_date": "2027-04-12", "booking_reference": ref, "deposit_amount": "150.00 EUR"},
		"conversation_context": map[string]any{"type": "booking", "id": ref},
		"channels":             []string{"WHATSAPP"},
	}
}

// setConfirmWindow sets the tenant's confirmation window for every event,
// when the run asks for one.
func (e *experiment) setConfirmWindow(ctx context.Context) error {
	if e.cfg.ConfirmWindow == 0 {
		return nil
	}
	status, raw, err := e.call(ctx, http.MethodPut, "/api/v1/confirmation-windows", map[string]any{
		"trigger_event": "*", "seconds": int(e.cfg.ConfirmWindow / time.Second)}, nil)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("set the confirmation window: %d %v %s", status, err, raw)
	}
	return nil
}

// createMetaAccount makes the tenant's WhatsApp account point at the Meta
// fake, activates it, and tells the fake where Herald takes its statuses.
func (e *experiment) createMetaAccount(ctx context.Context) error {
	var acct struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	status, raw, err := e.call(ctx, http.MethodPost, "/api/v1/channel-accounts", map[string]any{
		"provider": "meta", "name": "chaos whatsapp",
		"config":  map[string]any{"phone_number_id": metaPhoneNumberID, "waba_id": metaWABAID},
		"secrets": map[string]any{"access_token": metaAccessToken, "app_secret": metaAppSecret},
	}, &acct)
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("create meta account: %d %v %s", status, err, raw)
	}
	if !strings.EqualFold(acct.Status, "active") {
		status, raw, err = e.call(ctx, http.MethodPost, "/api/v1/channel-accounts/"+acct.ID+"/activate", map[string]any{"replace": true}, &acct)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("activate meta account: %d %v %s", status, err, raw)
		}
	}
	// The API does not show the webhook path's token (the console shows the
	// whole URL for the tenant to paste into Meta's app settings).
	var token string
	if err := e.pool.QueryRow(ctx, `SELECT webhook_token FROM channel_accounts WHERE id = $1::uuid`, acct.ID).Scan(&token); err != nil {
		return fmt.Errorf("read the meta account's webhook token: %w", err)
	}
	e.meta.setHook("http://" + e.addr + "/webhooks/meta/a/" + token)
	e.metaAccount = acct.ID
	return nil
}

// templatesSynced says whether Herald has read the approved templates from
// the fake: until then the dispatcher would fail every WhatsApp message
// for want of one.
func (e *experiment) templatesSynced() (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	err := e.pool.QueryRow(ctx, `
		SELECT count(*) FROM meta_templates WHERE channel_account_id = $1::uuid AND status = 'APPROVED'`, e.metaAccount).Scan(&n)
	return n > 0, err
}

// metaMessageIDs maps the Meta fake's message keys (a message id, or "to:"
// and a number) to message ids.
func (e *experiment) metaMessageIDs(ctx context.Context, keys []string) (map[string]string, error) {
	return e.keyIDs(ctx, "WHATSAPP", keys)
}

// keyIDs maps a fake's message keys (a message id, or "to:" and the
// recipient's address) to the ids of the channel's messages.
func (e *experiment) keyIDs(ctx context.Context, channel string, keys []string) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	var tos []string
	for _, k := range keys {
		if to, ok := strings.CutPrefix(k, "to:"); ok {
			tos = append(tos, to)
		} else {
			out[k] = k
		}
	}
	if len(tos) == 0 {
		return out, nil
	}
	ids, err := addressIDs(ctx, e.pool, channel, tos)
	if err != nil {
		return nil, err
	}
	for _, to := range tos {
		out["to:"+to] = ids[to] // "" when no message has the address: reported as such
	}
	return out, nil
}

// whatsAppUnrecorded counts the messages Meta accepted that the database
// still holds as QUEUED: after a SIGTERM, the sends the worker left
// unrecorded. The fake finishes the dead process's calls first.
func (e *experiment) whatsAppUnrecorded(ctx context.Context) (int, error) {
	e.meta.waitCalls()
	keys := e.meta.acceptedKeys()
	ids, err := e.metaMessageIDs(ctx, keys)
	if err != nil {
		return 0, err
	}
	states, err := messageStates(ctx, e.pool, mapValues(ids))
	if err != nil {
		return 0, err
	}
	n := len(keys) - len(states) // accepted, but no such message at all
	for _, m := range states {
		if m.Status == "QUEUED" {
			n++
		}
	}
	return n, nil
}

// checkWhatsApp holds the WhatsApp messages to what Meta did: no message
// accepted twice (whatever the fault: WhatsApp has no idempotency key, a
// second send is a second message on the passenger's phone), every message
// Meta accepted sent in the database and at the status Meta reported last,
// and none sent that Meta never had. It returns the message ids given an
// injected failed status.
func (e *experiment) checkWhatsApp(ctx context.Context) (injected map[string]bool) {
	r := e.row
	keys := e.meta.acceptedKeys()
	ids, err := e.metaMessageIDs(ctx, keys)
	if err != nil {
		r.Failures = append(r.Failures, "map the Meta fake's sends to messages: "+err.Error())
		return nil
	}
	injected = map[string]bool{}
	for _, k := range e.meta.failedKeys() {
		injected[ids[k]] = true
	}
	r.Injected = len(injected)
	r.WhatsApp, r.WACut = len(keys), int(e.meta.cut.Load())

	dups := e.meta.duplicates()
	for _, d := range dups {
		r.WADup += len(d.Calls) - 1
	}
	if len(dups) > 0 {
		// Each one is listed, up to a screenful or two.
		const listed = 100
		lines := make([]string, 0, min(len(dups), listed)+1)
		for _, d := range dups[:min(len(dups), listed)] {
			lines = append(lines, fmt.Sprintf("%s (%s): %s", dash(ids[d.Key]), d.Key, d.describe(e.start)))
		}
		if len(dups) > listed {
			lines = append(lines, fmt.Sprintf("and %d more", len(dups)-listed))
		}
		r.Failures = append(r.Failures, fmt.Sprintf("%d duplicate WhatsApp sends (Meta accepted %d messages more than once; 0 allowed):\n      %s",
			r.WADup, len(dups), strings.Join(lines, "\n      ")))
	}

	behind, err := e.whatsAppBehind(ctx, ids)
	if err != nil {
		r.Failures = append(r.Failures, "read the WhatsApp messages: "+err.Error())
		return injected
	}
	if len(behind) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d WhatsApp messages are not at the status Meta reported, e.g. %s",
			len(behind), strings.Join(behind[:min(len(behind), 5)], "; ")))
	}
	sent, err := sentOn(ctx, e.pool, "WHATSAPP")
	if err != nil {
		r.Failures = append(r.Failures, "read the sent WhatsApp messages: "+err.Error())
		return injected
	}
	taken := map[string]bool{}
	for _, id := range ids {
		taken[id] = true
	}
	var phantom []string
	for _, id := range sent {
		if !taken[id] {
			phantom = append(phantom, id)
		}
	}
	if len(phantom) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d WhatsApp messages are sent in the database but Meta never accepted them, e.g. %s", len(phantom), phantom[0]))
	}
	e.logf("Meta accepted %d messages in %d calls (%d as templates, %d after Herald hung up), %d given a failed status; %d status posts, %d of them retried",
		len(keys), e.meta.accepted.Load(), e.meta.asTpl.Load(), e.meta.cut.Load(), len(injected), e.meta.posts.Load(), e.meta.retries.Load())
	return injected
}

// whatsAppBehind lists the messages Meta accepted that the database does
// not hold at the status Meta reported last for the wamid the message
// records (FAILED for a failed status, at least DELIVERED or READ
// otherwise; Herald never moves a message back), that record a wamid Meta
// never issued, or that do not exist. ids maps the fake's keys to message
// ids. A message Meta accepted twice records one of the two wamids; the
// statuses of the other name no message.
func (e *experiment) whatsAppBehind(ctx context.Context, ids map[string]string) ([]string, error) {
	want := map[string]string{"sent": "SENT", "delivered": "DELIVERED", "read": "READ", "failed": "FAILED"}
	rank := map[string]int{"QUEUED": 0, "SENT": 1, "DELIVERED": 2, "READ": 3}
	states, err := messageStates(ctx, e.pool, mapValues(ids))
	if err != nil {
		return nil, err
	}
	byID := map[string]messageState{}
	for _, m := range states {
		byID[m.ID] = m
	}
	var behind []string
	for _, k := range mapKeys(ids) {
		id := ids[k]
		m, ok := byID[id]
		if !ok {
			behind = append(behind, fmt.Sprintf("%s: Meta accepted a send no message has", k))
			continue
		}
		reported := e.meta.lastStatus(m.ExternalID)
		last := want[reported]
		switch {
		case reported == "":
			behind = append(behind, fmt.Sprintf("%s is %s with provider id %q, which Meta never issued", id, m.Status, m.ExternalID))
		case last == "FAILED" && m.Status != "FAILED", last != "FAILED" && (m.Status == "FAILED" || rank[m.Status] < rank[last]):
			behind = append(behind, fmt.Sprintf("%s is %s, Meta reported %s", id, m.Status, reported))
		}
	}
	sort.Strings(behind)
	return behind, nil
}

// statusesApplied says whether Herald has applied every status Meta
// posted and every event SES published: both fakes are idle and no
// message is behind what they reported.
func (e *experiment) statusesApplied() (bool, error) {
	if !e.meta.idle() {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids, err := e.metaMessageIDs(ctx, e.meta.acceptedKeys())
	if err != nil {
		return false, err
	}
	behind, err := e.whatsAppBehind(ctx, ids)
	if err != nil || len(behind) > 0 {
		return false, err
	}
	return e.emailEventsApplied(ctx)
}

// checkFailed fails the experiment on every FAILED message no injected
// fault explains: a failed status the Meta fake reported, in e the
// quota's overshoot, or, after a worker SIGKILL, outcome_unknown on a
// WhatsApp or e-mail message neither fake ever had (see unreached).
func (e *experiment) checkFailed(ctx context.Context, injected map[string]bool) {
	r := e.row
	failed, err := messageStates(ctx, e.pool, nil)
	if err != nil {
		r.Failures = append(r.Failures, "read the failed messages: "+err.Error())
		return
	}
	reached, err := e.reached(ctx)
	if err != nil {
		r.Failures = append(r.Failures, "map the fakes' sends to messages: "+err.Error())
		return
	}
	var unexplained, unreached []string
	for _, m := range failed {
		switch {
		case injected[m.ID] || (e.name == "e" && m.Reason == "quota_exceeded"):
			continue
		case e.workerKilled && m.Reason == "outcome_unknown" && (m.Channel == "WHATSAPP" || m.Channel == "EMAIL") && !reached[m.ID]:
			// The SIGKILL came between Herald's marker of the call and
			// the request reaching the provider: Herald cannot tell that
			// from a call the provider took, and sending again could be a
			// second message, so it waits for a confirmation that cannot
			// come and fails the message for support to resend.
			unreached = append(unreached, m.ID+" ("+m.Channel+")")
			continue
		}
		unexplained = append(unexplained, fmt.Sprintf("%s (%s): %s %s", m.ID, m.Channel, m.Reason, m.Code))
	}
	r.Unreached = len(unreached)
	if len(unreached) > 0 {
		e.logf("%d messages failed outcome_unknown that no provider ever had, the worker SIGKILLed between the marker and the request: %s",
			len(unreached), strings.Join(unreached, ", "))
	}
	r.Unexplained = len(unexplained)
	if len(unexplained) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d FAILED messages no injected fault explains:\n      %s",
			len(unexplained), strings.Join(unexplained[:min(len(unexplained), 20)], "\n      ")))
	}
}

// reached is the set of messages the Meta or the SES fake accepted a call
// for.
func (e *experiment) reached(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	wa, err := e.metaMessageIDs(ctx, e.meta.acceptedKeys())
	if err != nil {
		return nil, err
	}
	mail, err := e.keyIDs(ctx, "EMAIL", e.ses.acceptedKeys())
	if err != nil {
		return nil, err
	}
	for _, ids := range []map[string]string{wa, mail} {
		for _, id := range ids {
			out[id] = true
		}
	}
	return out, nil
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
