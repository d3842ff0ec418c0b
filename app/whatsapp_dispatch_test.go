package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// approveDefaults records the default WhatsApp templates' Meta templates as
// APPROVED for the account.
func (b *pipelineBundle) approveDefaults(t *testing.T, tn *app.Tenant, acct *app.ChannelAccount) {
	t.Helper()
	for _, d := range app.DefaultTemplates() {
		if d.WhatsApp != nil {
			b.metaStatus(t, tn, acct, d.WhatsApp.Name, d.WhatsApp.Language, app.MetaTemplateApproved)
		}
	}
}

// metaStatus records what Meta says about one of the account's templates.
func (b *pipelineBundle) metaStatus(t *testing.T, tn *app.Tenant, acct *app.ChannelAccount, name, language, status string) {
	t.Helper()
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		return tx.UpsertMetaTemplate(b.ctx, &app.MetaTemplate{TenantID: tn.ID, ChannelAccountID: acct.ID,
			Name: name, Language: language, Status: status, Category: app.MetaCategoryUtility, SyncedAt: b.clock.Now()})
	}))
}

// inbound records a WhatsApp message from the number to the account's
// business number, as the Meta webhook does.
func (b *pipelineBundle) inbound(t *testing.T, tn *app.Tenant, acct *app.ChannelAccount, from string, at time.Time) {
	t.Helper()
	fresh, err := b.svc.Inbound.Record(b.ctx, tn.ID, app.InboundMessage{
		Channel: app.WhatsApp, Provider: "meta", ExternalID: "wamid.in-" + uuid.NewString(), From: from,
		Kind: "text", Body: "Danke!", ReceivedAt: at, PhoneNumberID: acct.Config["phone_number_id"],
	})
	require.NoError(t, err)
	require.True(t, fresh)
}

func TestDispatcher_WhatsAppWindow(t *testing.T) {
	t.Parallel()

	// sendType dispatches the message and returns what Meta was sent.
	sendType := func(t *testing.T, b *pipelineBundle, m *app.Message) string {
		t.Helper()
		b.sendOK(t, m)
		sends := b.meta.received()
		return sends[len(sends)-1].Body["type"].(string)
	}

	t.Run("InsideWindowSendsText", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-23*time.Hour-59*time.Minute))
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))

		require.Equal(t, "text", sendType(t, b, m), "free-form text inside the customer-service window")
		require.Equal(t, m.Body, b.meta.received()[0].Body["text"].(map[string]any)["body"])
	})

	t.Run("OutsideWindowSendsApprovedTemplate", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-24*time.Hour))
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))

		require.Equal(t, "template", sendType(t, b, m), "24 hours after the last reply the window is shut")
		require.Equal(t, map[string]any{
			"name": "herald_booking_confirmed", "language": map[string]any{"policy": "deterministic", "code": "de"},
			"components": []any{map[string]any{"type": "body", "parameters": []any{
				map[string]any{"type": "text", "text": "Anna Schmidt"},
				map[string]any{"type": "text", "text": "Gardasee"},
				map[string]any{"type": "text", "text": "2027-04-12"},
				map[string]any{"type": "text", "text": "150,00 €"},
				map[string]any{"type": "text", "text": "BK-1"},
			}}},
		}, b.meta.received()[0].Body["template"], "the default's parameters, numbered as its text uses them")
	})

	t.Run("WindowClosesWithTheClock", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.inbound(t, tn, acct, anna, b.clock.Now())
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		require.Equal(t, "text", sendType(t, b, first))

		b.clock.Advance(24*time.Hour + time.Second)
		req := booking("evt-2", "BK-2", anna, "WHATSAPP")
		second := b.routeOne(t, tn, req)
		require.Equal(t, "template", sendType(t, b, second))
	})

	t.Run("WindowIsPerAccount", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		// Anna wrote to the tenant's other WhatsApp number, not to the one
		// that sends: that window does not let this number send text.
		other, err := b.svc.Accounts.Create(b.ctx, app.CLIActor, tn.ID, app.AccountInput{
			Channel: app.WhatsApp, Provider: "meta", Name: "Second number",
			Config:  app.Attrs{"phone_number_id": "999000111222333", "waba_id": "102290129340398"},
			Secrets: map[string]string{"access_token": metaAccessToken, "app_secret": "other-secret"},
		})
		require.NoError(t, err)
		b.inbound(t, tn, other, anna, b.clock.Now().Add(-time.Hour))
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))

		require.Equal(t, "template", sendType(t, b, m))
	})

	t.Run("WindowIsPerRecipient", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.inbound(t, tn, acct, "+49 151 99999999", b.clock.Now().Add(-time.Hour))
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))

		require.Equal(t, "template", sendType(t, b, m), "someone else's reply opens no window for Anna")
	})

	t.Run("WindowIsPerTenant", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, beta := b.tenant(t, "acme"), b.tenant(t, "beta")
		b.useMeta(t, acme, nil)
		betaAcct := b.useMeta(t, beta, nil)
		b.inbound(t, beta, betaAcct, anna, b.clock.Now().Add(-time.Hour))
		m := b.routeOne(t, acme, booking("evt-1", "BK-1", anna, "WHATSAPP"))

		require.Equal(t, "template", sendType(t, b, m), "a reply to another tenant opens nothing here")
	})
}

