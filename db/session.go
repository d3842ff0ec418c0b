package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// LockLoginCounts serves console.SessionTx: one statement creates the
// counts that do not exist yet, starts again those whose last failure is
// at or before since, and locks every one until the transaction ends, in
// key order so that two attempts never wait on each other crosswise.
func (t *Tx) LockLoginCounts(ctx context.Context, keys []string, since, at time.Time) ([]console.LoginCount, error) {
	rows := []console.LoginCount{}
	err := t.tx.SelectContext(ctx, &rows, `
		INSERT INTO login_throttle (key, failures, last_at, blocked_until)
		SELECT k, 0, $3::timestamptz, NULL FROM (SELECT DISTINCT unnest($1::text[]) AS k) AS keys ORDER BY k
		ON CONFLICT (key) DO UPDATE SET
			failures = CASE WHEN login_throttle.last_at > $2 THEN login_throttle.failures ELSE 0 END,
			blocked_until = CASE WHEN login_throttle.last_at > $2 THEN login_throttle.blocked_until END
		RETURNING key, failures, last_at, blocked_until`, app.StringList(keys), since, at)
	return rows, mapErr(err)
}

// SaveLoginCounts serves console.SessionTx: a count of zero goes away.
func (t *Tx) SaveLoginCounts(ctx context.Context, counts []console.LoginCount) error {
	for _, c := range counts {
		var err error
		if c.Failures == 0 {
			_, err = t.tx.ExecContext(ctx, `DELETE FROM login_throttle WHERE key = $1`, c.Key)
		} else {
			_, err = t.tx.ExecContext(ctx, `
				UPDATE login_throttle SET failures = $2, last_at = $3, blocked_until = $4 WHERE key = $1`,
				c.Key, c.Failures, c.LastAt, c.BlockedUntil)
		}
		if err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// DeleteQuietLoginCounts serves console.SessionTx: at most limit counts
// whose last failure and block both ended before before.
func (t *Tx) DeleteQuietLoginCounts(ctx context.Context, before time.Time, limit int) error {
	_, err := t.tx.ExecContext(ctx, `
		DELETE FROM login_throttle WHERE key IN (
			SELECT key FROM login_throttle
			WHERE last_at < $1 AND (blocked_until IS NULL OR blocked_until < $1)
			ORDER BY last_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, before, limit)
	return mapErr(err)
}

const failureWindowColumns = `email, client, failures, refused, first_at, last_at, throttled_at`

// LockFailureWindow serves console.SessionTx: the window of (email,
// client), created empty at at when there is none, locked until the
// transaction ends.
func (t *Tx) LockFailureWindow(ctx context.Context, email, client string, at time.Time) (*console.FailureWindow, error) {
	if _, err := t.tx.ExecContext(ctx, `
		INSERT INTO login_failure_windows (email, client, first_at, last_at) VALUES ($1, $2, $3, $3)
		ON CONFLICT (email, client) DO NOTHING`, email, client, at); err != nil {
		return nil, mapErr(err)
	}
	var w console.FailureWindow
	err := t.tx.GetContext(ctx, &w, `
		SELECT `+failureWindowColumns+` FROM login_failure_windows WHERE email = $1 AND client = $2 FOR UPDATE`, email, client)
	if err != nil {
		return nil, mapErr(err)
	}
	return &w, nil
}

// SaveFailureWindow serves console.SessionTx.
func (t *Tx) SaveFailureWindow(ctx context.Context, w *console.FailureWindow) error {
	_, err := t.tx.NamedExecContext(ctx, `
		UPDATE login_failure_windows SET failures = :failures, refused = :refused, first_at = :first_at,
		       last_at = :last_at, throttled_at = :throttled_at
		WHERE email = :email AND client = :client`, w)
	return mapErr(err)
}

// TakeFailureWindow serves console.SessionTx: it removes and returns the
// window of (email, client), ENOTFOUND when there is none.
func (t *Tx) TakeFailureWindow(ctx context.Context, email, client string) (*console.FailureWindow, error) {
	rows := []*console.FailureWindow{}
	err := t.tx.SelectContext(ctx, &rows, `
		DELETE FROM login_failure_windows WHERE email = $1 AND client = $2
		RETURNING `+failureWindowColumns, email, client)
	if err != nil {
		return nil, mapErr(err)
	}
	if len(rows) == 0 {
		return nil, app.Errorf(app.ENOTFOUND, "No failed sign-ins of %q from %q.", email, client)
	}
	return rows[0], nil
}

// TakeEndedFailureWindows serves console.SessionTx: it removes and returns
// at most limit windows opened at or before before, skipping any another
// transaction holds.
func (t *Tx) TakeEndedFailureWindows(ctx context.Context, before time.Time, limit int) ([]*console.FailureWindow, error) {
	rows := []*console.FailureWindow{}
	err := t.tx.SelectContext(ctx, &rows, `
		DELETE FROM login_failure_windows WHERE (email, client) IN (
			SELECT email, client FROM login_failure_windows WHERE first_at <= $1
			ORDER BY first_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING `+failureWindowColumns, before, limit)
	return rows, mapErr(err)
}

// RecordLogin serves console.SessionTx.
func (t *Tx) RecordLogin(ctx context.Context, userID uuid.UUID, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE users SET last_login_at = $2 WHERE id = $1`, userID, at)
	return mapErr(err)
}

// BumpSessionVersion serves console.SessionTx.
func (t *Tx) BumpSessionVersion(ctx context.Context, userID uuid.UUID, at time.Time) (int, error) {
	var v int
	err := t.tx.GetContext(ctx, &v, `
		UPDATE users SET session_version = session_version + 1, updated_at = $2
		WHERE id = $1 RETURNING session_version`, userID, at)
	if err != nil {
		return 0, notFound(err, "User %s not found.", userID)
	}
	return v, nil
}

// SetPassword serves console.SessionTx.
func (t *Tx) SetPassword(ctx context.Context, userID uuid.UUID, hash []byte, at time.Time) (int, error) {
	var v int
	err := t.tx.GetContext(ctx, &v, `
		UPDATE users SET password_hash = $2, session_version = session_version + 1, must_change_password = false, updated_at = $3
		WHERE id = $1 RETURNING session_version`, userID, hash, at)
	if err != nil {
		return 0, notFound(err, "User %s not found.", userID)
	}
	return v, nil
}
