package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const templateColumns = `id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active, updated_by, created_at, updated_at`

// CreateTemplates implements app.TemplateStore with one multi-row insert.
func (t *Tx) CreateTemplates(ctx context.Context, ts []*app.Template) error {
	if len(ts) == 0 {
		return nil
	}
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO templates (`+templateColumns+`)
		VALUES (:id, :tenant_id, :trigger_event, :channel, :locale, :subject, :body, :whatsapp_template, :version, :is_active, :updated_by, :created_at, :updated_at)`, ts)
	return mapErr(err)
}

// TemplateByID implements app.TemplateStore.
func (t *Tx) TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*app.Template, error) {
	var tp app.Template
	err := t.tx.GetContext(ctx, &tp, `SELECT `+templateColumns+` FROM templates WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Template %s not found.", id)
	}
	return &tp, nil
}

// FindTemplate implements app.TemplateStore: the first locale of the chain
// with an active template wins.
func (t *Tx) FindTemplate(ctx context.Context, tenantID uuid.UUID, event string, ch app.Channel, locales []string) (*app.Template, error) {
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

// UpdateTemplate implements app.TemplateStore.
func (t *Tx) UpdateTemplate(ctx context.Context, tp *app.Template) error {
	_, err := t.tx.NamedExecContext(ctx, `
		UPDATE templates SET subject = :subject, body = :body, whatsapp_template = :whatsapp_template,
			version = :version, is_active = :is_active, updated_by = :updated_by, updated_at = :updated_at
		WHERE tenant_id = :tenant_id AND id = :id`, tp)
	return mapErr(err)
}

// InsertTemplateVersion implements app.TemplateStore: it keeps the template's
// current content before an update replaces it.
func (t *Tx) InsertTemplateVersion(ctx context.Context, tp *app.Template) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
		VALUES (:id, :version, :tenant_id, :subject, :body, :whatsapp_template, :is_active, :updated_by, :updated_at)`, tp)
	return mapErr(err)
}
