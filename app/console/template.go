package console

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/ses"
)

// Templates is the console's template editor: lists, edits with version
// history, comparisons and restores, as a signed-in user.
type Templates struct {
	*app.Templates
	Store app.Store[TemplateTx]
}

// TemplateTx serves the console's template pages: lists, history
// and activation. Creating and saving use TemplateStore.
type TemplateTx interface {
	app.Tx
	app.SMSLimitTx
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	LockTemplate(ctx context.Context, tenantID, id uuid.UUID) (*app.Template, error)
	UpdateTemplate(ctx context.Context, t *app.Template) error
	InsertTemplateVersion(ctx context.Context, t *app.Template) error
	CreateTemplates(ctx context.Context, ts []*app.Template) error
	TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*app.Template, error)
	// ListTemplates returns the tenant's templates matching f, by event,
	// then channel, then locale.
	ListTemplates(ctx context.Context, tenantID uuid.UUID, f TemplateFilter, page PageRequest) ([]*app.Template, error)
	// TemplateLocales returns the distinct locales of the tenant's templates.
	TemplateLocales(ctx context.Context, tenantID uuid.UUID) ([]string, error)
	// TemplateByKey returns the tenant's template of an event, channel and
	// locale, active or not.
	TemplateByKey(ctx context.Context, tenantID uuid.UUID, event string, ch app.Channel, locale string) (*app.Template, error)
	// TemplateVersions returns a template's versions, the current one
	// included, newest first.
	TemplateVersions(ctx context.Context, tenantID, templateID uuid.UUID, page PageRequest) ([]*TemplateVersion, error)
	// TemplateVersion returns one earlier version of a template.
	TemplateVersion(ctx context.Context, tenantID, templateID uuid.UUID, version int) (*TemplateVersion, error)
	// SetTemplateActive switches a template on or off for routing.
	SetTemplateActive(ctx context.Context, tenantID, id uuid.UUID, active bool) error
}

// TemplateFilter narrows the console's template list; empty fields match
// everything.
type TemplateFilter struct {
	Event   string
	Channel app.Channel
	Locale  string
	// Active, when set, keeps only active (true) or inactive (false)
	// templates.
	Active *bool
}

// TemplateVersion is one version of a template's content: an earlier one
// from template_versions, or the current one.
type TemplateVersion struct {
	TemplateID       uuid.UUID      `db:"template_id"`
	Version          int            `db:"version"`
	Subject          string         `db:"subject"`
	Body             string         `db:"body"`
	BodyFormat       app.BodyFormat `db:"body_format"`
	WhatsAppTemplate app.JSON       `db:"whatsapp_template"`
	UpdatedBy        *uuid.UUID     `db:"updated_by"`
	// AuthorEmail is the author's address when the author is a user of the
	// tenant (operators' accounts are not the tenant's to read).
	AuthorEmail *string `db:"author_email"`
	// AuthorKey is the name of the tenant's API key that wrote the
	// version, when a key did.
	AuthorKey *string   `db:"author_key"`
	CreatedAt time.Time `db:"created_at"`
	// Current is true for the template's current content.
	Current bool `db:"current"`
}

// Author names who wrote a version, for the history page.
func (v *TemplateVersion) Author() string {
	switch {
	case v.AuthorEmail != nil:
		return *v.AuthorEmail
	case v.AuthorKey != nil:
		return "API key “" + *v.AuthorKey + "”"
	case v.UpdatedBy != nil:
		return "Herald operator"
	default:
		return "Herald (default text)"
	}
}

// Spec decodes the version's WhatsApp template, if any.
func (v *TemplateVersion) Spec() (*app.WhatsAppTemplateSpec, error) {
	t := app.Template{ID: v.TemplateID, WhatsAppTemplate: v.WhatsAppTemplate}
	return t.Spec()
}

// NewTemplateInput is what creating a template takes: its key and its
// content.
type NewTemplateInput struct {
	Event   string
	Channel string
	Locale  string
	app.TemplateInput
	// OverrideDefault lets the new template replace Herald's default text
	// of the same key (the console's editor); without it any existing
	// template of the key is a conflict (the API).
	OverrideDefault bool
}

