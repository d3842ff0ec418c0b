package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// DefaultCredentialAlertWindow is how often, at most, a refusal of the
// server's own credentials is logged again for one channel account, and
// how recent a refusal must be for /readyz and the console to report it:
// while messages wait, their retries and the breaker's probes meet the
// refusal every few minutes.
const DefaultCredentialAlertWindow = time.Hour

// CredentialRefusal is a channel account whose sends the provider refused
// for the server's own credentials (provider.Error.ServerCredentials): its
// current spell of refusals, from the first to the last, and the last
// refusal's code and reason.
type CredentialRefusal struct {
	TenantID  uuid.UUID `db:"tenant_id"`
	AccountID uuid.UUID `db:"channel_account_id"`
	Provider  string    `db:"provider"`
	Code      string    `db:"code"`
	Reason    string    `db:"reason"`
	FirstAt   time.Time `db:"first_at"`
	LastAt    time.Time `db:"last_at"`
	Refusals  int       `db:"refusals"`
	// The tenant's and the account's names, for the console (read with
	// the refusals, not stored with them).
	TenantSlug  string `db:"tenant_slug"`
	TenantName  string `db:"tenant_name"`
	AccountName string `db:"account_name"`
	Channel     string `db:"channel"`
}

// CredentialTx lists the statements ServerCredentials runs.
type CredentialTx interface {
	Tx
	// RecordCredentialRefusal adds a refusal at r.LastAt to the account's
	// spell (a spell whose last refusal is window old or older ends, and
	// r starts a new one) and reports whether it raises the alert: the
	// spell's first, or the first since the last alert is window old.
	// Concurrent refusals of one account are counted one after the
	// other, and one of them raises the alert.
	RecordCredentialRefusal(ctx context.Context, r CredentialRefusal, window time.Duration) (alert bool, err error)
	// ClearCredentialRefusal deletes the account's spell and returns it;
	// nil when there was none.
	ClearCredentialRefusal(ctx context.Context, tenantID, accountID uuid.UUID) (*CredentialRefusal, error)
	// CredentialRefusals returns the spells of every tenant whose last
	// refusal came after since, newest first (platform scope).
	CredentialRefusals(ctx context.Context, since time.Time) ([]*CredentialRefusal, error)
	// TenantCredentialRefusals returns the tenant's spells whose last
	// refusal came after since, newest first.
	TenantCredentialRefusals(ctx context.Context, tenantID uuid.UUID, since time.Time) ([]*CredentialRefusal, error)
}

// ServerCredentials keeps watch over the server's own provider
// credentials: the default AWS credential chain that SES and SNS accounts
// without keys of their own send with. When AWS refuses them, the e-mail
// and SMS of every such account wait, retried, whatever tenant they belong
// to, and only the operator can act; the tenant's account is not to blame
// and is not suspended.
//
// Each refusal is recorded per channel account in the database, which
// every worker process shares: the spell's first and last refusal and how
// many there were. The refusal that opens a spell, and the first one after
// each Window, is logged at ERROR: one line per account and window,
// however many messages wait and however many processes send them. Every
// refusal is counted in the metrics. /readyz and the console report the
// accounts refused within the last Window. The account's next accepted
// send ends the spell.
type ServerCredentials struct {
	Store   Store[CredentialTx]
	Metrics Metrics
	Log     *slog.Logger
	Now     Clock
	// Window is the alert window; zero is DefaultCredentialAlertWindow.
	Window time.Duration
}

// window is the alert window in force.
func (s *ServerCredentials) window() time.Duration {
	if s.Window <= 0 {
		return DefaultCredentialAlertWindow
	}
	return s.Window
}

