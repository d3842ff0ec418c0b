package db

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// ListTemplates implements console.TemplateConsoleStore.
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
		ORDER BY updated_at DESC, id DESC
		LIMIT $`+fmt.Sprint(len(args)-1)+` OFFSET $`+fmt.Sprint(len(args)), args...)
	return out, mapErr(err)
}

// TemplateLocales implements console.TemplateConsoleStore.
func (t *Tx) TemplateLocales(ctx context.Context, tenantID uuid.UUID) ([]string, error) {
	var out []string
	err := t.tx.SelectContext(ctx, &out, `SELECT DISTINCT locale FROM templates WHERE tenant_id = $1 ORDER BY locale`, tenantID)
	return out, mapErr(err)
}

// TemplateByKey implements console.TemplateConsoleStore.
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
// user of the tenant.
const templateVersionsQuery = `
	SELECT v.template_id, v.version, v.subject, v.body, v.whatsapp_template, v.updated_by, v.created_at, v.current,
		u.email AS author_email
	FROM (
		SELECT template_id, version, subject, body, whatsapp_template, updated_by, created_at, false AS current
		FROM template_versions WHERE tenant_id = $1 AND template_id = $2
		UNION ALL
		SELECT id, version, subject, body, whatsapp_template, updated_by, updated_at, true
		FROM templates WHERE tenant_id = $1 AND id = $2
	) v
	LEFT JOIN users u ON u.id = v.updated_by AND u.tenant_id = $1`

// TemplateVersions implements console.TemplateConsoleStore.
func (t *Tx) TemplateVersions(ctx context.Context, tenantID, templateID uuid.UUID, page console.PageRequest) ([]*console.TemplateVersion, error) {
	var out []*console.TemplateVersion
	err := t.tx.SelectContext(ctx, &out, templateVersionsQuery+`
		ORDER BY v.version DESC, v.current DESC
		LIMIT $3 OFFSET $4`, tenantID, templateID, page.Limit, page.Offset)
	return out, mapErr(err)
}

// TemplateVersion implements console.TemplateConsoleStore: only earlier
// versions, the kept history.
func (t *Tx) TemplateVersion(ctx context.Context, tenantID, templateID uuid.UUID, version int) (*console.TemplateVersion, error) {
	var v console.TemplateVersion
	err := t.tx.GetContext(ctx, &v, templateVersionsQuery+` WHERE NOT v.current AND v.version = $3`, tenantID, templateID, version)
	if err != nil {
		return nil, notFound(err, "Template %s has no earlier version %d.", templateID, version)
	}
	return &v, nil
}

// LockTemplate implements console.TemplateConsoleStore.
func (t *Tx) LockTemplate(ctx context.Context, tenantID, id uuid.UUID) (*app.Template, error) {
	var tp app.Template
	err := t.tx.GetContext(ctx, &tp, `SELECT `+templateColumns+` FROM templates WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Template %s not found.", id)
	}
	return &tp, nil
}

// SetTemplateActive implements console.TemplateConsoleStore.
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
