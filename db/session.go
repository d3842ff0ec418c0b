package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// LoginFailures implements app.SessionStore.
func (t *Tx) LoginFailures(ctx context.Context, keys []string, since time.Time) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `
		SELECT coalesce(max(failures), 0) FROM login_failures
		WHERE key = ANY($1) AND window_start > $2`, app.StringList(keys), since)
	return n, mapErr(err)
}

// RecordLoginFailure implements app.SessionStore.
func (t *Tx) RecordLoginFailure(ctx context.Context, keys []string, since, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `
		INSERT INTO login_failures (key, failures, window_start, last_at)
		SELECT k, 1, $3, $3 FROM unnest($1::text[]) AS k
		ON CONFLICT (key) DO UPDATE SET
			failures = CASE WHEN login_failures.window_start > $2 THEN login_failures.failures + 1 ELSE 1 END,
			window_start = CASE WHEN login_failures.window_start > $2 THEN login_failures.window_start ELSE $3 END,
			last_at = $3`, app.StringList(keys), since, at)
	return mapErr(err)
}

// ClearLoginFailures implements app.SessionStore.
func (t *Tx) ClearLoginFailures(ctx context.Context, key string) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM login_failures WHERE key = $1`, key)
	return mapErr(err)
}

// RecordLogin implements app.SessionStore.
func (t *Tx) RecordLogin(ctx context.Context, userID uuid.UUID, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE users SET last_login_at = $2 WHERE id = $1`, userID, at)
	return mapErr(err)
}

// BumpSessionVersion implements app.SessionStore.
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

// SetPassword implements app.SessionStore.
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
