package db

import (
	"context"
	"time"

	"github.com/heraldhq/herald/app"
)

var _ app.HealthProbe = (*DB)(nil)

// QueueState implements app.HealthProbe from River's tables, which carry no
// tenant data and need no scope.
func (d *DB) QueueState(ctx context.Context) (app.QueueState, error) {
	var q app.QueueState
	var oldest float64
	err := d.SQL.QueryRowxContext(ctx, `
		SELECT count(*), coalesce(extract(epoch FROM now() - min(scheduled_at)), 0)
		FROM river_job WHERE state = 'available'`).Scan(&q.Available, &oldest)
	if err != nil {
		return q, err
	}
	q.OldestAvailable = time.Duration(oldest * float64(time.Second))
	if q.OldestAvailable < 0 {
		q.OldestAvailable = 0
	}
	err = d.SQL.SelectContext(ctx, &q.Paused, `SELECT name FROM river_queue WHERE paused_at IS NOT NULL ORDER BY name`)
	if q.Paused == nil {
		q.Paused = []string{}
	}
	return q, err
}

// RowSecurityBypass reports the role Herald is connected as and how it
// escapes row-level security: "superuser", "BYPASSRLS", or "" when the
// tenants' policies apply to it.
func (d *DB) RowSecurityBypass(ctx context.Context) (role, bypass string, err error) {
	err = d.SQL.QueryRowxContext(ctx, `
		SELECT current_user::text, CASE WHEN rolsuper THEN 'superuser' WHEN rolbypassrls THEN 'BYPASSRLS' ELSE '' END
		FROM pg_roles WHERE rolname = current_user`).Scan(&role, &bypass)
	return role, bypass, err
}
