package db

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// routeLookups are the channel accounts and templates one route
// transaction reads with its event (EventForRouting): the tenant's ACTIVE
// accounts and the event's active templates. ActiveAccount and
// FindTemplate answer from them for that tenant and event instead of
// asking Postgres once per message; the transaction holds the event's row
// lock and reads them within milliseconds, so they are what a per-message
// read would have seen.
type routeLookups struct {
	tenantID  uuid.UUID
	event     string
	accounts  []*app.ChannelAccount
	templates []*app.Template
}

// activeAccount returns the ACTIVE account on ch; ok is false when the
// lookups are for another tenant.
func (r *routeLookups) activeAccount(tenantID uuid.UUID, ch app.Channel) (a *app.ChannelAccount, ok bool) {
	if r == nil || r.tenantID != tenantID {
		return nil, false
	}
	for _, a := range r.accounts {
		if a.Channel == ch {
			c := *a
			return &c, true
		}
	}
	return nil, true
}

// findTemplate returns the active template on ch in the first of locales
// that has one, as FindTemplate's query orders them; ok is false when the
// lookups are for another tenant or event.
func (r *routeLookups) findTemplate(tenantID uuid.UUID, event string, ch app.Channel, locales []string) (tp *app.Template, ok bool) {
	if r == nil || r.tenantID != tenantID || r.event != event {
		return nil, false
	}
	for _, locale := range locales {
		i := slices.IndexFunc(r.templates, func(tp *app.Template) bool { return tp.Channel == ch && tp.Locale == locale })
		if i >= 0 {
			c := *r.templates[i]
			return &c, true
		}
	}
	return nil, true
}

// accountJSON and templateJSON are the rows' columns as JSON objects, as
// decodeRouteLookups reads them (secrets in hex).
const (
	accountJSON = `json_build_object('id', a.id, 'tenant_id', a.tenant_id, 'channel', a.channel, 'provider', a.provider,
		'name', a.name, 'status', a.status, 'config', a.config, 'secrets', encode(a.secrets, 'hex'),
		'secrets_key_id', a.secrets_key_id, 'verify_token', a.verify_token, 'webhook_token', a.webhook_token,
		'suspended_reason', a.suspended_reason, 'created_at', a.created_at, 'updated_at', a.updated_at)`
	templateJSON = `json_build_object('id', tp.id, 'tenant_id', tp.tenant_id, 'trigger_event', tp.trigger_event,
		'channel', tp.channel, 'locale', tp.locale, 'subject', tp.subject, 'body', tp.body, 'body_format', tp.body_format,
		'whatsapp_template', tp.whatsapp_template, 'version', tp.version, 'is_active', tp.is_active,
		'updated_by', tp.updated_by, 'created_at', tp.created_at, 'updated_at', tp.updated_at)`
)

type accountRow struct {
	ID              uuid.UUID   `json:"id"`
	TenantID        uuid.UUID   `json:"tenant_id"`
	Channel         app.Channel `json:"channel"`
	Provider        string      `json:"provider"`
	Name            string      `json:"name"`
	Status          string      `json:"status"`
	Config          app.Attrs   `json:"config"`
	Secrets         *string     `json:"secrets"`
	SecretsKeyID    *string     `json:"secrets_key_id"`
	VerifyToken     string      `json:"verify_token"`
	WebhookToken    string      `json:"webhook_token"`
	SuspendedReason *string     `json:"suspended_reason"`
	CreatedAt       time.Time   `json:"created_at"`
	UpdatedAt       time.Time   `json:"updated_at"`
}

type templateRow struct {
	ID               uuid.UUID       `json:"id"`
	TenantID         uuid.UUID       `json:"tenant_id"`
	TriggerEvent     string          `json:"trigger_event"`
	Channel          app.Channel     `json:"channel"`
	Locale           string          `json:"locale"`
	Subject          string          `json:"subject"`
	Body             string          `json:"body"`
	BodyFormat       string          `json:"body_format"`
	WhatsAppTemplate json.RawMessage `json:"whatsapp_template"`
	Version          int             `json:"version"`
	IsActive         bool            `json:"is_active"`
	UpdatedBy        *uuid.UUID      `json:"updated_by"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
}

func decodeRouteLookups(tenantID uuid.UUID, event string, accountsJSON, templatesJSON []byte) (*routeLookups, error) {
	var accounts []accountRow
	var templates []templateRow
	if err := json.Unmarshal(accountsJSON, &accounts); err != nil {
		return nil, fmt.Errorf("read the route's accounts: %w", err)
	}
	if err := json.Unmarshal(templatesJSON, &templates); err != nil {
		return nil, fmt.Errorf("read the route's templates: %w", err)
	}
	r := &routeLookups{tenantID: tenantID, event: event}
	for _, a := range accounts {
		acct := &app.ChannelAccount{ID: a.ID, TenantID: a.TenantID, Channel: a.Channel, Provider: a.Provider, Name: a.Name,
			Status: a.Status, Config: a.Config, SecretsKeyID: a.SecretsKeyID, VerifyToken: a.VerifyToken,
			WebhookToken: a.WebhookToken, SuspendedReason: a.SuspendedReason, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
		if a.Secrets != nil {
			secrets, err := hex.DecodeString(*a.Secrets)
			if err != nil {
				return nil, fmt.Errorf("read account %s's secrets: %w", a.ID, err)
			}
			acct.Secrets = secrets
		}
		r.accounts = append(r.accounts, acct)
	}
	for _, tp := range templates {
		t := &app.Template{ID: tp.ID, TenantID: tp.TenantID, TriggerEvent: tp.TriggerEvent, Channel: tp.Channel,
			Locale: tp.Locale, Subject: tp.Subject, Body: tp.Body, BodyFormat: app.BodyFormat(tp.BodyFormat), Version: tp.Version, IsActive: tp.IsActive,
			UpdatedBy: tp.UpdatedBy, CreatedAt: tp.CreatedAt, UpdatedAt: tp.UpdatedAt}
		if len(tp.WhatsAppTemplate) > 0 && string(tp.WhatsAppTemplate) != "null" {
			t.WhatsAppTemplate = app.JSON(tp.WhatsAppTemplate)
		}
		r.templates = append(r.templates, t)
	}
	return r, nil
}
