package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// Throttle holds the rules that slow down password guessing. Each attempt
// is counted under three keys before its password is looked at:
//
//   - the pair (address typed, client address): after PairFree failures,
//     each further attempt from that client for that address waits 2^k
//     seconds (k = failures - PairFree), at most MaxWait;
//   - the client address alone, across every address typed (credential
//     stuffing): the same backoff after AddressFree failures;
//   - the address typed alone, from every client (guessing spread over
//     many clients): the same backoff after AccountFree failures, but at
//     most AccountMaxWait, so that it slows and never locks.
//
// A client address with no failure counted is never refused, so nobody can
// lock a person out by failing in their name from elsewhere; the backoffs
// only apply to clients that have failed. A success from a client clears
// its pair and takes its own attempt back from the other two keys. Counts
// start again after Quiet without a failure.
//
// Failures are audited in windows of AuditWindow per (address typed,
// client address): one session.login_failed entry when a window opens, one
// session.login_throttled entry the first time the window's client is
// refused, and one session.login_failed_summary entry counting the
// failures and refusals, with the first and last, when the window ends
// (the next failure after it, a success from the pair, or a later sign-in
// sweeping ended windows).
type Throttle struct {
	PairFree       int
	AddressFree    int
	AccountFree    int
	MaxWait        time.Duration
	AccountMaxWait time.Duration
	Quiet          time.Duration
	AuditWindow    time.Duration
}

// DefaultThrottle is the rules Herald runs with.
var DefaultThrottle = Throttle{
	PairFree:       5,
	AddressFree:    20,
	AccountFree:    100,
	MaxWait:        15 * time.Minute,
	AccountMaxWait: time.Minute,
	Quiet:          time.Hour,
	AuditWindow:    time.Hour,
}

// LoginCount is the failures counted under one throttling key and the time
// before which the next attempt under it is refused.
type LoginCount struct {
	Key          string     `db:"key"`
	Failures     int        `db:"failures"`
	LastAt       time.Time  `db:"last_at"`
	BlockedUntil *time.Time `db:"blocked_until"`
}

// FailureWindow counts the failed and refused sign-ins of one address typed
// from one client address since FirstAt, for the audit log.
type FailureWindow struct {
	Email       string     `db:"email"`
	Client      string     `db:"client"`
	Failures    int        `db:"failures"`
	Refused     int        `db:"refused"`
	FirstAt     time.Time  `db:"first_at"`
	LastAt      time.Time  `db:"last_at"`
	ThrottledAt *time.Time `db:"throttled_at"`
}

// ThrottledError refuses an attempt that came too early; Wait is how long
// until the next one is checked.
type ThrottledError struct {
	Wait time.Duration
	err  *app.Error
}

func (e *ThrottledError) Error() string { return e.err.Error() }

// Unwrap lets app.ErrorCode and app.ErrorMessage read the error.
func (e *ThrottledError) Unwrap() error { return e.err }

// RetryAfter returns how long a refused attempt must wait, or zero when err
// is no refusal.
func RetryAfter(err error) time.Duration {
	var t *ThrottledError
	if errors.As(err, &t) {
		return t.Wait
	}
	return 0
}

func errThrottled(wait time.Duration) error {
	secs := int((wait + time.Second - 1) / time.Second)
	when := fmt.Sprintf("%d seconds", secs)
	switch {
	case secs == 1:
		when = "1 second"
	case secs > 120:
		when = fmt.Sprintf("%d minutes", (secs+59)/60)
	}
	return &ThrottledError{Wait: wait, err: app.Errorf(app.ETOOMANY, "Too many failed sign-ins. Wait %s and try again.", when)}
}

func (s *Sessions) rules() Throttle {
	r, d := s.Throttle, DefaultThrottle
	pick := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	pickD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	pick(&r.PairFree, d.PairFree)
	pick(&r.AddressFree, d.AddressFree)
	pick(&r.AccountFree, d.AccountFree)
	pickD(&r.MaxWait, d.MaxWait)
	pickD(&r.AccountMaxWait, d.AccountMaxWait)
	pickD(&r.Quiet, d.Quiet)
	pickD(&r.AuditWindow, d.AuditWindow)
	return r
}

// loginName is the address typed as the throttle and the audit log key
// it: trimmed, lower-cased, without NUL bytes and at most 254 bytes, so
// that junk input cannot make the keys fail or grow.
func loginName(email string) string {
	s := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(email, "\x00", "")))
	if len(s) > 254 {
		s = s[:254]
	}
	return strings.ToValidUTF8(s, string(utf8.RuneError))
}

// keySet names the throttling keys of one attempt. address is empty when
// the client address is unknown; the pair then stands for the client.
type keySet struct{ pair, address, account string }

