package web

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// webhookJSON says whether a webhook is set and where it posts; the URL
// itself, a secret, is never answered.
type webhookJSON struct {
	Set  bool   `json:"set"`
	Host string `json:"host"`
}

// alertSettingsJSON is the tenant's alert settings as the API shows them.
type alertSettingsJSON struct {
	StaffEmails       []string    `json:"staff_emails"`
	Slack             webhookJSON `json:"slack"`
	Teams             webhookJSON `json:"teams"`
	BreakerMinutes    int         `json:"breaker_minutes"`
	ApprovalMinutes   int         `json:"approval_minutes"`
	UnansweredMinutes int         `json:"unanswered_minutes"`
	DigestTime        string      `json:"digest_time"`
	Timezone          string      `json:"timezone"`
}

// alertSettingsIn is a change of the settings: a field left out keeps its
// value; an empty webhook URL removes the webhook, an empty digest_time
// the digest.
type alertSettingsIn struct {
	StaffEmails       []string `json:"staff_emails"`
	SlackWebhookURL   *string  `json:"slack_webhook_url"`
	TeamsWebhookURL   *string  `json:"teams_webhook_url"`
	BreakerMinutes    *int     `json:"breaker_minutes"`
	ApprovalMinutes   *int     `json:"approval_minutes"`
	UnansweredMinutes *int     `json:"unanswered_minutes"`
	DigestTime        *string  `json:"digest_time"`
}

func alertSettingsOut(s *app.AlertSettings, tz string) alertSettingsJSON {
	return alertSettingsJSON{StaffEmails: append([]string{}, s.StaffEmails...),
		Slack: webhookJSON{Set: s.SlackHost != "", Host: s.SlackHost}, Teams: webhookJSON{Set: s.TeamsHost != "", Host: s.TeamsHost},
		BreakerMinutes: s.BreakerMinutes, ApprovalMinutes: s.ApprovalMinutes, UnansweredMinutes: s.UnansweredMinutes,
		DigestTime: s.DigestTime(), Timezone: tz}
}

// handleAPIAlertSettingsGet answers the tenant's staff-alert settings.
func (s *Server) handleAPIAlertSettingsGet(c *fiber.Ctx) error {
	k := apiKeyOf(c)
	set, err := s.Alerts.Settings(c.UserContext(), k.TenantID)
	if err != nil {
		return err
	}
	return c.JSON(alertSettingsOut(set, s.tenantZone(c)))
}

// tenantZone is the API key's tenant's time zone, the digest's.
func (s *Server) tenantZone(c *fiber.Ctx) string {
	t, err := s.Tenants.ByID(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return ""
	}
	return t.Timezone
}

// handleAPIAlertSettingsSet changes the tenant's staff-alert settings and
// answers them as stored.
func (s *Server) handleAPIAlertSettingsSet(c *fiber.Ctx) error {
	var body alertSettingsIn
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	k := apiKeyOf(c)
	cur, err := s.Alerts.Settings(c.UserContext(), k.TenantID)
	if err != nil {
		return err
	}
	in := alertInputOf(cur)
	in.SlackURL, in.TeamsURL = body.SlackWebhookURL, body.TeamsWebhookURL
	if body.StaffEmails != nil {
		in.StaffEmails = body.StaffEmails
	}
	for _, f := range []struct {
		v    *int
		into *string
	}{{body.BreakerMinutes, &in.BreakerMinutes}, {body.ApprovalMinutes, &in.ApprovalMinutes}, {body.UnansweredMinutes, &in.UnansweredMinutes}} {
		if f.v != nil {
			*f.into = strconv.Itoa(*f.v)
		}
	}
	if body.DigestTime != nil {
		in.DigestTime = *body.DigestTime
	}
	set, err := s.Alerts.Save(c.UserContext(), apiActor(c), k.TenantID, in)
	if err != nil {
		return err
	}
	return c.JSON(alertSettingsOut(set, s.tenantZone(c)))
}

// alertInputOf is the input that keeps the stored settings as they are.
func alertInputOf(s *app.AlertSettings) app.AlertSettingsInput {
	return app.AlertSettingsInput{StaffEmails: s.StaffEmails, BreakerMinutes: strconv.Itoa(s.BreakerMinutes),
		ApprovalMinutes: strconv.Itoa(s.ApprovalMinutes), UnansweredMinutes: strconv.Itoa(s.UnansweredMinutes),
		DigestTime: s.DigestTime()}
}

// handleAlertSettings shows the staff-alert settings and the last alerts.
func (s *Server) handleAlertSettings(c *fiber.Ctx) error {
	t := tenantOf(c)
	pg, err := s.AlertConsole.Page(c.UserContext(), userOf(c), t)
	if err != nil {
		return err
	}
	return s.render(c, views.AlertSettingsPage(s.page(c, "Staff alerts"), views.AlertFormOf(t.Slug, pg), nil))
}

// handleAlertSettingsUpdate saves the settings; a URL field left empty
// keeps the webhook, its "stop posting" box removes it. Bad input shows
// the form again as typed (URLs never echoed) and stores nothing.
func (s *Server) handleAlertSettingsUpdate(c *fiber.Ctx) error {
	t := tenantOf(c)
	in := app.AlertSettingsInput{StaffEmails: []string{c.FormValue("staff_emails")},
		BreakerMinutes: c.FormValue("breaker_minutes"), ApprovalMinutes: c.FormValue("approval_minutes"),
		UnansweredMinutes: c.FormValue("unanswered_minutes"), DigestTime: c.FormValue("digest_time")}
	in.SlackURL = formWebhook(c, "slack_webhook_url", "slack_remove")
	in.TeamsURL = formWebhook(c, "teams_webhook_url", "teams_remove")
	if _, err := s.AlertConsole.Change(c.UserContext(), userOf(c), t.ID, in); err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			// Every field's problem at once, not only the first.
			for _, d := range app.ErrorDetails(err) {
				if d.Field != "" {
					errs[d.Field] = d.Message
				}
			}
			pg, perr := s.AlertConsole.Page(c.UserContext(), userOf(c), t)
			if perr != nil {
				return perr
			}
			f := views.AlertForm{Slug: t.Slug, Page: pg, StaffEmails: in.StaffEmails[0], BreakerMinutes: in.BreakerMinutes,
				ApprovalMinutes: in.ApprovalMinutes, UnansweredMinutes: in.UnansweredMinutes, DigestTime: in.DigestTime}
			return s.render(c, views.AlertSettingsPage(s.page(c, "Staff alerts"), f, errs))
		})
	}
	s.flash(c, "success", "Alert settings saved.")
	return c.Redirect(tenantPath(c, "/settings/alerts"), fiber.StatusSeeOther)
}

// formWebhook reads a webhook URL field: nil keeps the stored URL (the
// field left empty), "" removes it (the remove box ticked).
func formWebhook(c *fiber.Ctx, field, remove string) *string {
	if c.FormValue(remove) != "" {
		empty := ""
		return &empty
	}
	if v := strings.TrimSpace(c.FormValue(field)); v != "" {
		return &v
	}
	return nil
}
