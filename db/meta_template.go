package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const metaTemplateColumns = `tenant_id, channel_account_id, name, language, meta_id, status, category, rejected_reason, body, header_format, synced_at`

// MetaTemplate returns one of an account's Meta templates by name and
// language. It serves app.DispatchTx.
func (t *Tx) MetaTemplate(ctx context.Context, tenantID, accountID uuid.UUID, name, language string) (*app.MetaTemplate, error) {
	var mt app.MetaTemplate
	err := t.tx.GetContext(ctx, &mt, `
		SELECT `+metaTemplateColumns+` FROM meta_templates
		WHERE tenant_id = $1 AND channel_account_id = $2 AND name = $3 AND language = $4`, tenantID, accountID, name, language)
	if err != nil {
		return nil, notFound(err, "Meta template %s (%s) is not known.", name, language)
	}
	return &mt, nil
}

// MetaTemplates lists an account's Meta templates by name and language. It
// serves app.MetaTemplateTx.
func (t *Tx) MetaTemplates(ctx context.Context, tenantID, accountID uuid.UUID) ([]*app.MetaTemplate, error) {
	ts := []*app.MetaTemplate{}
	err := t.tx.SelectContext(ctx, &ts, `
		SELECT `+metaTemplateColumns+` FROM meta_templates
		WHERE tenant_id = $1 AND channel_account_id = $2 ORDER BY name, language`, tenantID, accountID)
	return ts, mapErr(err)
}

// ReplaceMetaTemplates makes ts the account's Meta templates: Meta's list is
// the truth, so templates deleted in WhatsApp Manager disappear. It serves
// app.MetaTemplateTx.
func (t *Tx) ReplaceMetaTemplates(ctx context.Context, tenantID, accountID uuid.UUID, ts []*app.MetaTemplate) error {
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM meta_templates WHERE tenant_id = $1 AND channel_account_id = $2`, tenantID, accountID); err != nil {
		return mapErr(err)
	}
	for _, mt := range ts {
		if err := t.UpsertMetaTemplate(ctx, mt); err != nil {
			return err
		}
	}
	return nil
}

// UpsertMetaTemplate records one Meta template as reported. It serves
// app.MetaTemplateTx.
func (t *Tx) UpsertMetaTemplate(ctx context.Context, mt *app.MetaTemplate) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO meta_templates (`+metaTemplateColumns+`)
		VALUES (:tenant_id, :channel_account_id, :name, :language, :meta_id, :status, :category, :rejected_reason, :body, :header_format, :synced_at)
		ON CONFLICT (tenant_id, channel_account_id, name, language) DO UPDATE SET
			meta_id = coalesce(nullif(EXCLUDED.meta_id, ''), meta_templates.meta_id),
			status = EXCLUDED.status,
			category = coalesce(nullif(EXCLUDED.category, ''), meta_templates.category),
			rejected_reason = EXCLUDED.rejected_reason,
			body = coalesce(nullif(EXCLUDED.body, ''), meta_templates.body),
			-- A status webhook says nothing of the header, so it keeps the
			-- format the last sync read.
			header_format = coalesce(nullif(EXCLUDED.header_format, ''), meta_templates.header_format),
			synced_at = EXCLUDED.synced_at`, mt)
	return mapErr(err)
}

// AccountByWABA returns the tenant's Meta account (not DISABLED) whose
// configured waba_id is wabaID. It serves app.MetaTemplateTx.
func (t *Tx) AccountByWABA(ctx context.Context, tenantID uuid.UUID, wabaID string) (*app.ChannelAccount, error) {
	var a app.ChannelAccount
	err := t.tx.GetContext(ctx, &a, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE tenant_id = $1 AND provider = 'meta' AND status <> 'DISABLED' AND config->>'waba_id' = $2
		ORDER BY status = 'ACTIVE' DESC, created_at DESC LIMIT 1`, tenantID, wabaID)
	if err != nil {
		return nil, notFound(err, "No WhatsApp account has WABA %s.", wabaID)
	}
	return &a, nil
}

// AccountByPhoneNumberID returns the tenant's Meta account (not DISABLED)
// whose configured phone_number_id is id. It serves app.InboundTx.
func (t *Tx) AccountByPhoneNumberID(ctx context.Context, tenantID uuid.UUID, id string) (*app.ChannelAccount, error) {
	var a app.ChannelAccount
	err := t.tx.GetContext(ctx, &a, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE tenant_id = $1 AND provider = 'meta' AND status <> 'DISABLED' AND config->>'phone_number_id' = $2
		ORDER BY status = 'ACTIVE' DESC, created_at DESC LIMIT 1`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "No WhatsApp account has phone number id %s.", id)
	}
	return &a, nil
}

// MetaAccounts lists every tenant's Meta accounts that can be synced
// (ACTIVE or SUSPENDED, with a waba_id). It runs in the platform scope and
// serves app.MetaTemplateTx.
func (t *Tx) MetaAccounts(ctx context.Context) ([]*app.ChannelAccount, error) {
	as := []*app.ChannelAccount{}
	err := t.tx.SelectContext(ctx, &as, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE provider = 'meta' AND status IN ('ACTIVE', 'SUSPENDED') AND coalesce(config->>'waba_id', '') <> ''
		ORDER BY tenant_id, created_at`)
	return as, mapErr(err)
}

// LastWhatsAppInbound returns when the person at address (or the contact)
// last wrote to the account's number, or nil. It serves app.DispatchTx.
func (t *Tx) LastWhatsAppInbound(ctx context.Context, tenantID, accountID uuid.UUID, contactID *uuid.UUID, address string) (*time.Time, error) {
	var at *time.Time
	err := t.tx.GetContext(ctx, &at, `
		SELECT max(received_at) FROM inbound_messages
		WHERE tenant_id = $1 AND channel_account_id = $2 AND channel = 'WHATSAPP'
		  AND (from_address = $3 OR contact_id = $4)`, tenantID, accountID, address, contactID)
	return at, mapErr(err)
}

// WhatsAppTemplates lists the tenant's WhatsApp templates by event and
// locale. It serves console.MetaTemplateTx.
func (t *Tx) WhatsAppTemplates(ctx context.Context, tenantID uuid.UUID) ([]*app.Template, error) {
	ts := []*app.Template{}
	err := t.tx.SelectContext(ctx, &ts, `
		SELECT `+templateColumns+` FROM templates
		WHERE tenant_id = $1 AND channel = 'WHATSAPP' ORDER BY trigger_event, locale`, tenantID)
	return ts, mapErr(err)
}