func throttleKeys(name, ip string) keySet {
	k := keySet{pair: "pair:" + name + "|" + ip, account: "account:" + name}
	if ip != "" {
		k.address = "address:" + ip
	}
	return k
}

func (k keySet) list() []string {
	if k.address == "" {
		return []string{k.pair, k.account}
	}
	return []string{k.pair, k.address, k.account}
}

// client is the key that says whether the client has failed at all.
func (k keySet) client() string {
	if k.address == "" {
		return k.pair
	}
	return k.address
}

// limit is the free failures and the longest wait under key.
func (r Throttle) limit(k keySet, key string) (free int, maxWait time.Duration) {
	switch key {
	case k.pair:
		return r.PairFree, r.MaxWait
	case k.address:
		return r.AddressFree, r.MaxWait
	}
	return r.AccountFree, r.AccountMaxWait
}

// backoff is how long after the failures-th failure the next attempt
// waits: nothing under free failures, then 2^(failures-free) seconds, at
// most maxWait.
func backoff(failures, free int, maxWait time.Duration) time.Duration {
	if failures < free {
		return 0
	}
	k := failures - free
	if k >= 30 {
		return maxWait
	}
	return min(time.Duration(1<<k)*time.Second, maxWait)
}

// admit decides, in one transaction holding the attempt's counts, whether
// the attempt may check a password. If so it counts it as a failure at
// once (a success takes it back), so that attempts made in parallel each
// see the ones before; if not it returns how long to wait and changes
// nothing.
func (s *Sessions) admit(ctx context.Context, keys keySet, now time.Time) (wait time.Duration, err error) {
	r := s.rules()
	err = s.Store.InPlatform(ctx, func(tx SessionTx) error {
		wait = 0
		// Counts nobody has failed under for long are dropped as
		// attempts come, a few at a time.
		if err := tx.DeleteQuietLoginCounts(ctx, now.Add(-r.Quiet), 20); err != nil {
			return err
		}
		counts, err := tx.LockLoginCounts(ctx, keys.list(), now.Add(-r.Quiet), now)
		if err != nil {
			return err
		}
		clean := true
		for _, c := range counts {
			if c.Key == keys.client() && c.Failures > 0 {
				clean = false
			}
		}
		for _, c := range counts {
			if !clean && c.BlockedUntil != nil && c.BlockedUntil.After(now) {
				wait = max(wait, c.BlockedUntil.Sub(now))
			}
		}
		if wait > 0 {
			return nil
		}
		for i := range counts {
			c := &counts[i]
			c.Failures++
			c.LastAt = now
			free, maxWait := r.limit(keys, c.Key)
			if d := backoff(c.Failures, free, maxWait); d > 0 {
				until := now.Add(d)
				c.BlockedUntil = &until
			}
		}
		return tx.SaveLoginCounts(ctx, counts)
	})
	return wait, err
}

// release takes back the attempt admit counted, after its password proved
// right: the pair starts again from nothing, the client address and the
// account lose this one attempt.
func (s *Sessions) release(ctx context.Context, tx SessionTx, keys keySet, now time.Time) error {
	return s.releaseKeys(ctx, tx, keys, now, true)
}

// releaseAttempt takes back only the attempt admit counted, under every
// key, the pair too: a right password of an account with a second factor
// is half a sign-in, and clearing the pair would let whoever knows the
// password start the count of wrong codes again at each try.
func (s *Sessions) releaseAttempt(ctx context.Context, tx SessionTx, keys keySet, now time.Time) error {
	return s.releaseKeys(ctx, tx, keys, now, false)
}

func (s *Sessions) releaseKeys(ctx context.Context, tx SessionTx, keys keySet, now time.Time, clearPair bool) error {
	r := s.rules()
	counts, err := tx.LockLoginCounts(ctx, keys.list(), now.Add(-r.Quiet), now)
	if err != nil {
		return err
	}
	for i := range counts {
		c := &counts[i]
		if c.Key == keys.pair && clearPair {
			c.Failures = 0
			continue
		}
		c.Failures = max(c.Failures-1, 0)
		// admit extended the block for this attempt; it goes back to what
		// the remaining failures call for, give or take the time the
		// password check took.
		free, maxWait := r.limit(keys, c.Key)
		if d := backoff(c.Failures, free, maxWait); d == 0 {
			c.BlockedUntil = nil
		} else if until := now.Add(d); c.BlockedUntil != nil && until.Before(*c.BlockedUntil) {
			c.BlockedUntil = &until
		}
	}
	return tx.SaveLoginCounts(ctx, counts)
}

