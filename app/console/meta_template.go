package console

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// MetaTemplateTx serves the console's Meta template page.
type MetaTemplateTx interface {
	app.Tx
	AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*app.ChannelAccount, error)
	MetaTemplates(ctx context.Context, tenantID, accountID uuid.UUID) ([]*app.MetaTemplate, error)
	WhatsAppTemplates(ctx context.Context, tenantID uuid.UUID) ([]*app.Template, error)
	AccountsByProvider(ctx context.Context, tenantID uuid.UUID, provider string) ([]*app.ChannelAccount, error)
	MetaTemplate(ctx context.Context, tenantID, accountID uuid.UUID, name, language string) (*app.MetaTemplate, error)
}

// MetaStatus is what one WhatsApp account's WABA says about a Meta
// template: nil Meta when it has none of that name and language.
type MetaStatus struct {
	Account *app.ChannelAccount
	Meta    *app.MetaTemplate
}

// MetaTemplatePage is a WhatsApp account's Meta templates, and Herald's
// WhatsApp templates with what Meta says about the Meta template each
// names.
type MetaTemplatePage struct {
	Account *app.ChannelAccount
	// WABA is the account's WhatsApp Business Account id; without it
	// nothing can be synced or submitted.
	WABA string
	// Meta lists the WABA's templates as last synced.
	Meta []*app.MetaTemplate
	// SyncedAt is the newest sync or review recorded, if any.
	SyncedAt *time.Time
	Herald   []*HeraldWhatsApp
}

// HeraldWhatsApp is one of Herald's WhatsApp templates on the Meta page.
type HeraldWhatsApp struct {
	Template *app.Template
	// Spec is the Meta template it names, nil when none.
	Spec *app.WhatsAppTemplateSpec
	// Meta is Meta's record of it, nil when Meta has none.
	Meta *app.MetaTemplate
}

// Approved reports whether Meta approved the Meta template.
func (h *HeraldWhatsApp) Approved() bool { return h.Meta.Approved() }

// CanSubmit reports whether submitting makes sense: the template names a
// Meta template that Meta has not approved and is not reviewing.
func (h *HeraldWhatsApp) CanSubmit() bool {
	return h.Spec != nil && (h.Meta == nil || (h.Meta.Status != app.MetaTemplateApproved && h.Meta.Status != app.MetaTemplatePending))
}

// MetaTemplates serves the console's Meta template page: the listing,
// refreshing it from Meta, and submitting a Herald template for review.
type MetaTemplates struct {
	*app.MetaTemplates
	Store app.Store[MetaTemplateTx]
}

// Page returns the account's Meta template page.
func (s *MetaTemplates) Page(ctx context.Context, u *app.User, tenantID, accountID uuid.UUID) (*MetaTemplatePage, error) {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return nil, err
	}
	p := &MetaTemplatePage{}
	var ts []*app.Template
	err := s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) (err error) {
		if p.Account, err = tx.AccountByID(ctx, tenantID, accountID); err != nil {
			return err
		}
		if p.Account.Provider != "meta" {
			return app.Errorf(app.ENOTFOUND, "Channel account %s has no Meta templates.", accountID)
		}
		if p.Meta, err = tx.MetaTemplates(ctx, tenantID, accountID); err != nil {
			return err
		}
		ts, err = tx.WhatsAppTemplates(ctx, tenantID)
		return err
	})
	if err != nil {
		return nil, err
	}
	p.WABA = p.Account.Config["waba_id"]
	byKey := map[string]*app.MetaTemplate{}
	for _, mt := range p.Meta {
		byKey[mt.Name+"\x00"+mt.Language] = mt
		if p.SyncedAt == nil || mt.SyncedAt.After(*p.SyncedAt) {
			at := mt.SyncedAt
			p.SyncedAt = &at
		}
	}
	for _, t := range ts {
		h := &HeraldWhatsApp{Template: t}
		// A template whose Meta reference does not decode shows as naming
		// none; the template editor reports the problem.
		if spec, err := t.Spec(); err == nil && spec != nil {
			h.Spec = spec
			h.Meta = byKey[spec.Name+"\x00"+spec.Language]
		}
		p.Herald = append(p.Herald, h)
	}
	return p, nil
}

// Refresh lists the account's templates from Meta now.
func (s *MetaTemplates) Refresh(ctx context.Context, u *app.User, tenantID, accountID uuid.UUID) (int, error) {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return 0, err
	}
	ts, err := s.Sync(ctx, tenantID, accountID)
	return len(ts), err
}

// SubmitTemplate sends a Herald WhatsApp template (its id as the form
// sent it) to Meta for review. The account is checked first, so that an
// account of another tenant is unknown whatever the form holds.
func (s *MetaTemplates) SubmitTemplate(ctx context.Context, u *app.User, tenantID, accountID uuid.UUID, templateID string) (*app.MetaTemplate, error) {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return nil, err
	}
	if err := s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) error {
		_, err := tx.AccountByID(ctx, tenantID, accountID)
		return err
	}); err != nil {
		return nil, err
	}
	id, err := uuid.Parse(strings.TrimSpace(templateID))
	if err != nil {
		return nil, app.FieldErrorf("template_id", "Choose one of the WhatsApp templates to submit.")
	}
	return s.Submit(ctx, u.Actor(), tenantID, accountID, id)
}

// StatusOf returns, for each of the tenant's WhatsApp (Meta) accounts,
// what Meta says about the Meta template a Herald template names, for the
// template editor.
func (s *MetaTemplates) StatusOf(ctx context.Context, tenantID uuid.UUID, spec *app.WhatsAppTemplateSpec) ([]MetaStatus, error) {
	if spec == nil {
		return nil, nil
	}
	var out []MetaStatus
	err := s.Store.InTenant(ctx, tenantID, func(tx MetaTemplateTx) error {
		as, err := tx.AccountsByProvider(ctx, tenantID, "meta")
		if err != nil {
			return err
		}
		for _, a := range as {
			st := MetaStatus{Account: a}
			st.Meta, err = tx.MetaTemplate(ctx, tenantID, a.ID, spec.Name, spec.Language)
			if err != nil && app.ErrorCode(err) != app.ENOTFOUND {
				return err
			}
			out = append(out, st)
		}
		return nil
	})
	return out, err
}