var (
	metaTemplateName     = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)
	metaTemplateLanguage = regexp.MustCompile(`^[a-z]{2,3}(_[A-Za-z]{2,4})?$`)
)

// validateMetaSpec checks the parts of a Meta template reference that Meta
// itself would reject, so a typo shows in the editor and not as a failed
// send.
func validateMetaSpec(s *app.WhatsAppTemplateSpec) error {
	if s == nil {
		return nil
	}
	if s.Name != "" && !metaTemplateName.MatchString(s.Name) {
		return app.FieldErrorf("whatsapp_template", "Meta template names use lower-case letters, digits and underscores, such as booking_confirmed_v2.")
	}
	if s.Language != "" && !metaTemplateLanguage.MatchString(s.Language) {
		return app.FieldErrorf("whatsapp_template", "Meta template languages are codes such as de, en_US or pt_BR.")
	}
	return nil
}

// TemplateChannelsOf returns the channels a template of the tenant's
// event may be written for: the event's channels plus SMS where WhatsApp
// is one.
func (s *Templates) TemplateChannelsOf(ctx context.Context, tenantID uuid.UUID, event string) []app.Channel {
	def, ok, _ := s.Registry.Known(ctx, tenantID, event)
	if !ok {
		return nil
	}
	return def.TemplateChannels()
}

// List returns one page of the tenant's templates and whether more follow.
func (s *Templates) List(ctx context.Context, u app.Principal, tenantID uuid.UUID, f TemplateFilter, page PageRequest) (rows []*app.Template, more bool, err error) {
	if err := app.RequirePermission(u, app.PermViewTemplates); err != nil {
		return nil, false, err
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) error {
		rows, err = tx.ListTemplates(ctx, tenantID, f, page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rows, more = Page(rows, page)
	return rows, more, nil
}

// Locales returns the locales the tenant has templates in, for filters.
func (s *Templates) Locales(ctx context.Context, u app.Principal, tenantID uuid.UUID) (out []string, err error) {
	if err := app.RequirePermission(u, app.PermViewTemplates); err != nil {
		return nil, err
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) error {
		out, err = tx.TemplateLocales(ctx, tenantID)
		return err
	})
	return out, err
}

// Get returns one of the tenant's templates.
func (s *Templates) Get(ctx context.Context, u app.Principal, tenantID, id uuid.UUID) (t *app.Template, err error) {
	if err := app.RequirePermission(u, app.PermViewTemplates); err != nil {
		return nil, err
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) error {
		t, err = tx.TemplateByID(ctx, tenantID, id)
		return err
	})
	return t, err
}

