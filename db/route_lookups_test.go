package db_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// The accounts and templates a route transaction reads with its event
// answer ActiveAccount and FindTemplate exactly as the per-message queries
// do, for every channel and locale chain, and only for that tenant and
// event.
func TestRouteLookups_MatchTheQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "lookups")
	other := createTenant(t, b, "lookups-other")
	now := time.Now().UTC().Truncate(time.Microsecond)
	keyID := "k1"
	reason := "bounce rate"
	account := func(tenant uuid.UUID, ch app.Channel, status string, secrets []byte) *app.ChannelAccount {
		a := &app.ChannelAccount{ID: uuid.New(), TenantID: tenant, Channel: ch, Provider: "sandbox", Name: string(ch) + " " + status,
			Status: status, Config: app.Attrs{"from": "Herald <a@b.example>", "region": "eu-central-1"}, Secrets: secrets,
			VerifyToken: "verify-" + uuid.NewString(), WebhookToken: uuid.NewString(), CreatedAt: now, UpdatedAt: now}
		if secrets != nil {
			a.SecretsKeyID = &keyID
		}
		if status == app.AccountSuspended {
			a.SuspendedReason = &reason
		}
		return a
	}
	accounts := []*app.ChannelAccount{
		account(tn.ID, app.Email, app.AccountActive, []byte{0, 1, 2, 0xfe, 0xff}),
		account(tn.ID, app.SMS, app.AccountPending, nil),
		account(tn.ID, app.WhatsApp, app.AccountSuspended, []byte("x")),
		account(tn.ID, app.Webhook, app.AccountActive, []byte{}),
		account(other.ID, app.SMS, app.AccountActive, nil),
	}
	editor := uuid.New()
	templates := []*app.Template{
		{ID: uuid.New(), TenantID: tn.ID, TriggerEvent: "BOOKING_CONFIRMED", Channel: app.Email, Locale: "de-AT", Subject: "Servus",
			Body: "Hallo {{passenger_name}}", Version: 3, IsActive: false, UpdatedBy: &editor, CreatedAt: now, UpdatedAt: now},
		{ID: uuid.New(), TenantID: tn.ID, TriggerEvent: "BOOKING_CONFIRMED", Channel: app.Email, Locale: "en", Subject: "Hello",
			Body: "<p>Hello</p>", WhatsAppTemplate: app.JSON(`{"name": "booking_confirmed", "language": "en"}`), Version: 2,
			IsActive: true, CreatedAt: now, UpdatedAt: now},
		{ID: uuid.New(), TenantID: tn.ID, TriggerEvent: "BOOKING_CONFIRMED", Channel: app.SMS, Locale: "fr", Body: "Bonjour",
			Version: 1, IsActive: true, CreatedAt: now, UpdatedAt: now},
		{ID: uuid.New(), TenantID: tn.ID, TriggerEvent: "BOOKING_CANCELLED", Channel: app.SMS, Locale: "it", Body: "Ciao",
			Version: 1, IsActive: true, CreatedAt: now, UpdatedAt: now},
	}
	ev := &app.Event{ID: uuid.New(), TenantID: tn.ID, SourceEventID: "evt-lookups", TriggerEvent: "BOOKING_CONFIRMED",
		Recipients: app.JSON(`[]`), Context: app.JSON(`{}`), Channels: app.StringList{}, FallbackChain: app.StringList{},
		Status: app.EventReceived, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		for _, a := range accounts[:4] {
			require.NoError(t, tx.CreateAccount(b.ctx, a))
		}
		require.NoError(t, tx.CreateTemplates(b.ctx, templates))
		_, _, err := tx.InsertEvent(b.ctx, ev, nil)
		return err
	}))
	require.NoError(t, b.store.InTenant(b.ctx, other.ID, func(tx *db.Tx) error { return tx.CreateAccount(b.ctx, accounts[4]) }))

	chains := [][]string{{"de-AT", "de", "en"}, {"fr", "en"}, {"it"}, {"en"}, {"xx"}}
	ask := func(tx *db.Tx, tenant uuid.UUID, event string) []routeAnswer {
		var out []routeAnswer
		for _, ch := range []app.Channel{app.Email, app.SMS, app.WhatsApp, app.Webhook} {
			for _, chain := range chains {
				a, errA := tx.ActiveAccount(b.ctx, tenant, ch)
				tp, errT := tx.FindTemplate(b.ctx, tenant, event, ch, chain)
				out = append(out, routeAnswer{a, tp, [2]string{app.ErrorCode(errA), app.ErrorCode(errT)}})
			}
		}
		return out
	}
	var want, got, cancelled, wantCancelled []routeAnswer
	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		want = ask(tx, tn.ID, "BOOKING_CONFIRMED")
		wantCancelled = ask(tx, tn.ID, "BOOKING_CANCELLED")
		return nil
	}))
	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		e, _, err := tx.EventForRouting(b.ctx, tn.ID, ev.ID)
		require.NoError(t, err)
		require.Equal(t, ev.ID, e.ID)
		got = ask(tx, tn.ID, "BOOKING_CONFIRMED")
		// Another event's templates are not among the lookups: asked for,
		// they come from Postgres.
		cancelled = ask(tx, tn.ID, "BOOKING_CANCELLED")
		return nil
	}))
	require.Equal(t, want, got)
	require.Equal(t, wantCancelled, cancelled)

	// What the lookups hold: the ACTIVE accounts with their secrets intact,
	// and the active templates in the default and the tenant's locales.
	email, err := findAccount(got, app.Email)
	require.NoError(t, err)
	require.Equal(t, accounts[0].Secrets, email.Secrets)
	require.Equal(t, accounts[0].Config, email.Config)
	var sawEnglish, sawFrench bool
	for _, a := range got {
		if a.template != nil && a.template.Locale == "fr" {
			sawFrench = true
		}
		if a.template != nil && a.template.Locale == "en" && a.template.Channel == app.Email {
			sawEnglish = true
		}
		if a.template != nil {
			require.Equal(t, tn.ID, a.template.TenantID)
			require.NotEqual(t, "de-AT", a.template.Locale, "an inactive template is never chosen")
		}
	}
	require.True(t, sawFrench && sawEnglish, "each locale's active template")

	// Another tenant's questions are never answered from these lookups:
	// they go to Postgres, where this transaction's tenant scope hides
	// the other tenant's rows.
	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		_, _, err := tx.EventForRouting(b.ctx, tn.ID, ev.ID)
		require.NoError(t, err)
		_, err = tx.ActiveAccount(b.ctx, other.ID, app.Email)
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))
		_, err = tx.FindTemplate(b.ctx, other.ID, "BOOKING_CONFIRMED", app.SMS, []string{"fr"})
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))
		return nil
	}))
}

// routeAnswer is what one account and template lookup answered.
type routeAnswer struct {
	account  *app.ChannelAccount
	template *app.Template
	codes    [2]string
}

func findAccount(answers []routeAnswer, ch app.Channel) (*app.ChannelAccount, error) {
	for _, a := range answers {
		if a.account != nil && a.account.Channel == ch {
			return a.account, nil
		}
	}
	return nil, app.Errorf(app.ENOTFOUND, "no %s account", ch)
}
