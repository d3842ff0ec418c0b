package webtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
)

// ApproveMetaDefaults records the default WhatsApp templates' Meta
// templates as APPROVED for a Meta account, as if Meta had approved what
// the tenant submitted: WhatsApp messages to people who have not written
// in the last 24 hours go out as those templates.
func (h *Herald) ApproveMetaDefaults(acct *app.ChannelAccount) {
	h.T.Helper()
	approveMetaDefaults(h.T, h.Ctx, h.Services, acct)
}

func approveMetaDefaults(t testing.TB, ctx context.Context, svc *wire.Services, acct *app.ChannelAccount) {
	t.Helper()
	require.NoError(t, svc.Store.InTenant(ctx, acct.TenantID, func(tx *db.Tx) error {
		for _, d := range app.DefaultTemplates() {
			if d.WhatsApp == nil {
				continue
			}
			if err := tx.UpsertMetaTemplate(ctx, &app.MetaTemplate{TenantID: acct.TenantID, ChannelAccountID: acct.ID,
				Name: d.WhatsApp.Name, Language: d.WhatsApp.Language, Status: app.MetaTemplateApproved,
				Category: d.WhatsApp.Category, Body: d.WhatsApp.Body, SyncedAt: time.Now()}); err != nil {
				return err
			}
		}
		return nil
	}))
}