// Refused records that the provider refused a send of the account for the
// server's own credentials. It never fails the send's own work: a refusal
// it cannot record is logged instead.
func (s *ServerCredentials) Refused(ctx context.Context, a *ChannelAccount, pe *provider.Error) {
	ctx = context.WithoutCancel(ctx)
	if s.Metrics != nil {
		s.Metrics.ServerCredentialsRefused(a.Provider, pe.Code)
	}
	now := s.Now()
	r := CredentialRefusal{TenantID: a.TenantID, AccountID: a.ID, Provider: a.Provider, Code: pe.Code, Reason: pe.Reason,
		FirstAt: now, LastAt: now, Refusals: 1}
	var alert bool
	err := s.Store.InTenant(ctx, a.TenantID, func(tx CredentialTx) (err error) {
		alert, err = tx.RecordCredentialRefusal(ctx, r, s.window())
		return err
	})
	switch {
	case err != nil:
		s.Log.WarnContext(ctx, "refusal of the server's AWS credentials not recorded", "tenant_id", a.TenantID,
			"channel_account_id", a.ID, "provider", a.Provider, "code", pe.Code, "err", err)
	case alert:
		s.Log.ErrorContext(ctx, "AWS refused the server's own credentials: e-mail and SMS of channel accounts without keys of their own wait until the operator fixes them",
			"tenant_id", a.TenantID, "channel_account_id", a.ID, "provider", a.Provider, "code", pe.Code, "reason", pe.Reason,
			"next_alert_after", s.window())
	}
}

// Accepted ends the account's spell of refusals, if it had one: a send
// with the server's credentials went through again.
func (s *ServerCredentials) Accepted(ctx context.Context, a *ChannelAccount) {
	ctx = context.WithoutCancel(ctx)
	var ended *CredentialRefusal
	err := s.Store.InTenant(ctx, a.TenantID, func(tx CredentialTx) (err error) {
		ended, err = tx.ClearCredentialRefusal(ctx, a.TenantID, a.ID)
		return err
	})
	switch {
	case err != nil:
		s.Log.WarnContext(ctx, "end of a refusal of the server's AWS credentials not recorded", "tenant_id", a.TenantID,
			"channel_account_id", a.ID, "err", err)
	case ended != nil:
		s.Log.InfoContext(ctx, "AWS accepts the server's own credentials again", "tenant_id", a.TenantID,
			"channel_account_id", a.ID, "provider", a.Provider, "refusals", ended.Refusals, "since", ended.FirstAt)
	}
}

// Refusals returns every tenant's accounts refused within the last
// Window, newest first: what /readyz and the operators' pages report.
func (s *ServerCredentials) Refusals(ctx context.Context) ([]*CredentialRefusal, error) {
	var out []*CredentialRefusal
	err := s.Store.InPlatform(ctx, func(tx CredentialTx) (err error) {
		out, err = tx.CredentialRefusals(ctx, s.Now().Add(-s.window()))
		return err
	})
	return out, err
}

// TenantRefusals returns the tenant's accounts refused within the last
// Window, newest first.
func (s *ServerCredentials) TenantRefusals(ctx context.Context, tenantID uuid.UUID) ([]*CredentialRefusal, error) {
	var out []*CredentialRefusal
	err := s.Store.InTenant(ctx, tenantID, func(tx CredentialTx) (err error) {
		out, err = tx.TenantCredentialRefusals(ctx, tenantID, s.Now().Add(-s.window()))
		return err
	})
	return out, err
}

// CredentialProblem says in one sentence what refusals mean for the
// deployment, for /readyz and the operators' pages; empty when there are
// none.
func CredentialProblem(rs []*CredentialRefusal) string {
	if len(rs) == 0 {
		return ""
	}
	first := rs[0]
	for _, r := range rs {
		if r.FirstAt.Before(first.FirstAt) {
			first = r
		}
	}
	accounts := "1 channel account"
	if len(rs) > 1 {
		accounts = fmt.Sprintf("%d channel accounts", len(rs))
	}
	return fmt.Sprintf("AWS refuses the server's own credentials (%s, %s) for %s since %s: their e-mail and SMS wait until the credentials are fixed",
		rs[0].Code, rs[0].Provider, accounts, first.FirstAt.UTC().Format(time.RFC3339))
}

// watchCredentials tells the watch what a provider call of the send said
// about the server's own credentials: a refusal, or an accepted send of an
// account whose sends were refused. Other calls cost it nothing.
func (d *Dispatcher) watchCredentials(ctx context.Context, s *send, err error) {
	w := d.opts.Credentials
	if w == nil {
		return
	}
	var pe *provider.Error
	switch {
	case err == nil && s.credentialsRefused:
		w.Accepted(ctx, s.account)
		s.credentialsRefused = false
	case errors.As(err, &pe) && pe.ServerCredentials:
		w.Refused(ctx, s.account, pe)
	}
}