// Create stores a new template at version 1, active, and returns it with
// the unknown placeholders as warnings. A template for the same event,
// channel and locale is a conflict: edit that one instead.
func (s *Templates) Create(ctx context.Context, u app.Principal, tenantID uuid.UUID, in NewTemplateInput) (*app.Template, []string, error) {
	if err := app.RequirePermission(u, app.PermTemplates); err != nil {
		return nil, nil, err
	}
	def, ok, err := s.Registry.Known(ctx, tenantID, strings.TrimSpace(in.Event))
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		if strings.TrimSpace(in.Event) == "" {
			return nil, nil, app.FieldErrorf("event", "Choose the event this template is for.")
		}
		return nil, nil, app.FieldErrorf("event", "%q is not an event Herald knows.", in.Event)
	}
	ch, ok := app.ParseChannel(strings.TrimSpace(in.Channel))
	if !ok || !slices.Contains(def.TemplateChannels(), ch) {
		if strings.TrimSpace(in.Channel) == "" {
			return nil, nil, app.FieldErrorf("channel", "Choose the channel this template is for.")
		}
		return nil, nil, app.FieldErrorf("channel", "%s is not sent on %q; choose one of %s.", def.Name, in.Channel, channelList(def.TemplateChannels()))
	}
	if strings.TrimSpace(in.Locale) == "" {
		return nil, nil, app.FieldErrorf("locale", "Locale is required (a language tag such as de-DE or en).")
	}
	locale, err := app.NormalizeLocale(strings.TrimSpace(in.Locale))
	if err != nil {
		return nil, nil, app.FieldErrorf("locale", "%s", err.Error())
	}
	if err := validateMetaSpec(in.WhatsAppTemplate); err != nil {
		return nil, nil, err
	}
	warnings, err := app.ValidateTemplate(def, ch, in.TemplateInput)
	if err != nil {
		return nil, nil, err
	}

	now := s.Now()
	actor := u.Actor()
	t := &app.Template{
		ID: uuid.New(), TenantID: tenantID, TriggerEvent: def.Name, Channel: ch, Locale: locale,
		Subject: in.Subject, Body: in.Body, BodyFormat: app.BodyHTML, Version: 1, IsActive: true, UpdatedBy: actor.ID, CreatedAt: now, UpdatedAt: now,
	}
	if ch == app.Email && in.BodyFormat != "" {
		t.BodyFormat = in.BodyFormat
	}
	if in.WhatsAppTemplate != nil {
		t.WhatsAppTemplate, _ = json.Marshal(in.WhatsAppTemplate)
	}
	var existing *app.Template
	err = s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) error {
		cur, err := tx.TemplateByKey(ctx, tenantID, t.TriggerEvent, t.Channel, t.Locale)
		switch {
		case err == nil && in.OverrideDefault && isDefaultText(cur):
			existing = cur
			return nil
		case err == nil:
			return duplicateTemplate(cur)
		case app.ErrorCode(err) != app.ENOTFOUND:
			return err
		}
		if err := app.CheckSMSTemplate(ctx, tx, tenantID, def, t.Channel, t.Locale, t.Body); err != nil {
			return err
		}
		if err := tx.CreateTemplates(ctx, []*app.Template{t}); err != nil {
			// A race with another editor creating the same template.
			if app.ErrorCode(err) == app.ECONFLICT {
				return app.FieldErrorf("locale", "There is already a %s template for %s in %s; edit that one instead.", t.Channel, t.TriggerEvent, t.Locale)
			}
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "template.create", "template", t.ID.String(),
			map[string]any{"version": 1, "event": t.TriggerEvent, "channel": t.Channel, "locale": t.Locale}))
	})
	if err != nil {
		return nil, nil, err
	}
	if existing != nil {
		return s.override(ctx, actor, tenantID, existing, in.TemplateInput)
	}
	return t, warnings, nil
}

// isDefaultText reports whether a template still holds the text Herald
// provisioned, which nobody has saved over.
func isDefaultText(t *app.Template) bool {
	return t.Version == 1 && t.UpdatedBy == nil
}

// override replaces Herald's default text of a template with the tenant's
// own, as its next version (the default stays in the history), and makes
// it active: creating a template for a key the defaults hold is how a
// tenant overrides them. When someone saved over the default in between,
// nothing is stored and the editor links to that template.
func (s *Templates) override(ctx context.Context, actor app.Actor, tenantID uuid.UUID, cur *app.Template, in app.TemplateInput) (*app.Template, []string, error) {
	return s.SaveChecked(ctx, actor, tenantID, cur.ID, in, func(locked *app.Template, in *app.TemplateInput) error {
		if !isDefaultText(locked) {
			return duplicateTemplate(locked)
		}
		in.IsActive = true
		return nil
	})
}

// TemplateExistsError refuses a new template whose event, channel and
// locale the tenant has a template of already; Existing is that template,
// which the editor offers to edit instead.
type TemplateExistsError struct {
	Existing *app.Template
	err      *app.Error
}

func (e *TemplateExistsError) Error() string { return e.err.Error() }

// Unwrap returns the field error on the locale.
func (e *TemplateExistsError) Unwrap() error { return e.err }

