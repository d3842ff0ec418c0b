package db

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

const templateColumns = `id, tenant_id, trigger_event, channel, locale, subject, body, body_format, whatsapp_template, version, is_active, updated_by, created_at, updated_at`

// CreateTemplates serves app.ProvisionTx and console.TemplateTx. with one
// multi-row insert.
func (t *Tx) CreateTemplates(ctx context.Context, ts []*app.Template) error {
	if len(ts) == 0 {
		return nil
	}
	for _, tp := range ts {
		tp.BodyFormat = cmp.Or(tp.BodyFormat, app.BodyHTML)
	}
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO templates (`+templateColumns+`)
		VALUES (:id, :tenant_id, :trigger_event, :channel, :locale, :subject, :body, :body_format, :whatsapp_template, :version, :is_active, :updated_by, :created_at, :updated_at)`, ts)
	return mapErr(err)
}

// TemplateByID serves app.DispatchTx, app.MessagesTx, console.MessageTx and
// console.TemplateTx.
func (t *Tx) TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*app.Template, error) {
	var tp app.Template
	err := t.tx.GetContext(ctx, &tp, `SELECT `+templateColumns+` FROM templates WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Template %s not found.", id)
	}
	return &tp, nil
}

// FindTemplate serves app.PlanTx: the first locale of the chain with an
// active template wins.
func (t *Tx) FindTemplate(ctx context.Context, tenantID uuid.UUID, event string, ch app.Channel, locales []string) (*app.Template, error) {
	if tp, ok := t.route.findTemplate(tenantID, event, ch, locales); ok {
		if tp == nil {
			return nil, app.Errorf(app.ENOTFOUND, "No active %s template for %s in %v.", ch, event, locales)
		}
		return tp, nil
	}
	var tp app.Template
	err := t.tx.GetContext(ctx, &tp, `
		SELECT `+templateColumns+` FROM templates
		WHERE tenant_id = $1 AND trigger_event = $2 AND channel = $3 AND is_active AND locale = ANY($4)
		ORDER BY array_position($4, locale) LIMIT 1`, tenantID, event, ch, app.StringList(locales))
	if err != nil {
		return nil, notFound(err, "No active %s template for %s in %v.", ch, event, locales)
	}
	return &tp, nil
}

// UpdateTemplate serves app.TemplateTx and console.TemplateTx.
func (t *Tx) UpdateTemplate(ctx context.Context, tp *app.Template) error {
	// A template made in code without a format is HTML, as every body
	// was before formats existed.
	tp.BodyFormat = cmp.Or(tp.BodyFormat, app.BodyHTML)
	_, err := t.tx.NamedExecContext(ctx, `
		UPDATE templates SET subject = :subject, body = :body, body_format = :body_format, whatsapp_template = :whatsapp_template,
			version = :version, is_active = :is_active, updated_by = :updated_by, updated_at = :updated_at
		WHERE tenant_id = :tenant_id AND id = :id`, tp)
	return mapErr(err)
}

