package console

import (
	"context"
	"fmt"
	"html"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// DefaultTestSendLimit is how many test messages a tenant may send in
// TestSendWindow: enough to try every account and template a few times, too
// few to use tests as a way around routing, quotas' purpose or the opt-outs.
const DefaultTestSendLimit = 30

// TestSendWindow is the window DefaultTestSendLimit counts in.
const TestSendWindow = time.Hour

// TestTrigger is the trigger event of the test messages of a channel
// account (a template's test carries its template's event).
const TestTrigger = "CHANNEL_TEST"

// TemplateTestInput is a test of a template's content: the content typed in
// the editor (saved or not), through one of the tenant's accounts of the
// template's channel, to an address the manager typed.
type TemplateTestInput struct {
	// Template is the template being edited; nil for a new one.
	Template *app.Template
	Event    string
	Channel  string
	Locale   string
	Content  app.TemplateInput
	// AccountID is the account chosen, as the form sent it.
	AccountID string
	To        string
	// Samples are the sample values the editor shows, by variable name; a
	// variable the form did not send takes the event's sample value, one it
	// sent empty is refused (a real event must carry every variable).
	Samples map[string]string
}

// testLimit is the tenant's allowance of test messages per TestSendWindow.
func (s *Accounts) testLimit() int {
	if s.TestSendLimit > 0 {
		return s.TestSendLimit
	}
	return DefaultTestSendLimit
}

// SendTest queues one test message through the account: a QUEUED message
// marked as a test, triggered by the user, with its timeline and a dispatch
// job. The account may be ACTIVE or PENDING: a test is the way to try a
// pending account before live traffic goes to it, and nothing but tests
// is ever routed to a pending account.
func (s *Accounts) SendTest(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, to string) (*app.Message, error) {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return nil, err
	}
	actor := u.Actor()
	return s.queueTest(ctx, tenantID, id, "to", to, func(a *app.ChannelAccount, m *app.Message) error {
		if a.Channel == app.Email {
			// An e-mail's subject is required; the others have none.
			m.Subject = "Herald test message"
		}
		m.TriggerEvent = TestTrigger
		m.Body = fmt.Sprintf("This is a test message from Herald through the channel account %q, sent by %s at %s.",
			a.Name, actor.Label, m.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"))
		if a.Channel == app.Email {
			m.Body = "<p>" + html.EscapeString(m.Body) + "</p>"
		}
		return nil
	}, actor, "channel_account.test_send", "channel_account", id.String())
}

// SendTemplateTest renders the content with the sample values and queues it
// as a test message through the account chosen (see SendTest). Mistakes come
// back as field errors: test_account, test_to, sample.<variable>, or the
// content's own.
func (s *Accounts) SendTemplateTest(ctx context.Context, u app.Principal, tenantID uuid.UUID, in TemplateTestInput) (*app.Message, error) {
	if err := app.RequirePermission(u, app.PermTemplates); err != nil {
		return nil, err
	}
	def, ch, locale, err := s.templateKey(ctx, tenantID, in)
	if err != nil {
		return nil, err
	}
	if _, err := app.ValidateTemplate(def, ch, in.Content); err != nil {
		return nil, err
	}
	for _, v := range def.Variables {
		if val, sent := in.Samples[v]; sent && strings.TrimSpace(val) == "" {
			return nil, app.FieldErrorf("sample."+v, "Give %s a sample value: every %s event carries it.", v, def.Name)
		}
	}
	accountID, err := uuid.Parse(strings.TrimSpace(in.AccountID))
	if err != nil {
		return nil, app.FieldErrorf("test_account", "Choose the account to send the test through.")
	}
	vars := SampleVars(def, in.Samples)
	body, _ := app.Render(in.Content.Body, vars, false)
	if ch == app.Email {
		// The dispatcher wraps it in the tenant's layout, as every e-mail.
		body, _ = app.RenderEmailBody(in.Content.Body, in.Content.BodyFormat, vars)
	}
	subject, _ := app.Render(in.Content.Subject, vars, false)
	actor := u.Actor()
	target := "new"
	if in.Template != nil {
		target = in.Template.ID.String()
	}
	return s.queueTest(ctx, tenantID, accountID, "test_to", in.To, func(a *app.ChannelAccount, m *app.Message) error {
		if a.Channel != ch {
			return app.FieldErrorf("test_account", "%s is a %s account; this template is sent on %s.", a.Name, channelWord(a.Channel), channelWord(ch))
		}
		m.TriggerEvent, m.Locale = def.Name, &locale
		m.Subject, m.Body = strings.TrimSpace(subject), body
		if in.Template != nil {
			m.TemplateID, m.TemplateVersion = &in.Template.ID, &in.Template.Version
		}
		return nil
	}, actor, "template.test_send", "template", target)
}

// templateKey checks the event, channel and locale of a template test.
func (s *Accounts) templateKey(ctx context.Context, tenantID uuid.UUID, in TemplateTestInput) (*app.EventDef, app.Channel, string, error) {
	if t := in.Template; t != nil {
		in.Event, in.Channel, in.Locale = t.TriggerEvent, string(t.Channel), t.Locale
	}
	def, ok, err := s.Registry.Known(ctx, tenantID, strings.TrimSpace(in.Event))
	if err != nil {
		return nil, "", "", err
	}
	if !ok {
		return nil, "", "", app.FieldErrorf("event", "Choose the event this template is for.")
	}
	ch, ok := app.ParseChannel(strings.TrimSpace(in.Channel))
	if !ok || !slices.Contains(def.TemplateChannels(), ch) {
		return nil, "", "", app.FieldErrorf("channel", "Choose the channel this template is for.")
	}
	locale, err := app.NormalizeLocale(strings.TrimSpace(in.Locale))
	if err != nil {
		return nil, "", "", app.FieldErrorf("locale", "Locale is required (a language tag such as de-DE or en).")
	}
	return def, ch, locale, nil
}

// queueTest stores a test message through the tenant's account id to the
// address typed (the form field toField), as fill completes it, with its
// audit entry and dispatch job. The tenant's tests are counted under a lock
// held to the end of the transaction, so concurrent tests cannot all pass
// the limit.
func (s *Accounts) queueTest(ctx context.Context, tenantID, accountID uuid.UUID, toField, to string,
	fill func(a *app.ChannelAccount, m *app.Message) error, actor app.Actor, action, targetType, targetID string) (*app.Message, error) {
	var m *app.Message
	err := s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		a, err := tx.AccountByID(ctx, tenantID, accountID)
		if app.ErrorCode(err) == app.ENOTFOUND && toField != "to" {
			return app.FieldErrorf("test_account", "That account does not exist. Choose one of the list.")
		}
		if err != nil {
			return err
		}
		if a.Status != app.AccountActive && a.Status != app.AccountPending {
			return testAccountError(toField, "%s is %s: it sends nothing, tests included. Choose an active or pending account.", a.Name, strings.ToLower(a.Status))
		}
		now := s.Now()
		n, err := tx.TestSendsSince(ctx, tenantID, now.Add(-TestSendWindow))
		if err != nil {
			return err
		}
		if n >= s.testLimit() {
			return app.Errorf(app.ECONFLICT, "This tenant has sent %d test messages in the last hour, the most it may. Try again later.", n)
		}
		requestID := uuid.New()
		m = &app.Message{
			ID: app.NewID(), TenantID: tenantID, CorrelationID: "test:" + requestID.String(),
			IdempotencyKey: "test:" + a.ID.String() + ":" + requestID.String(),
			Channel:        a.Channel, ChannelAccountID: &a.ID, Status: app.MessageQueued,
			Provider: &a.Provider, FallbackChain: app.StringList{}, TriggeredBy: actor.ID, Test: true,
			QueuedAt: now, CreatedAt: now, UpdatedAt: now,
		}
		// The account is checked against the content before the address,
		// which is read for the account's channel.
		if err := fill(a, m); err != nil {
			return err
		}
		if m.ToAddress, err = testAddress(a, toField, to); err != nil {
			return err
		}
		if _, err := app.InsertMessage(ctx, tx, m, &app.MessageEvent{TenantID: tenantID, MessageID: m.ID, ToStatus: &m.Status,
			Source: app.SourceConsole, At: now, Detail: map[string]any{"test_send": true, "by": actor.Label, "channel_account": a.Name}}); err != nil {
			return err
		}
		if err := tx.InsertAudit(ctx, actor.Entry(&tenantID, action, targetType, targetID,
			map[string]any{"message_id": m.ID.String(), "channel": a.Channel, "channel_account": a.Name})); err != nil {
			return err
		}
		return s.Queue.EnqueueDispatch(ctx, tx, app.DispatchJob{TenantID: tenantID, MessageID: m.ID, Channel: a.Channel})
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// testAccountError is a refusal of the account: a field error in the
// template editor, where the account is a choice, and a conflict on the
// account's own test page.
func testAccountError(toField, format string, args ...any) error {
	if toField == "to" {
		return app.Errorf(app.ECONFLICT, format, args...)
	}
	return app.FieldErrorf("test_account", format, args...)
}

// testAddress checks and normalises the recipient of a test message for
// the account's channel; field names the form field. A webhook account
// always posts to its own URL.
func testAddress(a *app.ChannelAccount, field, to string) (string, error) {
	to = strings.TrimSpace(to)
	switch {
	case a.Channel == app.Webhook && a.Provider == "webhook":
		return a.Config[KeyWebhookURL], nil
	case to == "":
		return "", app.FieldErrorf(field, "Enter the %s to send the test message to.", addressKind(a.Channel))
	case len(to) > 320:
		return "", app.FieldErrorf(field, "The recipient must be at most 320 characters.")
	case a.Channel.Phone():
		phone, err := app.NormalizePhone(to)
		if err != nil {
			return "", app.FieldErrorf(field, "%q is not a phone number: %v (for example +4915112345678).", to, err)
		}
		return phone, nil
	case a.Channel == app.Email:
		addr, err := mail.ParseAddress(to)
		if err != nil || addr.Name != "" || !strings.Contains(addr.Address, ".") {
			return "", app.FieldErrorf(field, "%q is not an e-mail address (for example anna@example.com).", to)
		}
		return strings.ToLower(addr.Address), nil
	}
	return to, nil
}

// channelWord names a channel in a sentence.
func channelWord(ch app.Channel) string {
	switch ch {
	case app.Email:
		return "e-mail"
	case app.WhatsApp:
		return "WhatsApp"
	}
	return string(ch)
}

// TestAccounts returns the tenant's accounts a test on the channel may go
// through: the active and the pending ones, active first.
func (s *Accounts) TestAccounts(ctx context.Context, tenantID uuid.UUID, ch app.Channel) ([]*app.ChannelAccount, error) {
	var out []*app.ChannelAccount
	err := s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		all, err := tx.ListAccounts(ctx, tenantID, AccountFilter{Channel: ch}, PageRequest{Limit: 200})
		if err != nil {
			return err
		}
		for _, a := range all {
			if a.Status == app.AccountActive || a.Status == app.AccountPending {
				out = append(out, a)
			}
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b *app.ChannelAccount) int {
		return boolRank(a.Status != app.AccountActive) - boolRank(b.Status != app.AccountActive)
	})
	return out, err
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFailure says in words why a test message failed, from the
// provider's own text on its timeline when there is one.
func TestFailure(d *app.MessageDetail) string {
	if d == nil || d.Status != app.MessageFailed {
		return ""
	}
	for i := len(d.Timeline) - 1; i >= 0; i-- {
		ev := d.Timeline[i]
		if ev.ToStatus != nil && *ev.ToStatus == app.MessageFailed {
			if s, ok := ev.Detail["error"].(string); ok && s != "" {
				return s
			}
			if s, ok := ev.Detail["reason"].(string); ok && s != "" {
				return s
			}
		}
	}
	if d.FailedReason != nil {
		return strings.ReplaceAll(*d.FailedReason, "_", " ")
	}
	return "The message failed."
}
