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
	sms_countries, sms_international_daily, sms_recipient_daily, max_sms_parts, budget_email, budget_sms, budget_whatsapp, updated_at`

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
			:sms_countries, :sms_international_daily, :sms_recipient_daily, :max_sms_parts,
			:budget_email, :budget_sms, :budget_whatsapp, :updated_at)
		ON CONFLICT (tenant_id) DO UPDATE SET
			intake_per_minute = EXCLUDED.intake_per_minute, daily_email = EXCLUDED.daily_email,
			daily_sms = EXCLUDED.daily_sms, daily_whatsapp = EXCLUDED.daily_whatsapp, daily_webhook = EXCLUDED.daily_webhook,
			sms_countries = EXCLUDED.sms_countries, sms_international_daily = EXCLUDED.sms_international_daily,
			sms_recipient_daily = EXCLUDED.sms_recipient_daily, max_sms_parts = EXCLUDED.max_sms_parts,
			budget_email = EXCLUDED.budget_email, budget_sms = EXCLUDED.budget_sms, budget_whatsapp = EXCLUDED.budget_whatsapp,
			updated_at = EXCLUDED.updated_at`, s)
	return mapErr(err)
}

// TakeDayCounts serves app.LimitTx in one statement: it reads the tenant's
// settings, and adds each take to its counter only where the count stays
// within the cap the settings give it (the take's default where they give
// none). The upsert waits for a concurrent request's uncommitted take of
// the same counter and then checks the cap against the count it committed,
// so concurrent requests never pass a cap together. Rows are taken in the
// order of takes (the caller sorts them).
func (t *Tx) TakeDayCounts(ctx context.Context, tenantID uuid.UUID, day time.Time, takes []app.DayTake) (*app.LimitSettings, []string, error) {
	counters, ns := make([]string, len(takes)), make([]int64, len(takes))
	settings, defaults := make([]string, len(takes)), make([]int64, len(takes))
	for i, tk := range takes {
		counters[i], ns[i], settings[i], defaults[i] = tk.Counter, int64(tk.N), tk.Setting, int64(tk.Default)
	}
	var row struct {
		app.LimitSettings
		Taken app.StringList `db:"taken"`
	}
	err := t.tx.GetContext(ctx, &row, `
		WITH s AS (SELECT * FROM tenant_limits WHERE tenant_id = $1),
		w AS (
			SELECT w.counter, w.n, w.i, coalesce(CASE w.setting
				WHEN 'daily_email' THEN s.daily_email WHEN 'daily_sms' THEN s.daily_sms
				WHEN 'daily_whatsapp' THEN s.daily_whatsapp WHEN 'daily_webhook' THEN s.daily_webhook
				WHEN 'sms_international_daily' THEN s.sms_international_daily
				WHEN 'sms_recipient_daily' THEN s.sms_recipient_daily END, w.def) AS cap
			FROM unnest($3::text[], $4::int[], $5::text[], $6::int[]) WITH ORDINALITY AS w(counter, n, setting, def, i)
			LEFT JOIN s ON true),
		taken AS (
			INSERT INTO intake_day_counts AS c (tenant_id, day, counter, count, cap)
			SELECT $1, $2::date, w.counter, w.n, w.cap FROM w
			WHERE w.n <= w.cap
			ORDER BY w.i
			ON CONFLICT (tenant_id, day, counter) DO UPDATE SET count = c.count + EXCLUDED.count, cap = EXCLUDED.cap
			WHERE c.count + EXCLUDED.count <= EXCLUDED.cap
			RETURNING c.counter)
		SELECT $1::uuid AS tenant_id, s.intake_per_minute, s.daily_email, s.daily_sms, s.daily_whatsapp, s.daily_webhook,
			s.sms_countries, s.sms_international_daily, s.sms_recipient_daily, coalesce(s.updated_at, 'epoch') AS updated_at,
			(SELECT coalesce(array_agg(counter), '{}') FROM taken) AS taken
		FROM (VALUES (1)) AS one LEFT JOIN s ON true`,
		tenantID, dateParam(day), app.StringList(counters), ns, app.StringList(settings), defaults)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	var refused []string
	for _, c := range counters {
		if !slices.Contains(row.Taken, c) {
			refused = append(refused, c)
		}
	}
	set := row.LimitSettings
	return &set, refused, nil
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
// days before their tenant's yesterday at now, across tenants. Every such
// day is before now's UTC date, which the index on day finds first; a
// deleted tenant's counters go by UTC.
func (t *Tx) PruneDayCounts(ctx context.Context, now time.Time, limit int) (int, error) {
	res, err := t.tx.ExecContext(ctx, `
		DELETE FROM intake_day_counts WHERE ctid IN (
			SELECT c.ctid FROM intake_day_counts c LEFT JOIN tenants tn ON tn.id = c.tenant_id
			WHERE c.day < $2::date AND c.day < ($1::timestamptz AT TIME ZONE coalesce(tn.timezone, 'UTC'))::date - 1
			LIMIT $3)`, now, dateParam(now), limit)
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// dateParam is a day as a date parameter: its UTC date, whatever the
// session's time zone.
func dateParam(day time.Time) string { return day.UTC().Format(time.DateOnly) }

// MonthSpent serves app.LimitAdminTx: the cost the month's sends
// reserved (ReserveQuota), per channel.
func (t *Tx) MonthSpent(ctx context.Context, tenantID uuid.UUID, month time.Time) (map[app.Channel]app.Money, error) {
	var rows []struct {
		Channel app.Channel `db:"channel"`
		Spent   app.Money   `db:"spent"`
	}
	err := t.tx.SelectContext(ctx, &rows, `SELECT channel, spent FROM quota_usage WHERE tenant_id = $1 AND month = $2`, tenantID, month)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[app.Channel]app.Money, len(rows))
	for _, r := range rows {
		out[r.Channel] = r.Spent
	}
	return out, nil
}

// LimitRefusals serves app.LimitAdminTx: the tenant's refused requests
// since a time, by code, of the codes given.
func (t *Tx) LimitRefusals(ctx context.Context, tenantID uuid.UUID, since time.Time, codes []string) (map[string]int, error) {
	var rows []struct {
		Code  string `db:"code"`
		Count int    `db:"count"`
	}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT code, count(*) AS count FROM api_rejections
		WHERE tenant_id = $1 AND at >= $2 AND code = ANY($3::text[])
		GROUP BY code`, tenantID, since, app.StringList(codes))
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Code] = r.Count
	}
	return out, nil
}