func duplicateTemplate(t *app.Template) error {
	return &TemplateExistsError{Existing: t, err: app.FieldErrorf("locale",
		"There is already a %s template for %s in %s (version %d); edit that one instead.", t.Channel, t.TriggerEvent, t.Locale, t.Version)}
}

func channelList(chs []app.Channel) string {
	s := make([]string, len(chs))
	for i, c := range chs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// Edit saves new content for a template (see Save: the version goes up and
// the old content is kept). baseVersion is the version the editor started
// from, and it is required; when someone saved in between, nothing is
// stored and the editor is told, so that one person's changes do not
// silently replace another's. The template's active state is kept.
func (s *Templates) Edit(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, baseVersion int, in app.TemplateInput) (*app.Template, []string, error) {
	if err := app.RequirePermission(u, app.PermTemplates); err != nil {
		return nil, nil, err
	}
	if err := validateMetaSpec(in.WhatsAppTemplate); err != nil {
		return nil, nil, err
	}
	return s.SaveChecked(ctx, u.Actor(), tenantID, id, in, func(cur *app.Template, in *app.TemplateInput) error {
		if err := checkBaseVersion(cur, baseVersion); err != nil {
			return err
		}
		in.IsActive = cur.IsActive
		return nil
	})
}

// checkBaseVersion refuses a change made from an older version than the
// current one (someone saved in between) or from no known version.
func checkBaseVersion(cur *app.Template, baseVersion int) error {
	if baseVersion < 1 {
		return app.Errorf(app.EINVALID, "The form did not say which version of the template you started from, so saving could replace someone else's changes. Copy your changes, reload the page and apply them again.")
	}
	if baseVersion != cur.Version {
		return app.Errorf(app.ECONFLICT, "This template was saved as version %d by someone else while you were working from version %d. Copy your changes, reload the page and apply them again.", cur.Version, baseVersion)
	}
	return nil
}

// History returns one page of a template's versions, the current one first.
func (s *Templates) History(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, page PageRequest) (t *app.Template, rows []*TemplateVersion, more bool, err error) {
	if err := app.RequirePermission(u, app.PermViewTemplates); err != nil {
		return nil, nil, false, err
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) error {
		if t, err = tx.TemplateByID(ctx, tenantID, id); err != nil {
			return err
		}
		rows, err = tx.TemplateVersions(ctx, tenantID, id, page)
		return err
	})
	if err != nil {
		return nil, nil, false, err
	}
	rows, more = Page(rows, page)
	return t, rows, more, nil
}

// TemplateComparison is an earlier version of a template set against its
// current content.
type TemplateComparison struct {
	Template *app.Template
	Version  *TemplateVersion
	Subject  []DiffLine
	Body     []DiffLine
	// WhatsApp compares the Meta template references, one field a line.
	WhatsApp []DiffLine
}

// Changed reports whether the version differs from the current content.
func (c *TemplateComparison) Changed() bool {
	return DiffChanged(c.Subject) || DiffChanged(c.Body) || DiffChanged(c.WhatsApp)
}

// Compare diffs an earlier version of a template against its current
// content, line by line.
func (s *Templates) Compare(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, version int) (*TemplateComparison, error) {
	if err := app.RequirePermission(u, app.PermViewTemplates); err != nil {
		return nil, err
	}
	var c TemplateComparison
	err := s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) (err error) {
		if c.Template, err = tx.TemplateByID(ctx, tenantID, id); err != nil {
			return err
		}
		c.Version, err = tx.TemplateVersion(ctx, tenantID, id, version)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.Subject = DiffLines(c.Version.Subject, c.Template.Subject)
	c.Body = DiffLines(c.Version.Body, c.Template.Body)
	oldSpec, _ := c.Version.Spec()
	newSpec, _ := c.Template.Spec()
	c.WhatsApp = DiffLines(specText(oldSpec), specText(newSpec))
	return &c, nil
}

// specText writes a Meta template reference as lines for a diff.
func specText(s *app.WhatsAppTemplateSpec) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("name: %s\nlanguage: %s\nparameters: %s", s.Name, s.Language, strings.Join(s.Parameters, ", "))
}