// InsertTemplateVersion serves app.TemplateTx and console.TemplateTx: it
// keeps the template's current content before an update replaces it.
func (t *Tx) InsertTemplateVersion(ctx context.Context, tp *app.Template) error {
	tp.BodyFormat = cmp.Or(tp.BodyFormat, app.BodyHTML)
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO template_versions (template_id, version, tenant_id, subject, body, body_format, whatsapp_template, is_active, updated_by, created_at)
		VALUES (:id, :version, :tenant_id, :subject, :body, :body_format, :whatsapp_template, :is_active, :updated_by, :updated_at)`, tp)
	return mapErr(err)
}

// ListTemplates serves console.TemplateTx.
func (t *Tx) ListTemplates(ctx context.Context, tenantID uuid.UUID, f console.TemplateFilter, page console.PageRequest) ([]*app.Template, error) {
	where, args := []string{"tenant_id = $1"}, []any{tenantID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Event != "" {
		add("trigger_event = $%d", f.Event)
	}
	if f.Channel != "" {
		add("channel = $%d", f.Channel)
	}
	if f.Locale != "" {
		add("locale = $%d", f.Locale)
	}
	if f.Active != nil {
		add("is_active = $%d", *f.Active)
	}
	args = append(args, page.Limit, page.Offset)
	var out []*app.Template
	err := t.tx.SelectContext(ctx, &out, `
		SELECT `+templateColumns+` FROM templates
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY trigger_event, channel, locale, id
		LIMIT $`+fmt.Sprint(len(args)-1)+` OFFSET $`+fmt.Sprint(len(args)), args...)
	return out, mapErr(err)
}

// TemplateLocales serves console.TemplateTx.
func (t *Tx) TemplateLocales(ctx context.Context, tenantID uuid.UUID) ([]string, error) {
	var out []string
	err := t.tx.SelectContext(ctx, &out, `SELECT DISTINCT locale FROM templates WHERE tenant_id = $1 ORDER BY locale`, tenantID)
	return out, mapErr(err)
}

// TemplateByKey serves console.TemplateTx.
func (t *Tx) TemplateByKey(ctx context.Context, tenantID uuid.UUID, event string, ch app.Channel, locale string) (*app.Template, error) {
	var tp app.Template
	err := t.tx.GetContext(ctx, &tp, `
		SELECT `+templateColumns+` FROM templates
		WHERE tenant_id = $1 AND trigger_event = $2 AND channel = $3 AND locale = $4`, tenantID, event, ch, locale)
	if err != nil {
		return nil, notFound(err, "No %s template for %s in %s.", ch, event, locale)
	}
	return &tp, nil
}

// templateVersionsQuery unites a template's earlier versions with its
// current content, each with its author's address where the author is a
// user of the tenant, or its name where it is one of the tenant's API keys.
const templateVersionsQuery = `
	SELECT v.template_id, v.version, v.subject, v.body, v.body_format, v.whatsapp_template, v.updated_by, v.created_at, v.current,
		u.email AS author_email, k.name AS author_key
	FROM (
		SELECT template_id, version, subject, body, body_format, whatsapp_template, updated_by, created_at, false AS current
		FROM template_versions WHERE tenant_id = $1 AND template_id = $2
		UNION ALL
		SELECT id, version, subject, body, body_format, whatsapp_template, updated_by, updated_at, true
		FROM templates WHERE tenant_id = $1 AND id = $2
	) v
	LEFT JOIN users u ON u.id = v.updated_by AND u.tenant_id = $1
	LEFT JOIN api_keys k ON k.id = v.updated_by AND k.tenant_id = $1`

// TemplateVersions serves console.TemplateTx.
func (t *Tx) TemplateVersions(ctx context.Context, tenantID, templateID uuid.UUID, page console.PageRequest) ([]*console.TemplateVersion, error) {
	var out []*console.TemplateVersion
	err := t.tx.SelectContext(ctx, &out, templateVersionsQuery+`
		ORDER BY v.version DESC, v.current DESC
		LIMIT $3 OFFSET $4`, tenantID, templateID, page.Limit, page.Offset)
	return out, mapErr(err)
}

// TemplateVersion serves console.TemplateTx: only earlier versions, the kept
// history.
func (t *Tx) TemplateVersion(ctx context.Context, tenantID, templateID uuid.UUID, version int) (*console.TemplateVersion, error) {
	var v console.TemplateVersion
	err := t.tx.GetContext(ctx, &v, templateVersionsQuery+` WHERE NOT v.current AND v.version = $3`, tenantID, templateID, version)
	if err != nil {
		return nil, notFound(err, "Template %s has no earlier version %d.", templateID, version)
	}
	return &v, nil
}

// LockTemplate returns one of the tenant's templates and locks its row until
// the transaction ends, so that saves and restores of it run one after the
// other. It serves app.TemplateTx and console.TemplateTx.
func (t *Tx) LockTemplate(ctx context.Context, tenantID, id uuid.UUID) (*app.Template, error) {
	var tp app.Template
	err := t.tx.GetContext(ctx, &tp, `SELECT `+templateColumns+` FROM templates WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Template %s not found.", id)
	}
	return &tp, nil
}

// SetTemplateActive serves console.TemplateTx.
func (t *Tx) SetTemplateActive(ctx context.Context, tenantID, id uuid.UUID, active bool) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE templates SET is_active = $3 WHERE tenant_id = $1 AND id = $2`, tenantID, id, active)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "Template %s not found.", id)
	}
	return nil
}
