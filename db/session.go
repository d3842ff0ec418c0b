package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// CountLoginAttempt serves console.SessionTx: one statement counts the
// attempt under every key and returns each key's count, so parallel attempts
// each see the ones before them.
func (t *Tx) CountLoginAttempt(ctx context.Context, keys []string, since, at time.Time) (map[string]int, error) {
	var rows []struct {
		Key      string `db:"key"`
		Failures int    `db:"failures"`
	}
	err := t.tx.SelectContext(ctx, &rows, `
		INSERT INTO login_failures (key, failures, window_start, last_at)
		SELECT DISTINCT k, 1, $3::timestamptz, $3::timestamptz FROM unnest($1::text[]) AS k
		ON CONFLICT (key) DO UPDATE SET
			failures = CASE WHEN login_failures.window_start > $2 THEN login_failures.failures + 1 ELSE 1 END,
			window_start = CASE WHEN login_failures.window_start > $2 THEN login_failures.window_start ELSE $3 END,
			last_at = $3
		RETURNING key, failures`, app.StringList(keys), since, at)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Key] = r.Failures
	}
	return out, nil
}

// ReleaseLoginAttempt serves console.SessionTx.
func (t *Tx) ReleaseLoginAttempt(ctx context.Context, key string) error {
	_, err := t.tx.ExecContext(ctx, `
		WITH gone AS (DELETE FROM login_failures WHERE key = $1 AND failures <= 1)
		UPDATE login_failures SET failures = failures - 1 WHERE key = $1 AND failures > 1`, key)
	return mapErr(err)
}

// ClearLoginFailures serves console.SessionTx.
func (t *Tx) ClearLoginFailures(ctx context.Context, key string) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM login_failures WHERE key = $1`, key)
	return mapErr(err)
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
