package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const alertSettingsColumns = `tenant_id, staff_emails, webhooks, webhooks_key_id, slack_host, teams_host,
	breaker_minutes, approval_minutes, unanswered_minutes, digest_minute, updated_by, updated_at`

const staffAlertColumns = `id, tenant_id, kind, subject_key, title, body, raised_at, delivered, last_error`

// AlertSettings serves app.AlertTx and app.AlertCheckTx: the tenant's
// settings, or the defaults when it saved none.
func (t *Tx) AlertSettings(ctx context.Context, tenantID uuid.UUID) (*app.AlertSettings, error) {
	var s app.AlertSettings
	err := t.tx.GetContext(ctx, &s, `SELECT `+alertSettingsColumns+` FROM alert_settings WHERE tenant_id = $1`, tenantID)
	if isNoRows(err) {
		return app.DefaultAlertSettings(tenantID), nil
	}
	return &s, mapErr(err)
}

// UpsertAlertSettings serves app.AlertTx.
func (t *Tx) UpsertAlertSettings(ctx context.Context, s *app.AlertSettings) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO alert_settings (`+alertSettingsColumns+`)
		VALUES (:tenant_id, :staff_emails, :webhooks, :webhooks_key_id, :slack_host, :teams_host,
			:breaker_minutes, :approval_minutes, :unanswered_minutes, :digest_minute, :updated_by, :updated_at)
		ON CONFLICT (tenant_id) DO UPDATE SET staff_emails = EXCLUDED.staff_emails, webhooks = EXCLUDED.webhooks,
			webhooks_key_id = EXCLUDED.webhooks_key_id, slack_host = EXCLUDED.slack_host, teams_host = EXCLUDED.teams_host,
			breaker_minutes = EXCLUDED.breaker_minutes, approval_minutes = EXCLUDED.approval_minutes,
			unanswered_minutes = EXCLUDED.unanswered_minutes, digest_minute = EXCLUDED.digest_minute,
			updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at`, s)
	return mapErr(err)
}

// RaiseAlert serves app.AlertRaiseTx. The advisory lock, held to the
// end of the transaction, makes concurrent raises of one subject take
// turns, and the insert's NOT EXISTS then sees the alert of whichever
// committed first.
func (t *Tx) RaiseAlert(ctx context.Context, a *app.StaffAlert, since time.Time) (bool, error) {
	if _, err := t.tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		"herald/staff_alert/"+a.TenantID.String()+"/"+a.Kind+"/"+a.SubjectKey); err != nil {
		return false, mapErr(err)
	}
	res, err := t.tx.ExecContext(ctx, `
		INSERT INTO staff_alerts (`+staffAlertColumns+`)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, ''
		WHERE NOT EXISTS (
			SELECT 1 FROM staff_alerts
			WHERE tenant_id = $2 AND kind = $3 AND subject_key = $4 AND raised_at > $9)`,
		a.ID, a.TenantID, a.Kind, a.SubjectKey, a.Title, a.Body, a.RaisedAt, a.Delivered, since)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr(err)
}

// RecentAlerts serves app.AlertTx.
func (t *Tx) RecentAlerts(ctx context.Context, tenantID uuid.UUID, limit int) ([]*app.StaffAlert, error) {
	var out []*app.StaffAlert
	err := t.tx.SelectContext(ctx, &out, `SELECT `+staffAlertColumns+` FROM staff_alerts
		WHERE tenant_id = $1 ORDER BY raised_at DESC, id LIMIT $2`, tenantID, limit)
	return out, mapErr(err)
}

// AlertByID serves app.AlertTx.
func (t *Tx) AlertByID(ctx context.Context, tenantID, id uuid.UUID) (*app.StaffAlert, error) {
	var a app.StaffAlert
	err := t.tx.GetContext(ctx, &a, `SELECT `+staffAlertColumns+` FROM staff_alerts WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Alert %s not found.", id)
	}
	return &a, nil
}

