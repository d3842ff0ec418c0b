package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// AlertTimeout bounds one post of an alert to Slack or Teams.
const AlertTimeout = 15 * time.Second

// AlertDeliveryError is a delivery of an alert that failed for one or more
// targets: the job retries, and the targets that took it are not sent to
// again.
type AlertDeliveryError struct{ Failed []string }

func (e *AlertDeliveryError) Error() string {
	return "alert not delivered to " + strings.Join(e.Failed, ", ")
}

// alertTarget is one place an alert goes.
type alertTarget struct {
	name string // "email:<address>", "slack", "teams"
	url  string
}

// Deliver sends the alert to every target of the tenant's current
// settings that has not taken it yet: the staff addresses, Slack, Teams.
// Each success is recorded at once, so a retry (an error returned here)
// sends only to the targets that failed. A target that refuses the alert
// for good (4xx, no e-mail account) is recorded and not retried.
func (s *Alerts) Deliver(ctx context.Context, tenantID, alertID uuid.UUID) error {
	var (
		a       *StaffAlert
		set     *AlertSettings
		account *ChannelAccount
		tenant  *Tenant
	)
	err := s.Store.InTenant(ctx, tenantID, func(tx AlertTx) (err error) {
		if a, err = tx.AlertByID(ctx, tenantID, alertID); err != nil {
			return err
		}
		if tenant, err = tx.TenantByID(ctx, tenantID); err != nil {
			return err
		}
		if set, err = tx.AlertSettings(ctx, tenantID); err != nil {
			return err
		}
		if len(set.StaffEmails) > 0 {
			account, err = tx.ActiveAccount(ctx, tenantID, Email)
			if ErrorCode(err) == ENOTFOUND {
				account, err = nil, nil
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	targets, err := s.alertTargets(set)
	if err != nil {
		return err
	}
	var failed []string
	for _, t := range targets {
		if slices.Contains(a.Delivered, t.name) || slices.Contains(a.Delivered, t.name+":refused") {
			continue
		}
		sendErr := s.sendAlert(ctx, tenant, account, a, t)
		var pe *provider.Error
		switch {
		case sendErr == nil:
			err = s.markAlert(ctx, a, t.name, "")
		case errors.As(sendErr, &pe) && pe.Class == provider.Permanent:
			// Recorded as tried: a retry would meet the same refusal.
			err = s.markAlert(ctx, a, t.name+":refused", fmt.Sprintf("%s: %s", t.name, pe.Reason))
		default:
			failed = append(failed, t.name)
			err = s.markAlert(ctx, a, "", fmt.Sprintf("%s: %v", t.name, sendErr))
		}
		if err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return &AlertDeliveryError{Failed: failed}
	}
	return nil
}

// alertTargets lists where the tenant's alerts go now.
func (s *Alerts) alertTargets(set *AlertSettings) ([]alertTarget, error) {
	var out []alertTarget
	for _, addr := range set.StaffEmails {
		out = append(out, alertTarget{name: "email:" + addr})
	}
	urls, err := s.webhookURLs(set)
	if err != nil {
		return nil, fmt.Errorf("open alert webhook URLs of tenant %s: %w", set.TenantID, err)
	}
	for _, k := range []struct{ name, key string }{{"slack", alertSlackKey}, {"teams", alertTeamsKey}} {
		if u := urls[k.key]; u != "" {
			out = append(out, alertTarget{name: k.name, url: u})
		}
	}
	return out, nil
}

func (s *Alerts) markAlert(ctx context.Context, a *StaffAlert, target, lastError string) error {
	return s.Store.InTenant(ctx, a.TenantID, func(tx AlertTx) error {
		return tx.MarkAlertDelivered(ctx, a.TenantID, a.ID, target, lastError)
	})
}

// sendAlert sends the alert to one target.
func (s *Alerts) sendAlert(ctx context.Context, t *Tenant, account *ChannelAccount, a *StaffAlert, target alertTarget) error {
	switch {
	case strings.HasPrefix(target.name, "email:"):
		return s.emailAlert(ctx, t, account, a, strings.TrimPrefix(target.name, "email:"))
	case target.name == "slack":
		return s.postAlert(ctx, target.url, SlackPayload(t.Name, a))
	default:
		return s.postAlert(ctx, target.url, TeamsPayload(t.Name, a))
	}
}

// emailAlert sends the alert to a staff address through the tenant's
// active e-mail account, as its passengers' e-mail goes.
func (s *Alerts) emailAlert(ctx context.Context, t *Tenant, account *ChannelAccount, a *StaffAlert, to string) error {
	if account == nil {
		return permanentf("no_email_account", "the tenant has no active e-mail account to send staff alerts with")
	}
	p, ok := s.Providers[account.Provider]
	if !ok {
		return permanentf("no_provider", "provider %s is not configured", account.Provider)
	}
	secrets, err := s.Accounts.Open(account)
	if err != nil {
		return fmt.Errorf("channel account %s: %w", account.ID, err)
	}
	// The alert's id is the message id providers tag the send with; a
	// per-address id keeps two staff members' sends apart.
	id := uuid.NewSHA1(a.ID, []byte(to))
	_, err = p.Send(ctx, provider.Outbound{
		MessageID: id, TenantID: t.ID, Channel: string(Email), To: to, Attempt: 1,
		Subject: "[Herald] " + a.Title, Body: alertHTML(t.Name, a),
		Account: provider.Account{ID: account.ID, TenantID: account.TenantID, Provider: account.Provider, Config: account.Config, Secrets: secrets},
	})
	return err
}

// alertHTML is the alert as a small HTML e-mail.
func alertHTML(tenant string, a *StaffAlert) string {
	var b strings.Builder
	b.WriteString("<!doctype html><html><body style=\"font-family:sans-serif\">")
	fmt.Fprintf(&b, "<p style=\"color:#555\">Herald alert for %s</p><h2>%s</h2>", html.EscapeString(tenant), html.EscapeString(a.Title))
	for _, line := range strings.Split(a.Body, "\n") {
		fmt.Fprintf(&b, "<p style=\"margin:4px 0\">%s</p>", html.EscapeString(line))
	}
	b.WriteString("</body></html>")
	return b.String()
}

// SlackPayload is the alert as a Slack incoming-webhook message: text (the
// notification's fallback) and Block Kit blocks, a header and a section.
func SlackPayload(tenant string, a *StaffAlert) map[string]any {
	return map[string]any{
		"text": fmt.Sprintf("%s: %s", tenant, a.Title),
		"blocks": []any{
			map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": cutRunes(a.Title, 150)}},
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": cutRunes(slackEscape(a.Body), 3000)}},
			map[string]any{"type": "context", "elements": []any{map[string]any{"type": "mrkdwn", "text": slackEscape("Herald · " + tenant + " · " + a.Kind)}}},
		},
	}
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// TeamsPayload is the alert as a Microsoft Teams incoming-webhook (or
// Workflows "post to a channel when a webhook request is received")
// message: one Adaptive Card attachment.
func TeamsPayload(tenant string, a *StaffAlert) map[string]any {
	body := []any{
		map[string]any{"type": "TextBlock", "text": a.Title, "weight": "Bolder", "size": "Medium", "wrap": true},
	}
	for _, line := range strings.Split(a.Body, "\n") {
		body = append(body, map[string]any{"type": "TextBlock", "text": line, "wrap": true, "spacing": "Small"})
	}
	body = append(body, map[string]any{"type": "TextBlock", "text": "Herald · " + tenant + " · " + a.Kind, "isSubtle": true, "size": "Small", "wrap": true})
	return map[string]any{
		"type": "message",
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"contentUrl":  nil,
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.2",
				"body":    body,
			},
		}},
	}
}

// postAlert posts payload to a Slack or Teams webhook through the guarded
// client. A 4xx answer (but 429) is permanent: the URL is wrong or
// revoked.
func (s *Alerts) postAlert(ctx context.Context, url string, payload map[string]any) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, AlertTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return permanentf("bad_url", "the webhook URL is not usable: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		// The URL is a secret: the error says what failed, not where.
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("post to the webhook: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
		return permanentf(fmt.Sprint(resp.StatusCode), "the webhook answered %d %s", resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	return fmt.Errorf("the webhook answered %d %s", resp.StatusCode, strings.TrimSpace(string(answer)))
}

// permanentf is a refusal that retrying cannot change.
func permanentf(code, format string, args ...any) error {
	return &provider.Error{Code: code, Class: provider.Permanent, Reason: fmt.Sprintf(format, args...)}
}
