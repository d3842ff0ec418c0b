package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// E-mail through SES: a third of the events (see isWhatsApp) ask for a
// booking confirmation by e-mail to an address of its own, sent through
// an SES account whose endpoint is the SES fake (a herald in dev takes
// any endpoint an account names) and whose configuration set publishes
// the events to an SNS topic the account claims, so that Herald settles
// a send it hung up on by the message_id tag the events echo.

// isEmail says whether event n of experiment name goes to e-mail.
func isEmail(name string, n int) bool { return name != "e" && n%3 == 1 }

// emailAddress is event n's recipient, one per message, so that the SES
// fake can count sends by recipient until Herald names the message on its
// sends.
func emailAddress(n int) string { return fmt.Sprintf("mail%d@chaos.example", n) }

// emailEvent is event n as a booking confirmation by e-mail.
func emailEvent(eventID string, n int) map[string]any {
	ref := fmt.Sprintf("BK-%d", n)
	return map[string]any{
		"event_id":      eventID,
		"trigger_event": "BOOKING_CONFIRMED",
		"locale":        "en",
		"recipients":    []map[string]any{{"name": "Chaos Passenger", "email": emailAddress(n)}},
		"context": map[string]any{"passenger_name": "Chaos Passenger", "tour_name": "Chaos Coast Tour",
			"departure_date": "2027-04-12", "booking_reference": ref, "deposit_amount": "150.00 EUR"},
		"conversation_context": map[string]any{"type": "booking", "id": ref},
		"channels":             []string{"EMAIL"},
	}
}

// channelShare is how many of the experiment's events go to a channel.
func channelShare(name string, messages int, is func(string, int) bool) int {
	n := 0
	for i := range messages {
		if is(name, i) {
			n++
		}
	}
	return n
}

// createSESAccount makes the tenant's e-mail account send through the SES
// fake with a configuration set whose events reach Herald through the
// topic the account claims, activates it, and tells the fake where SNS
// posts.
func (e *experiment) createSESAccount(ctx context.Context) error {
	var acct struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	status, raw, err := e.call(ctx, http.MethodPost, "/api/v1/channel-accounts", map[string]any{
		"provider": "ses", "name": "chaos e-mail",
		"config": map[string]any{"region": sesRegion, "sender_email": sesSender, "configuration_set": sesConfigSet,
			"sns_topic_arn": sesTopicARN, "endpoint_url": e.ses.URL()},
		"secrets": map[string]any{"access_key_id": sesAccessKeyID, "secret_access_key": sesSecretKey},
	}, &acct)
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("create ses account: %d %v %s", status, err, raw)
	}
	if !strings.EqualFold(acct.Status, "active") {
		status, raw, err = e.call(ctx, http.MethodPost, "/api/v1/channel-accounts/"+acct.ID+"/activate", map[string]any{"replace": true}, &acct)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("activate ses account: %d %v %s", status, err, raw)
		}
	}
	e.ses.setHook("http://" + e.addr + "/webhooks/ses")
	return nil
}

// emailUnrecorded counts the messages SES accepted that the database still
// holds as QUEUED: after a SIGTERM, the sends the worker left unrecorded.
func (e *experiment) emailUnrecorded(ctx context.Context) (int, error) {
	e.ses.waitCalls()
	keys := e.ses.acceptedKeys()
	ids, err := e.keyIDs(ctx, "EMAIL", keys)
	if err != nil {
		return 0, err
	}
	states, err := messageStates(ctx, e.pool, mapValues(ids))
	if err != nil {
		return 0, err
	}
	n := len(keys) - len(states)
	for _, m := range states {
		if m.Status == "QUEUED" {
			n++
		}
	}
	return n, nil
}

// checkEmail holds the e-mail messages to what SES did: no message
// accepted twice (SES has no idempotency key: a second send is a second
// mail in the passenger's inbox), every message SES accepted delivered in
// the database, with an id SES issued, and none sent that SES never had.
func (e *experiment) checkEmail(ctx context.Context) {
	r := e.row
	keys := e.ses.acceptedKeys()
	ids, err := e.keyIDs(ctx, "EMAIL", keys)
	if err != nil {
		r.Failures = append(r.Failures, "map the SES fake's sends to messages: "+err.Error())
		return
	}
	r.Mail, r.MailCut = len(keys), int(e.ses.cut.Load())
	dups := e.ses.duplicates()
	for _, d := range dups {
		r.MailDup += len(d.Calls) - 1
	}
	if len(dups) > 0 {
		const listed = 100
		lines := make([]string, 0, min(len(dups), listed)+1)
		for _, d := range dups[:min(len(dups), listed)] {
			lines = append(lines, fmt.Sprintf("%s (%s): %s", dash(ids[d.Key]), d.Key, d.describe(e.start)))
		}
		if len(dups) > listed {
			lines = append(lines, fmt.Sprintf("and %d more", len(dups)-listed))
		}
		r.Failures = append(r.Failures, fmt.Sprintf("%d duplicate e-mail sends (SES accepted %d messages more than once; 0 allowed):\n      %s",
			r.MailDup, len(dups), strings.Join(lines, "\n      ")))
	}
	behind, err := e.emailBehind(ctx, ids)
	if err != nil {
		r.Failures = append(r.Failures, "read the e-mail messages: "+err.Error())
		return
	}
	if len(behind) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d e-mail messages are not at the status SES's events reported, e.g. %s",
			len(behind), strings.Join(behind[:min(len(behind), 5)], "; ")))
	}
	sent, err := sentOn(ctx, e.pool, "EMAIL")
	if err != nil {
		r.Failures = append(r.Failures, "read the sent e-mail messages: "+err.Error())
		return
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
		r.Failures = append(r.Failures, fmt.Sprintf("%d e-mail messages are sent in the database but SES never accepted them, e.g. %s", len(phantom), phantom[0]))
	}
	e.logf("SES accepted %d messages in %d calls (%d after Herald hung up); %d event posts, %d of them retried",
		len(keys), e.ses.accepted.Load(), e.ses.cut.Load(), e.ses.posts.Load(), e.ses.retries.Load())
}

// emailBehind lists the messages SES accepted that the database does not
// hold as DELIVERED (or beyond: Herald never moves a message back), that
// record an SES id the fake never issued, or that do not exist.
func (e *experiment) emailBehind(ctx context.Context, ids map[string]string) ([]string, error) {
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
		switch {
		case !ok:
			behind = append(behind, fmt.Sprintf("%s: SES accepted a send no message has", k))
		case e.ses.lastEvent(m.ExternalID) == "":
			behind = append(behind, fmt.Sprintf("%s is %s with provider id %q, which SES never issued", id, m.Status, m.ExternalID))
		case m.Status != "DELIVERED" && m.Status != "READ":
			behind = append(behind, fmt.Sprintf("%s is %s, SES reported Delivery", id, m.Status))
		}
	}
	sort.Strings(behind)
	return behind, nil
}

// emailEventsApplied says whether Herald has applied every event SES
// published: the fake is idle and no message is behind.
func (e *experiment) emailEventsApplied(ctx context.Context) (bool, error) {
	if !e.ses.idle() {
		return false, nil
	}
	ids, err := e.keyIDs(ctx, "EMAIL", e.ses.acceptedKeys())
	if err != nil {
		return false, err
	}
	behind, err := e.emailBehind(ctx, ids)
	return err == nil && len(behind) == 0, err
}