// Restore makes an earlier version's content current again, as a new
// version: history only grows, so the restore itself can be undone.
// baseVersion is the current version the page showed (required): when
// someone saved since, nothing is stored and the user is told.
func (s *Templates) Restore(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, version, baseVersion int) (*app.Template, error) {
	if err := app.RequirePermission(u, app.PermTemplates); err != nil {
		return nil, err
	}
	actor := u.Actor()
	var t *app.Template
	err := s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) (err error) {
		if t, err = tx.LockTemplate(ctx, tenantID, id); err != nil {
			return err
		}
		old, err := tx.TemplateVersion(ctx, tenantID, id, version)
		if err != nil {
			return err
		}
		if err := checkBaseVersion(t, baseVersion); err != nil {
			return err
		}
		if def, ok, _ := app.BuiltIn(t.TriggerEvent); ok {
			if err := app.CheckSMSTemplate(ctx, tx, tenantID, def, t.Channel, t.Locale, old.Body); err != nil {
				return err
			}
		}
		if err := tx.InsertTemplateVersion(ctx, t); err != nil {
			return err
		}
		t.Subject, t.Body, t.BodyFormat, t.WhatsAppTemplate = old.Subject, old.Body, old.BodyFormat, old.WhatsAppTemplate
		t.Version++
		t.UpdatedBy, t.UpdatedAt = actor.ID, s.Now()
		if err := tx.UpdateTemplate(ctx, t); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "template.restore", "template", t.ID.String(),
			map[string]any{"version": t.Version, "restored_version": version, "event": t.TriggerEvent, "channel": t.Channel, "locale": t.Locale}))
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// SetActive switches a template on or off. Routing skips an inactive
// template and falls back along the locale chain. The content and its
// version stay as they are.
func (s *Templates) SetActive(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, active bool) (*app.Template, error) {
	if err := app.RequirePermission(u, app.PermTemplates); err != nil {
		return nil, err
	}
	actor := u.Actor()
	var t *app.Template
	err := s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) (err error) {
		if t, err = tx.TemplateByID(ctx, tenantID, id); err != nil {
			return err
		}
		if t.IsActive == active {
			return nil
		}
		if err := tx.SetTemplateActive(ctx, tenantID, id, active); err != nil {
			return err
		}
		t.IsActive = active
		action := "template.deactivate"
		if active {
			action = "template.reactivate"
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, action, "template", t.ID.String(),
			map[string]any{"version": t.Version, "event": t.TriggerEvent, "channel": t.Channel, "locale": t.Locale}))
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// SampleRecipient is the recipient template previews are rendered for.
var SampleRecipient = app.SampleRecipient

// TemplateVariable is one placeholder a template may use, with the value
// previews fill in.
type TemplateVariable struct {
	Name   string
	Sample string
	// Recipient is true for the recipient's fields, which every event has.
	Recipient bool
}

// TemplateVariables lists the placeholders of an event with their sample
// values: the event's context variables, then the recipient's fields.
func TemplateVariables(def *app.EventDef) []TemplateVariable {
	vars := SampleVars(def, nil)
	out := make([]TemplateVariable, 0, len(def.Variables)+len(app.RecipientVariables))
	for _, v := range def.Variables {
		out = append(out, TemplateVariable{Name: v, Sample: vars[v]})
	}
	for _, v := range app.RecipientVariables {
		out = append(out, TemplateVariable{Name: v, Sample: vars[v], Recipient: true})
	}
	return out
}

// SampleVars returns the variables a preview renders with: the event's
// sample context and the sample recipient, as the pipeline would flatten
// them, with overrides for the event's own variables (an editor trying a
// long name, say). Overrides of names the event does not have are ignored.
func SampleVars(def *app.EventDef, overrides map[string]string) map[string]string {
	vars := app.TemplateVars(def.Sample, SampleRecipient)
	known := map[string]bool{}
	for _, v := range def.Variables {
		known[v] = true
	}
	for _, v := range app.RecipientVariables {
		known[v] = true
	}
	for k, v := range overrides {
		if k = strings.ToLower(k); known[k] {
			vars[k] = v
		}
	}
	return vars
}