// recordFailure counts a failed sign-in (wait zero) or a refused one in the
// failure window of (name, ip) and writes the audit entries the window's
// rules call for (see Throttle).
func (s *Sessions) recordFailure(ctx context.Context, name, ip string, now time.Time, wait time.Duration) error {
	r := s.rules()
	return s.Store.InPlatform(ctx, func(tx SessionTx) error {
		// The window first, the sweep last (it skips windows others
		// hold and never waits, and by then this window is not ended): a
		// transaction that waited for a window while holding an audit
		// chain's lock could deadlock with the one holding the window.
		w, err := tx.LockFailureWindow(ctx, name, ip, now)
		if err != nil {
			return err
		}
		if w.Failures+w.Refused > 0 && !w.FirstAt.After(now.Add(-r.AuditWindow)) {
			if err := s.auditWindow(ctx, tx, w, "session.login_failed_summary", nil); err != nil {
				return err
			}
			*w = FailureWindow{Email: w.Email, Client: w.Client}
		}
		fresh := w.Failures+w.Refused == 0
		if fresh {
			w.FirstAt = now
		}
		w.LastAt = now
		if wait == 0 {
			w.Failures++
			// The window's first failure, even after refusals that came
			// first (those of parallel attempts are quicker to answer).
			if w.Failures == 1 {
				if err := s.auditWindow(ctx, tx, w, "session.login_failed", nil); err != nil {
					return err
				}
			}
		} else {
			w.Refused++
			if w.ThrottledAt == nil {
				w.ThrottledAt = &now
				if err := s.auditWindow(ctx, tx, w, "session.login_throttled", map[string]any{"wait_seconds": int(wait.Seconds() + 0.999)}); err != nil {
					return err
				}
			}
		}
		if err := tx.SaveFailureWindow(ctx, w); err != nil {
			return err
		}
		return s.closeEndedWindows(ctx, tx, now)
	})
}

// closeWindow ends the failure window of (name, ip) after a success, with
// its summary.
func (s *Sessions) closeWindow(ctx context.Context, tx SessionTx, name, ip string) error {
	w, err := tx.TakeFailureWindow(ctx, name, ip)
	switch {
	case app.ErrorCode(err) == app.ENOTFOUND:
		return nil
	case err != nil:
		return err
	case w.Failures+w.Refused == 0:
		return nil
	}
	return s.auditWindow(ctx, tx, w, "session.login_failed_summary", nil)
}

// closeEndedWindows summarises a few windows that ended without anyone
// trying again from their client, so that every window gets its summary.
func (s *Sessions) closeEndedWindows(ctx context.Context, tx SessionTx, now time.Time) error {
	ended, err := tx.TakeEndedFailureWindows(ctx, now.Add(-s.rules().AuditWindow), 5)
	if err != nil {
		return err
	}
	for _, w := range ended {
		if w.Failures+w.Refused == 0 {
			continue
		}
		if err := s.auditWindow(ctx, tx, w, "session.login_failed_summary", nil); err != nil {
			return err
		}
	}
	return nil
}

// auditWindow writes one audit entry about a failure window: in the log of
// every tenant with an account under the address (and the platform's for
// an operator), or in the platform's when the address has no account.
func (s *Sessions) auditWindow(ctx context.Context, tx SessionTx, w *FailureWindow, action string, extra map[string]any) error {
	var tenants []*uuid.UUID
	if norm, err := app.NormalizeEmail("email", w.Email); err == nil {
		users, err := tx.UsersByEmail(ctx, norm)
		if err != nil {
			return err
		}
		seen := map[uuid.UUID]bool{}
		platform := false
		for _, u := range users {
			switch {
			case u.TenantID == nil && !platform:
				platform = true
				tenants = append(tenants, nil)
			case u.TenantID != nil && !seen[*u.TenantID]:
				seen[*u.TenantID] = true
				tenants = append(tenants, u.TenantID)
			}
		}
	}
	if len(tenants) == 0 {
		tenants = []*uuid.UUID{nil}
	}
	// Each entry takes its chain's lock: always in the same order, the
	// platform's first.
	slices.SortFunc(tenants, func(a, b *uuid.UUID) int {
		switch {
		case a == nil:
			return -1
		case b == nil:
			return 1
		}
		return strings.Compare(a.String(), b.String())
	})
	meta := map[string]any{
		"email": w.Email, "ip": w.Client, "failures": w.Failures, "refused": w.Refused,
		"first_at": w.FirstAt.UTC().Format(time.RFC3339), "last_at": w.LastAt.UTC().Format(time.RFC3339),
	}
	for k, v := range extra {
		meta[k] = v
	}
	for _, t := range tenants {
		e := app.Actor{Type: app.ActorSystem, Label: w.Client}.Entry(t, action, "session", w.Email, meta)
		if err := tx.InsertAudit(ctx, e); err != nil {
			return err
		}
	}
	return nil
}
