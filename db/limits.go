package db

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const limitColumns = `tenant_id, intake_per_minute, daily_email, daily_sms, daily_whatsapp, daily_webhook,
	sms_countries, sms_international_daily, sms_recipient_daily, max_sms_parts, updated_at`

// LimitSettings serves app.LimitTx: a tenant without a row has every
// limit at its default.
func (t *Tx) LimitSettings(ctx context.Context, tenantID uuid.UUID) (*app.LimitSettings, error) {
	var s app.LimitSettings
	err := t.tx.GetContext(ctx, &s, `SELECT `+limitColumns+` FROM tenant_limits WHERE tenant_id = $1`, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return &app.LimitSettings{TenantID: tenantID}, nil
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return &s, nil
}

// SetLimitSettings serves app.LimitAdminTx.
func (t *Tx) SetLimitSettings(ctx context.Context, s *app.LimitSettings) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO tenant_limits (`+limitColumns+`)
		VALUES (:tenant_id, :intake_per_minute, :daily_email, :daily_sms, :daily_whatsapp, :daily_webhook,
			:sms_countries, :sms_international_daily, :sms_recipient_daily, :max_sms_parts, :updated_at)
		ON CONFLICT (tenant_id) DO UPDATE SET
			intake_per_minute = EXCLUDED.intake_per_minute, daily_email = EXCLUDED.daily_email,
			daily_sms = EXCLUDED.daily_sms, daily_whatsapp = EXCLUDED.daily_whatsapp, daily_webhook = EXCLUDED.daily_webhook,
			sms_countries = EXCLUDED.sms_countries, sms_international_daily = EXCLUDED.sms_international_daily,
			sms_recipient_daily = EXCLUDED.sms_recipient_daily, max_sms_parts = EXCLUDED.max_sms_parts, updated_at = EXCLUDED.updated_at`, s)
	return mapErr(err)
}

// TakeDayCounts serves app.LimitTx in one statement. Each counter is
// inserted or added to only where its count stays within its cap; the
// upsert waits for a concurrent request's uncommitted take of the same
// counter and then checks the cap against the count it committed, so
// concurrent requests never pass a cap together. Rows are taken in the
// order of takes (the caller sorts them).
func (t *Tx) TakeDayCounts(ctx context.Context, tenantID uuid.UUID, day time.Time, takes []app.DayTake) ([]string, error) {
	counters, ns, caps := make([]string, len(takes)), make([]int64, len(takes)), make([]int64, len(takes))
	for i, tk := range takes {
		counters[i], ns[i], caps[i] = tk.Counter, int64(tk.N), int64(tk.Cap)
	}
	var taken []string
	err := t.tx.SelectContext(ctx, &taken, `
		INSERT INTO intake_day_counts AS c (tenant_id, day, counter, count, cap)
		SELECT $1, $2::date, w.counter, w.n, w.cap
		FROM unnest($3::text[], $4::int[], $5::int[]) WITH ORDINALITY AS w(counter, n, cap, i)
		WHERE w.n <= w.cap
		ORDER BY w.i
		ON CONFLICT (tenant_id, day, counter) DO UPDATE SET count = c.count + EXCLUDED.count, cap = EXCLUDED.cap
		WHERE c.count + EXCLUDED.count <= EXCLUDED.cap
		RETURNING c.counter`, tenantID, dateParam(day), app.StringList(counters), ns, caps)
	if err != nil {
		return nil, mapErr(err)
	}
	var refused []string
	for _, c := range counters {
		if !slices.Contains(taken, c) {
			refused = append(refused, c)
		}
	}
	return refused, nil
}

// DayCounts serves app.LimitAdminTx: the day's counters, with the counters
// of single numbers folded into the highest of them under
// app.CounterSMSRecipient.
func (t *Tx) DayCounts(ctx context.Context, tenantID uuid.UUID, day time.Time) (map[string]int, error) {
	var rows []struct {
		Counter string `db:"counter"`
		Count   int    `db:"count"`
	}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT CASE WHEN starts_with(counter, $3) THEN $3 ELSE counter END AS counter, max(count) AS count
		FROM intake_day_counts WHERE tenant_id = $1 AND day = $2::date
		GROUP BY 1`, tenantID, dateParam(day), app.CounterSMSRecipient)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Counter] = r.Count
	}
	return out, nil
}

// PruneDayCounts serves app.LimitAdminTx: up to limit day counters of
// days before the given one, across tenants.
func (t *Tx) PruneDayCounts(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := t.tx.ExecContext(ctx, `
		DELETE FROM intake_day_counts WHERE ctid IN (
			SELECT ctid FROM intake_day_counts WHERE day < $1::date LIMIT $2)`, dateParam(before), limit)
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// dateParam is a day as a date parameter: its UTC date, whatever the
// session's time zone.
func dateParam(day time.Time) string { return day.UTC().Format(time.DateOnly) }