// TemplatePreview is a template rendered with sample values, exactly as the
// pipeline renders it.
type TemplatePreview struct {
	Channel app.Channel
	Subject string
	Body    string
	// Text is an e-mail's plain-text part, as the e-mail adapter derives
	// it from the HTML.
	Text string
	// Unknown are placeholders the event does not provide: they render
	// empty.
	Unknown []string
	// Parameters are the Meta template's body parameters in order, with
	// their values, when the template names a Meta template.
	Parameters []TemplateVariable
	// Problem says why the content could not be saved as it is (an empty
	// body, an e-mail without subject), if so.
	Problem string
	// SMS is an SMS's count: its encoding and parts as Body is sent.
	SMS *app.SMSCount
	// SMSLimit is the tenant's limit of SMS parts, on an SMS preview.
	SMSLimit int
}

// PreviewTemplate renders content for an event and channel with sample
// values: e-mail bodies with HTML-escaped values, every other channel as
// plain text, as routing does.
// An SMS is shown prepared as it is sent (app.PrepareSMS), with its count,
// and refused past smsLimit parts as saving refuses it.
//
// An e-mail is shown in frame's layout (app.EmailLayout, which the
// dispatcher wraps every e-mail in) when frame is given.
func PreviewTemplate(def *app.EventDef, ch app.Channel, in app.TemplateInput, overrides map[string]string, smsLimit int, frame *app.EmailFrame) *TemplatePreview {
	vars := SampleVars(def, overrides)
	p := &TemplatePreview{Channel: ch}
	p.Body, _ = app.Render(in.Body, vars, false)
	if ch == app.Email {
		p.Body, _ = app.RenderEmailBody(in.Body, in.BodyFormat, vars)
	}
	if ch == app.SMS {
		body, c := app.PrepareSMS(p.Body)
		p.Body, p.SMS, p.SMSLimit = body, &c, smsLimit
	}
	subject, _ := app.Render(in.Subject, vars, false)
	p.Subject = strings.TrimSpace(subject)
	if ch == app.Email && frame != nil {
		p.Body = app.EmailLayout(*frame, p.Subject, p.Body)
	}
	if ch == app.Email {
		p.Text = ses.PlainText(p.Body)
	}
	if _, err := app.ValidateTemplate(def, ch, in); err != nil {
		p.Problem = app.ErrorMessage(err)
	} else if err := validateMetaSpec(in.WhatsAppTemplate); err != nil {
		p.Problem = app.ErrorMessage(err)
	} else if p.SMS != nil && p.SMS.Parts > smsLimit {
		p.Problem = app.ErrorMessage(app.TooManySMSParts("This SMS, rendered with these sample values,", *p.SMS, smsLimit)) +
			" It cannot be saved so."
	}
	p.Unknown = app.UnknownPlaceholders(def, in.Subject+" "+in.Body)
	if s := in.WhatsAppTemplate; s != nil && ch == app.WhatsApp {
		for _, name := range s.Parameters {
			p.Parameters = append(p.Parameters, TemplateVariable{Name: name, Sample: vars[strings.ToLower(name)]})
		}
	}
	return p
}

// SMSPartsLimit is the tenant's limit of SMS parts, which previews show.
func (s *Templates) SMSPartsLimit(ctx context.Context, u app.Principal, tenantID uuid.UUID) (int, error) {
	if err := app.RequirePermission(u, app.PermViewTemplates); err != nil {
		return 0, err
	}
	limit := app.DefaultMaxSMSParts
	err := s.Store.InTenant(ctx, tenantID, func(tx TemplateTx) error {
		set, err := tx.LimitSettings(ctx, tenantID)
		if err == nil && set.MaxSMSParts != nil {
			limit = *set.MaxSMSParts
		}
		return err
	})
	return limit, err
}
