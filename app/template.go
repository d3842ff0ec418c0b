package app

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// FallbackLocale is the last locale of every lookup chain.
const FallbackLocale = "de-DE"

// Template is a tenant's text for one event, channel and locale.
type Template struct {
	ID           uuid.UUID `db:"id"`
	TenantID     uuid.UUID `db:"tenant_id"`
	TriggerEvent string    `db:"trigger_event"`
	Channel      Channel   `db:"channel"`
	Locale       string    `db:"locale"`
	Subject      string    `db:"subject"`
	Body         string    `db:"body"`
	// BodyFormat is how an e-mail body is written: HTML or Markdown.
	// Other channels' bodies are plain text and keep the zero value's
	// default, HTML, which they never read.
	BodyFormat BodyFormat `db:"body_format"`
	// WhatsAppTemplate, when set, makes Meta sends use an approved template.
	WhatsAppTemplate JSON       `db:"whatsapp_template"`
	Version          int        `db:"version"`
	IsActive         bool       `db:"is_active"`
	UpdatedBy        *uuid.UUID `db:"updated_by"`
	CreatedAt        time.Time  `db:"created_at"`
	UpdatedAt        time.Time  `db:"updated_at"`
}

// WhatsAppTemplateSpec is the Meta template a Herald template maps to: its
// name and language, and which context variables fill its body parameters
// ({{1}} is Parameters[0]). Category and Body, when set, are what is
// submitted to Meta for approval; a template created in WhatsApp Manager
// may be named here without them.
type WhatsAppTemplateSpec struct {
	Name       string   `json:"name"`
	Language   string   `json:"language"`
	Category   string   `json:"category,omitempty"`
	Body       string   `json:"body,omitempty"`
	Parameters []string `json:"parameters"`
	// Header is the template's media header, DOCUMENT or IMAGE, or empty
	// for none. A message sent with the template carries its first
	// matching file there, so only templates whose every message has one
	// (a ticket, an invoice) should have a header.
	Header string `json:"header,omitempty"`
}

// Meta template headers Herald submits: a file the message carries.
const (
	MetaHeaderDocument = "DOCUMENT"
	MetaHeaderImage    = "IMAGE"
)

// Spec decodes the WhatsApp template, if any.
func (t *Template) Spec() (*WhatsAppTemplateSpec, error) {
	if len(t.WhatsAppTemplate) == 0 || string(t.WhatsAppTemplate) == "null" {
		return nil, nil
	}
	var s WhatsAppTemplateSpec
	if err := json.Unmarshal(t.WhatsAppTemplate, &s); err != nil {
		return nil, fmt.Errorf("template %s: whatsapp_template: %w", t.ID, err)
	}
	return &s, nil
}