// MarkAlertDelivered serves app.AlertTx.
func (t *Tx) MarkAlertDelivered(ctx context.Context, tenantID, id uuid.UUID, target, lastError string) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE staff_alerts SET
			delivered = CASE WHEN $3 = '' OR $3 = ANY (delivered) THEN delivered ELSE array_append(delivered, $3) END,
			last_error = CASE WHEN $4 = '' THEN last_error ELSE left($4, 500) END
		WHERE tenant_id = $1 AND id = $2`, tenantID, id, target, lastError)
	return mapErr(err)
}

// AlertTenants serves app.AlertCheckTx (platform scope).
func (t *Tx) AlertTenants(ctx context.Context) ([]uuid.UUID, error) {
	var out []uuid.UUID
	err := t.tx.SelectContext(ctx, &out, `
		SELECT s.tenant_id FROM alert_settings s JOIN tenants t ON t.id = s.tenant_id
		WHERE t.status = 'ACTIVE' ORDER BY s.tenant_id`)
	return out, mapErr(err)
}

// SuspendedAccounts serves app.AlertCheckTx.
func (t *Tx) SuspendedAccounts(ctx context.Context, tenantID uuid.UUID) ([]*app.ChannelAccount, error) {
	var out []*app.ChannelAccount
	err := t.tx.SelectContext(ctx, &out, `SELECT `+accountColumns+` FROM channel_accounts
		WHERE tenant_id = $1 AND status = 'SUSPENDED' ORDER BY name, id`, tenantID)
	return out, mapErr(err)
}

// OpenBreakers serves app.AlertCheckTx: per account, the transitions
// after its breaker last closed; the first of them opened the spell.
func (t *Tx) OpenBreakers(ctx context.Context, tenantID uuid.UUID, openedBy time.Time) ([]app.BreakerSpell, error) {
	var out []app.BreakerSpell
	err := t.tx.SelectContext(ctx, &out, `
		WITH moves AS (
			SELECT target_id, id, at, metadata->>'to' AS to_state
			FROM audit_log
			WHERE tenant_id = $1 AND target_type = 'channel_account' AND action = 'channel_account.breaker'
			  AND at > $2::timestamptz - interval '7 days'
		), closed AS (
			SELECT target_id, max(id) AS id FROM moves WHERE to_state = 'closed' GROUP BY target_id
		), spells AS (
			SELECT m.target_id, min(m.at) AS since
			FROM moves m LEFT JOIN closed c ON c.target_id = m.target_id
			WHERE m.id > coalesce(c.id, 0)
			GROUP BY m.target_id
		)
		SELECT a.id AS account_id, a.name, a.channel, s.since
		FROM spells s JOIN channel_accounts a ON a.tenant_id = $1 AND a.id::text = s.target_id
		WHERE s.since <= $2
		ORDER BY s.since, a.id`, tenantID, openedBy)
	return out, mapErr(err)
}

// HeldMetaTemplates serves app.AlertCheckTx.
func (t *Tx) HeldMetaTemplates(ctx context.Context, tenantID uuid.UUID) ([]*app.MetaTemplate, error) {
	var out []*app.MetaTemplate
	err := t.tx.SelectContext(ctx, &out, `
		SELECT tenant_id, channel_account_id, name, language, meta_id, status, category, rejected_reason, body, synced_at
		FROM meta_templates
		WHERE tenant_id = $1 AND status IN ('REJECTED', 'PAUSED')
		ORDER BY name, language, channel_account_id`, tenantID)
	return out, mapErr(err)
}

// MonthUse serves app.AlertCheckTx.
func (t *Tx) MonthUse(ctx context.Context, tenantID uuid.UUID, month time.Time) ([]app.ChannelMonthUse, error) {
	var out []app.ChannelMonthUse
	err := t.tx.SelectContext(ctx, &out, `
		SELECT channel, used, spent FROM quota_usage WHERE tenant_id = $1 AND month = $2 ORDER BY channel`, tenantID, month)
	return out, mapErr(err)
}

// WaitingApprovals serves app.AlertCheckTx.
func (t *Tx) WaitingApprovals(ctx context.Context, tenantID uuid.UUID, before time.Time) ([]app.WaitingApproval, error) {
	var out []app.WaitingApproval
	err := t.tx.SelectContext(ctx, &out, `
		SELECT id, source_event_id, trigger_event, created_at FROM events
		WHERE tenant_id = $1 AND status = 'AWAITING_APPROVAL' AND created_at <= $2
		ORDER BY created_at, id LIMIT 100`, tenantID, before)
	return out, mapErr(err)
}

// UnansweredReplies serves app.AlertCheckTx: the tenant's unanswered
// conversations (the inbox's own test, conversationUnanswered) whose
// passenger last wrote in the window, each with that message.
func (t *Tx) UnansweredReplies(ctx context.Context, tenantID uuid.UUID, after, before time.Time) ([]app.UnansweredReply, error) {
	var out []app.UnansweredReply
	err := t.tx.SelectContext(ctx, &out, `
		SELECT c.contact_id, coalesce(ct.name, '') AS name, r.id AS inbound_id, r.channel, r.received_at
		FROM conversations c
		JOIN contacts ct ON ct.tenant_id = $1 AND ct.id = c.contact_id
		JOIN LATERAL (
			SELECT i.id, i.channel, i.received_at FROM inbound_messages i
			WHERE i.tenant_id = $1 AND i.conversation_id = c.id AND i.received_at <= c.last_inbound_at
			ORDER BY i.received_at DESC, i.id DESC LIMIT 1
		) r ON true
		WHERE c.tenant_id = $1 AND `+conversationUnanswered+`
		  AND c.last_inbound_at > $2 AND c.last_inbound_at <= $3
		ORDER BY c.last_inbound_at, c.id LIMIT 100`, tenantID, after, before)
	return out, mapErr(err)
}

// DigestDepartures serves app.AlertCheckTx. A departure is the trip the
// events name (conversation or entity), else the tour's name.
func (t *Tx) DigestDepartures(ctx context.Context, tenantID uuid.UUID, day string) ([]app.DigestDeparture, error) {
	var out []app.DigestDeparture
	err := t.tx.SelectContext(ctx, &out, `
		WITH deps AS (
			SELECT e.id,
			       coalesce(CASE WHEN e.entity_type = 'trip' THEN e.entity_id END, e.context->>'trip_id', '') AS trip,
			       coalesce(e.context->>'tour_name', '') AS tour,
			       (e.trigger_event = ANY($3) OR EXISTS (
					SELECT 1 FROM delivery_deadlines dd
					WHERE dd.tenant_id = $1 AND dd.trigger_event = e.trigger_event AND dd.stage = 'ACKNOWLEDGED')) AS asks
			FROM events e JOIN tenants tn ON tn.id = e.tenant_id
			WHERE e.tenant_id = $1 AND e.status <> 'CANCELLED'
			  AND (e.context->>'departure_date' = $2
			       -- A departure time falls on the tenant's local day, not
			       -- on the date its UTC text begins with.
			       OR to_char(herald_departure_at(e.context, tn.timezone) AT TIME ZONE tn.timezone, 'YYYY-MM-DD') = $2)
		),
		-- Each recipient of a notification that asks for acknowledgement,
		-- and whether any of their messages (a fallback's included) was.
		asked AS (
			SELECT d.trip, d.tour, bool_or(m.acknowledged_at IS NOT NULL) AS acked
			FROM deps d JOIN messages m ON m.tenant_id = $1 AND m.event_id = d.id
			WHERE d.asks AND NOT m.test
			GROUP BY d.trip, d.tour, d.id, m.recipient_index
		)
		SELECT d.trip, d.tour, count(DISTINCT d.id) AS events, count(m.id) AS messages,
		       count(m.id) FILTER (WHERE m.status IN ('DELIVERED', 'READ')) AS reached,
		       count(m.id) FILTER (WHERE m.status = 'FAILED') AS failed,
		       (SELECT count(*) FROM asked a WHERE a.trip = d.trip AND a.tour = d.tour AND NOT a.acked) AS not_acknowledged
		FROM deps d LEFT JOIN messages m ON m.tenant_id = $1 AND m.event_id = d.id
		GROUP BY d.trip, d.tour
		ORDER BY d.tour, d.trip`, tenantID, day, app.SafetyEvents())
	return out, mapErr(err)
}

// FailuresByReason serves app.AlertCheckTx.
func (t *Tx) FailuresByReason(ctx context.Context, tenantID uuid.UUID, since time.Time) (map[string]int, error) {
	var rows []struct {
		Reason string `db:"reason"`
		N      int    `db:"n"`
	}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT coalesce(failed_reason, '') AS reason, count(*) AS n FROM messages
		WHERE tenant_id = $1 AND status = 'FAILED' AND failed_at >= $2
		GROUP BY 1`, tenantID, since)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Reason] = r.N
	}
	return out, nil
}
