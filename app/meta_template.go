package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// MetaTemplateTx lists the statements MetaTemplates runs.
type MetaTemplateTx interface {
	// EventReader resolves the tenant's events (LookupEvent).
	EventReader
	Tx
	AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*ChannelAccount, error)
	AccountByWABA(ctx context.Context, tenantID uuid.UUID, wabaID string) (*ChannelAccount, error)
	MetaAccounts(ctx context.Context) ([]*ChannelAccount, error)
	MetaTemplates(ctx context.Context, tenantID, accountID uuid.UUID) ([]*MetaTemplate, error)
	ReplaceMetaTemplates(ctx context.Context, tenantID, accountID uuid.UUID, ts []*MetaTemplate) error
	UpsertMetaTemplate(ctx context.Context, mt *MetaTemplate) error
	TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*Template, error)
	MetaTemplate(ctx context.Context, tenantID, accountID uuid.UUID, name, language string) (*MetaTemplate, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// MetaTemplateUpdate is Meta's review of one template, from the
// message_template_status_update webhook.
type MetaTemplateUpdate struct {
	WABAID, Event, TemplateID, Name, Language, Category, Reason string
}

// MetaTemplates keeps Herald's copy of each WhatsApp account's Meta message
// templates and their review status (which the dispatcher consults before
// it opens a conversation), and submits Herald's templates for review.
type MetaTemplates struct {
	Store    Store[MetaTemplateTx]
	Accounts *Accounts
	// Catalog talks to Meta's template endpoints; nil refuses every sync.
	Catalog provider.TemplateCatalog
	Now     Clock
	Log     *slog.Logger
}

// metaAccount loads a tenant's account and checks it keeps Meta templates.
func (s *MetaTemplates) metaAccount(ctx context.Context, tenantID, accountID uuid.UUID) (*ChannelAccount, provider.Account, error) {
	var a *ChannelAccount
	err := s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) (err error) {
		a, err = tx.AccountByID(ctx, tenantID, accountID)
		return err
	})
	if err != nil {
		return nil, provider.Account{}, err
	}
	switch {
	case a.Provider != "meta":
		return nil, provider.Account{}, Errorf(EINVALID, "Only WhatsApp (Meta) accounts have message templates.")
	case strings.TrimSpace(a.Config["waba_id"]) == "":
		return nil, provider.Account{}, Errorf(EINVALID, "Set the account's WhatsApp Business Account id (waba_id) to see its templates.")
	case s.Catalog == nil:
		return nil, provider.Account{}, Errorf(EINVALID, "This server has no Meta template client configured.")
	}
	secrets, err := s.Accounts.Open(a)
	if err != nil {
		return nil, provider.Account{}, fmt.Errorf("channel account %s: %w", a.ID, err)
	}
	return a, provider.Account{ID: a.ID, TenantID: a.TenantID, Provider: a.Provider, Config: a.Config, Secrets: secrets}, nil
}

// metaRefusal turns a Graph API failure into an error the console shows.
func metaRefusal(what string, err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return Errorf(EINVALID, "Meta refused to %s: %s (%s).", what, pe.Reason, pe.Code)
	}
	return err
}

// Sync replaces Herald's copy of the account's Meta templates with what
// the Graph API lists now, and returns it.
func (s *MetaTemplates) Sync(ctx context.Context, tenantID, accountID uuid.UUID) ([]*MetaTemplate, error) {
	a, pa, err := s.metaAccount(ctx, tenantID, accountID)
	if err != nil {
		return nil, err
	}
	// The Graph call runs outside any transaction: no row waits on Meta.
	listed, err := s.Catalog.ListTemplates(ctx, pa)
	if err != nil {
		return nil, metaRefusal("list the account's templates", err)
	}
	now := s.Now()
	ts := make([]*MetaTemplate, 0, len(listed))
	seen := map[string]bool{}
	for _, l := range listed {
		if key := l.Name + "\x00" + l.Language; !seen[key] {
			seen[key] = true
			ts = append(ts, &MetaTemplate{TenantID: tenantID, ChannelAccountID: a.ID, Name: l.Name, Language: l.Language,
				MetaID: l.ID, Status: l.Status, Category: l.Category, RejectedReason: l.RejectedReason, Body: l.Body, HeaderFormat: l.HeaderFormat, SyncedAt: now})
		}
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) error {
		return tx.ReplaceMetaTemplates(ctx, tenantID, a.ID, ts)
	})
	if err != nil {
		return nil, err
	}
	return ts, nil
}