// LocaleChain returns the locales to try, in order: the recipient's, the
// tenant's default, then de-DE, each followed by its bare language (en-GB,
// en), without repeats.
func LocaleChain(recipient, tenantDefault string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(l string) {
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, l := range []string{recipient, tenantDefault, FallbackLocale} {
		add(l)
		if base, _, ok := strings.Cut(l, "-"); ok {
			add(base)
		}
	}
	return out
}

var placeholderPattern = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.]+)\s*\}\}`)

// Placeholders returns the distinct placeholder names in text, lower-cased.
func Placeholders(text string) []string {
	seen := map[string]bool{}
	var out []string
	names := blockConditions(text)
	for _, m := range placeholderPattern.FindAllStringSubmatch(text, -1) {
		names = append(names, strings.ToLower(m[1]))
	}
	for _, name := range names {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// UnknownPlaceholders returns the placeholders of text that the event does
// not provide; the editor shows them as warnings.
func UnknownPlaceholders(event *EventDef, text string) []string {
	known := map[string]bool{}
	for _, v := range event.Variables {
		known[v] = true
	}
	for _, v := range RecipientVariables {
		known[v] = true
	}
	known[FilesPlaceholder] = true
	var out []string
	for _, p := range Placeholders(text) {
		if !known[p] {
			out = append(out, p)
		}
	}
	return out
}

// Render decides the optional blocks of text and fills its {{variable}}
// placeholders (names match case-insensitively). With escapeHTML the
// values are HTML-escaped, for HTML e-mail bodies. A missing variable
// renders empty and is returned, so the caller can warn.
func Render(text string, vars map[string]string, escapeHTML bool) (string, []string) {
	if escapeHTML {
		return RenderEscaped(text, vars, html.EscapeString)
	}
	return RenderEscaped(text, vars, nil)
}

// RenderEscaped is Render with the values passed through escape (nil
// leaves them as they are): HTML escaping for HTML e-mail, Markdown
// escaping for Markdown e-mail.
func RenderEscaped(text string, vars map[string]string, escape func(string) string) (string, []string) {
	var missing []string
	text = resolveBlocks(text, vars)
	out := placeholderPattern.ReplaceAllStringFunc(text, func(m string) string {
		name := strings.ToLower(placeholderPattern.FindStringSubmatch(m)[1])
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return ""
		}
		if escape != nil {
			return escape(v)
		}
		return v
	})
	return out, missing
}

// TemplateVars flattens an event context and a recipient into the variables
// templates see: top-level context keys (lower-cased), strings as they are,
// numbers and booleans in their plain form, anything else as JSON.
func TemplateVars(context map[string]any, r Recipient) map[string]string {
	vars := make(map[string]string, len(context)+3)
	for k, v := range context {
		vars[strings.ToLower(k)] = Stringify(v)
	}
	vars["recipient_name"] = r.Name
	vars["recipient_phone"] = r.Phone
	vars["recipient_email"] = r.Email
	return vars
}

// Stringify renders a decoded JSON value as text: strings as they are,
// numbers without exponent, anything else as compact JSON.
func Stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case int:
		return strconv.Itoa(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// TemplateInput is what saving a template takes.
type TemplateInput struct {
	Subject string
	Body    string
	// BodyFormat is the e-mail body's format; empty means HTML.
	BodyFormat       BodyFormat
	WhatsAppTemplate *WhatsAppTemplateSpec
	IsActive         bool
}

// TemplateTx lists the statements Templates runs.
type TemplateTx interface {
	// EventReader resolves the tenant's events (LookupEvent).
	EventReader
	Tx
	LockTemplate(ctx context.Context, tenantID, id uuid.UUID) (*Template, error)
	UpdateTemplate(ctx context.Context, t *Template) error
	InsertTemplateVersion(ctx context.Context, t *Template) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
	SMSLimitTx
}

// Templates manages tenants' templates and their version history.
type Templates struct {
	Store Store[TemplateTx]
	Now   Clock
	// Registry resolves the event of a new template.
	Registry *Registry
}

// ValidateTemplate checks a template's content for its channel and returns
// the unknown placeholders as warnings.
func ValidateTemplate(event *EventDef, channel Channel, in TemplateInput) ([]string, error) {
	switch {
	case strings.TrimSpace(in.Body) == "":
		return nil, FieldErrorf("body", "Body is required.")
	case len(in.Body) > 20000:
		return nil, FieldErrorf("body", "Body must be at most 20,000 characters.")
	case channel == Email && strings.TrimSpace(in.Subject) == "":
		return nil, FieldErrorf("subject", "E-mail templates need a subject.")
	case len(in.Subject) > 300:
		return nil, FieldErrorf("subject", "Subject must be at most 300 characters.")
	case strings.ContainsAny(in.Subject, "\r\n"):
		// A subject is one header line; a line break would end it.
		return nil, &Error{Code: EINVALID, Reason: "invalid_subject", Field: "subject", Message: "The subject must be one line, without line breaks."}
	case in.BodyFormat != "" && in.BodyFormat != BodyHTML && in.BodyFormat != BodyMarkdown:
		return nil, FieldErrorf("body_format", "The body format must be html or markdown.")
	case in.BodyFormat == BodyMarkdown && channel != Email:
		// An SMS or WhatsApp body is plain text: stored as Markdown, its
		// marks would reach the reader as they were typed.
		return nil, FieldErrorf("body_format", "Markdown is for e-mail bodies; %s bodies are plain text, so leave body_format out.", channel)
	case strings.IndexByte(in.Subject+in.Body, 0) >= 0:
		return nil, &Error{Code: EINVALID, Reason: "invalid_text", Field: "body", Message: "The template contains a NUL character."}
	}
	if err := ValidateBlocks("subject", in.Subject); err != nil {
		return nil, err
	}
	if err := ValidateBlocks("body", in.Body); err != nil {
		return nil, err
	}
	if s := in.WhatsAppTemplate; s != nil {
		if channel != WhatsApp {
			return nil, FieldErrorf("whatsapp_template", "Only WhatsApp templates can name a Meta template.")
		}
		if strings.TrimSpace(s.Name) == "" || strings.TrimSpace(s.Language) == "" {
			return nil, FieldErrorf("whatsapp_template", "A Meta template needs its name and language.")
		}
		if unknown := UnknownPlaceholders(event, "{{"+strings.Join(s.Parameters, "}} {{")+"}}"); len(s.Parameters) > 0 && len(unknown) > 0 {
			return nil, FieldErrorf("whatsapp_template", "Parameters %v are not variables of %s.", unknown, event.Name)
		}
		if err := ValidateMetaTemplate(s); err != nil {
			return nil, err
		}
	}
	return UnknownPlaceholders(event, in.Subject+" "+in.Body), nil
}

// Save updates a template: the version goes up by one and the previous
// content is kept in its history. It returns the unknown placeholders.
// Saves of one template run one after the other, each on top of the last.
func (s *Templates) Save(ctx context.Context, actor Actor, tenantID, templateID uuid.UUID, in TemplateInput) (*Template, []string, error) {
	return s.SaveChecked(ctx, actor, tenantID, templateID, in, nil)
}

// SaveChecked is Save with a check of the current template, made under the
// template's row lock, that may refuse the save or adjust the input.
func (s *Templates) SaveChecked(ctx context.Context, actor Actor, tenantID, templateID uuid.UUID, in TemplateInput,
	check func(cur *Template, in *TemplateInput) error) (*Template, []string, error) {
	var t *Template
	var warnings []string
	err := s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) (err error) {
		t, err = tx.LockTemplate(ctx, tenantID, templateID)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(t, &in); err != nil {
				return err
			}
		}
		event, err := LookupEvent(ctx, tx, tenantID, t.TriggerEvent)
		if ErrorCode(err) == ENOTFOUND {
			return Errorf(EINVALID, "Template %s is for unknown event %s.", t.ID, t.TriggerEvent)
		} else if err != nil {
			return err
		}
		if warnings, err = ValidateTemplate(event, t.Channel, in); err != nil {
			return err
		}
		if err := CheckSMSTemplate(ctx, tx, tenantID, event, t.Channel, t.Locale, in.Body); err != nil {
			return err
		}
		if err := tx.InsertTemplateVersion(ctx, t); err != nil {
			return err
		}
		keepMetaSubmission(t, &in)
		t.Subject, t.Body, t.IsActive = in.Subject, in.Body, in.IsActive
		t.BodyFormat = BodyHTML
		if t.Channel == Email && in.BodyFormat != "" {
			t.BodyFormat = in.BodyFormat
		}
		t.WhatsAppTemplate = nil
		if in.WhatsAppTemplate != nil {
			b, _ := json.Marshal(in.WhatsAppTemplate)
			t.WhatsAppTemplate = b
		}
		t.Version++
		t.UpdatedBy, t.UpdatedAt = actor.ID, s.Now()
		if err := tx.UpdateTemplate(ctx, t); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "template.update", "template", t.ID.String(),
			map[string]any{"version": t.Version, "event": t.TriggerEvent, "channel": t.Channel, "locale": t.Locale}))
	})
	if err != nil {
		return nil, nil, err
	}
	return t, warnings, nil
}

// keepMetaSubmission carries the Meta template's category and body over a
// save that names the same Meta template without them (the editor's form
// has fields for the name, language and parameters only). The body is kept
// only while the text is unchanged: a new text gets its Meta body derived
// anew when it is submitted.
func keepMetaSubmission(cur *Template, in *TemplateInput) {
	next := in.WhatsAppTemplate
	old, err := cur.Spec()
	if next == nil || err != nil || old == nil || next.Name != old.Name || next.Language != old.Language {
		return
	}
	if next.Category == "" {
		next.Category = old.Category
	}
	if next.Body == "" && in.Body == cur.Body && slices.Equal(next.Parameters, old.Parameters) {
		next.Body = old.Body
	}
}

// provisionTemplates creates the default templates for a new tenant.
func provisionTemplates(ctx context.Context, tx ProvisionTx, tenantID uuid.UUID, now time.Time) error {
	defaults := DefaultTemplates()
	ts := make([]*Template, 0, len(defaults))
	for _, d := range defaults {
		t := &Template{
			ID: uuid.New(), TenantID: tenantID, TriggerEvent: d.Event, Channel: d.Channel, Locale: d.Locale,
			Subject: d.Subject, Body: d.Body, BodyFormat: cmp.Or(d.Format, BodyHTML), Version: 1, IsActive: true, CreatedAt: now, UpdatedAt: now,
		}
		if d.WhatsApp != nil {
			b, err := json.Marshal(d.WhatsApp)
			if err != nil {
				return err
			}
			t.WhatsAppTemplate = b
		}
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].TriggerEvent < ts[j].TriggerEvent })
	return tx.CreateTemplates(ctx, ts)
}