func TestDispatcher_WhatsAppTemplateRequired(t *testing.T) {
	t.Parallel()

	// failsWithoutMeta dispatches a WhatsApp message with fallback to SMS
	// and checks it failed over without a request to Meta; it returns the
	// failure's timeline detail.
	failsWithoutMeta := func(t *testing.T, b *pipelineBundle, tn *app.Tenant, wa *app.Message) map[string]any {
		t.Helper()
		out, err := b.dispatch(wa, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Empty(t, b.meta.received(), "Meta is not called")
		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonWhatsAppTemplateRequired, *failed.ErrorCode)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		require.Equal(t, 0, b.usage(t, tn.ID, app.WhatsApp), "nothing was sent")
		sms := fallbackOf(t, b, tn, wa)
		require.Equal(t, app.SMS, sms.Channel)
		b.sendOK(t, sms)
		tl := b.timeline(t, tn.ID, wa.ID)
		last := tl[len(tl)-1]
		require.Equal(t, app.ReasonWhatsAppTemplateRequired, last.Detail["reason"])
		return last.Detail
	}

	t.Run("NotSubmitted", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.ReplaceMetaTemplates(b.ctx, tn.ID, acct.ID, nil)
		}))
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))

		detail := failsWithoutMeta(t, b, tn, wa)
		require.Contains(t, detail["error"], "herald_booking_confirmed (de) does not exist")
	})

	for _, status := range []string{app.MetaTemplatePending, app.MetaTemplateRejected, app.MetaTemplatePaused, app.MetaTemplateDisabled} {
		t.Run("Status"+status, func(t *testing.T) {
			t.Parallel()
			b := setupPipeline(t, nil)
			tn := b.tenant(t, "acme")
			acct := b.useMeta(t, tn, nil)
			b.metaStatus(t, tn, acct, "herald_booking_confirmed", "de", status)
			wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))

			detail := failsWithoutMeta(t, b, tn, wa)
			require.Contains(t, detail["error"], "is "+status)
		})
	}

	t.Run("ApprovedForAnotherAccountOnly", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn, other := b.tenant(t, "acme"), b.tenant(t, "beta")
		acct := b.useMeta(t, tn, nil)
		b.useMeta(t, other, nil)
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.ReplaceMetaTemplates(b.ctx, tn.ID, acct.ID, nil)
		}))
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))

		failsWithoutMeta(t, b, tn, wa)
	})

	t.Run("NoMetaTemplateNamed", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		var tpl *app.Template
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			tpl, err = tx.TemplateByKey(b.ctx, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, "de-DE")
			return err
		}))
		_, _, err := b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, app.TemplateInput{Body: tpl.Body, IsActive: true})
		require.NoError(t, err)
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))

		detail := failsWithoutMeta(t, b, tn, wa)
		require.Contains(t, detail["error"], "names no Meta template")
	})

	t.Run("WithoutFallbackFails", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.metaStatus(t, tn, acct, "herald_booking_confirmed", "de", app.MetaTemplatePending)
		wa := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))

		out, err := b.dispatch(wa, 1, 5, &completion{})
		require.NoError(t, err)
		require.True(t, out.Done)
		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonWhatsAppTemplateRequired, *failed.FailedReason)
		require.Equal(t, app.ReasonWhatsAppTemplateRequired, *failed.ErrorCode)
		require.Empty(t, b.meta.received())
	})

	t.Run("InsideWindowNeedsNoTemplate", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.metaStatus(t, tn, acct, "herald_booking_confirmed", "de", app.MetaTemplateRejected)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-time.Minute))
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))

		b.sendOK(t, wa)
		require.Equal(t, "text", b.meta.received()[0].Body["type"])
	})
}