// SyncAll syncs every tenant's Meta accounts that have a WABA; one
// account's failure (an expired token) is logged and does not stop the
// others. It returns how many synced and how many failed.
func (s *MetaTemplates) SyncAll(ctx context.Context) (synced, failed int, err error) {
	var as []*ChannelAccount
	if err := s.Store.InPlatform(ctx, func(tx MetaTemplateTx) (err error) {
		as, err = tx.MetaAccounts(ctx)
		return err
	}); err != nil {
		return 0, 0, err
	}
	for _, a := range as {
		if err := ctx.Err(); err != nil {
			return synced, failed, err
		}
		if _, err := s.Sync(ctx, a.TenantID, a.ID); err != nil {
			failed++
			s.Log.WarnContext(ctx, "Meta template sync failed", "tenant_id", a.TenantID, "channel_account_id", a.ID, "err", err)
			continue
		}
		synced++
	}
	return synced, failed, nil
}

// Submit sends a Herald WhatsApp template's Meta template to Meta for
// review through the account, records Meta's answer (usually PENDING) and
// audits it. The body submitted is the template's stored Meta body, or,
// when the text changed since, one derived from the text, whose
// parameters must then be the ones the template names.
func (s *MetaTemplates) Submit(ctx context.Context, actor Actor, tenantID, accountID, templateID uuid.UUID) (*MetaTemplate, error) {
	a, pa, err := s.metaAccount(ctx, tenantID, accountID)
	if err != nil {
		return nil, err
	}
	var t *Template
	var event *EventDef
	if err := s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) (err error) {
		if t, err = tx.TemplateByID(ctx, tenantID, templateID); err != nil {
			return err
		}
		event, err = LookupEvent(ctx, tx, tenantID, t.TriggerEvent)
		if ErrorCode(err) == ENOTFOUND {
			return Errorf(EINVALID, "Template %s is for unknown event %s.", t.ID, t.TriggerEvent)
		}
		return err
	}); err != nil {
		return nil, err
	}
	draft, err := submission(t, event)
	if err != nil {
		return nil, err
	}
	// Meta keeps one template per name and language: one it rejected or
	// paused is edited and reviewed again rather than created anew.
	if err := s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) error {
		known, err := tx.MetaTemplate(ctx, tenantID, a.ID, draft.Name, draft.Language)
		switch {
		case ErrorCode(err) == ENOTFOUND:
			return nil
		case err != nil:
			return err
		case known.Status == MetaTemplateApproved || known.Status == MetaTemplatePending:
			return Errorf(EINVALID, "Meta template %s (%s) is already %s.", known.Name, known.Language, known.Status)
		}
		draft.ID = known.MetaID
		return nil
	}); err != nil {
		return nil, err
	}
	created, err := s.Catalog.SubmitTemplate(ctx, pa, draft)
	if err != nil {
		return nil, metaRefusal("accept the template", err)
	}
	mt := &MetaTemplate{TenantID: tenantID, ChannelAccountID: a.ID, Name: draft.Name, Language: draft.Language,
		MetaID: created.ID, Status: created.Status, Category: created.Category, Body: draft.Body,
		HeaderFormat: created.HeaderFormat, SyncedAt: s.Now()}
	if mt.Status == "" {
		mt.Status = MetaTemplatePending
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) error {
		if err := tx.UpsertMetaTemplate(ctx, mt); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "meta_template.submit", "channel_account", a.ID.String(),
			map[string]any{"template_id": t.ID, "name": mt.Name, "language": mt.Language, "category": mt.Category,
				"meta_id": mt.MetaID, "status": mt.Status, "edited": draft.ID != "", "header": draft.Header}))
	})
	if err != nil {
		return nil, err
	}
	return mt, nil
}

// submission is what Submit sends for a template.
func submission(t *Template, event *EventDef) (provider.TemplateDraft, error) {
	if t.Channel != WhatsApp {
		return provider.TemplateDraft{}, Errorf(EINVALID, "Only WhatsApp templates are submitted to Meta.")
	}
	spec, err := t.Spec()
	if err != nil {
		return provider.TemplateDraft{}, err
	}
	if spec == nil {
		return provider.TemplateDraft{}, Errorf(EINVALID, "The template names no Meta template; give it a name and language first.")
	}
	if spec.Body == "" {
		derived, err := DeriveMetaTemplate(event, t.Locale, t.Body)
		if err != nil {
			return provider.TemplateDraft{}, Errorf(EINVALID, "The text cannot be a Meta template: %s", ErrorMessage(err))
		}
		if !slices.Equal(derived.Parameters, spec.Parameters) {
			return provider.TemplateDraft{}, Errorf(EINVALID,
				"The text uses the variables %s in this order, but the template's Meta parameters are %s; make them the same before submitting.",
				strings.Join(derived.Parameters, ", "), strings.Join(spec.Parameters, ", "))
		}
		spec.Body = derived.Body
	}
	if spec.Category == "" {
		spec.Category = MetaCategoryUtility
	}
	if err := ValidateMetaTemplate(spec); err != nil {
		return provider.TemplateDraft{}, err
	}
	examples := make([]string, len(spec.Parameters))
	for i, p := range spec.Parameters {
		examples[i] = sampleValue(event, p)
	}
	sample, err := headerSample(spec.Header)
	if err != nil {
		return provider.TemplateDraft{}, err
	}
	return provider.TemplateDraft{Name: spec.Name, Language: spec.Language, Category: spec.Category, Body: spec.Body, Examples: examples,
		Header: spec.Header, HeaderSample: sample}, nil
}

// sampleValue is the example Meta's reviewers see for a parameter: the
// event's sample value, or a made-up recipient.
func sampleValue(event *EventDef, name string) string {
	if v, ok := event.Sample[name]; ok {
		return Stringify(v)
	}
	switch name {
	case "recipient_name":
		return "Anna Schmidt"
	case "recipient_phone":
		return "+49 151 23456789"
	case "recipient_email":
		return "anna@example.com"
	}
	return name
}

// ApplyStatusUpdate records Meta's review of a template of one of the
// tenant's accounts (matched by the WABA the webhook names, among this
// tenant's accounts only). It reports whether an account matched.
func (s *MetaTemplates) ApplyStatusUpdate(ctx context.Context, tenantID uuid.UUID, u MetaTemplateUpdate) (bool, error) {
	status := u.Event
	if status == "REINSTATED" {
		// A paused template Meta lets send again.
		status = MetaTemplateApproved
	}
	applied := false
	err := s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) error {
		a, err := tx.AccountByWABA(ctx, tenantID, u.WABAID)
		if ErrorCode(err) == ENOTFOUND {
			return nil
		} else if err != nil {
			return err
		}
		applied = true
		reason := u.Reason
		if status == MetaTemplateApproved {
			reason = ""
		}
		if err := tx.UpsertMetaTemplate(ctx, &MetaTemplate{TenantID: tenantID, ChannelAccountID: a.ID, Name: u.Name,
			Language: u.Language, MetaID: u.TemplateID, Status: status, Category: u.Category, RejectedReason: reason,
			SyncedAt: s.Now()}); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, SystemActor.Entry(&tenantID, "meta_template.status", "channel_account", a.ID.String(),
			map[string]any{"name": u.Name, "language": u.Language, "status": status, "reason": u.Reason}))
	})
	return applied, err
}
