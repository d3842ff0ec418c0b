package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"
)

// Herald runs as two database roles. The owner runs the migrations (`herald
// migrate`, the release command) and owns every table, trigger and
// function. The runtime role, which web, worker and serve connect as, gets
// only what they need (runtimePrivileges): no DDL, no TRUNCATE, no trigger
// changes (only an owner may alter a table), no UPDATE or DELETE on the
// tables that are history (the audit log and its anchors, template
// history) and no UPDATE on a contact's history (which only retention and
// a contact's erasure delete), so neither a bug nor a stolen runtime
// password can rewrite the audit chain or switch off the guards that keep
// a message's history true.

// Privileges a runtime role may hold on a table.
const (
	privRead   = "SELECT"
	privAppend = "SELECT, INSERT"
	// privPrune: an append-only table that retention prunes.
	privPrune = "SELECT, INSERT, DELETE"
	privWrite = "SELECT, INSERT, UPDATE, DELETE"
)

// runtimePrivileges is every table's grant to the runtime role. A table
// not listed gets nothing, and GrantRuntime refuses to run while one
// exists, so a migration adding a table decides its grant here.
var runtimePrivileges = map[string]string{
	// History: appended, never changed or removed.
	"audit_log":         privAppend,
	"audit_anchors":     privAppend,
	"template_versions": privAppend,
	// A message's timeline and a contact's history: appended, never
	// changed, and deleted by retention or a contact's erasure (the
	// personal data they hold may not outlive either).
	"message_events":  privPrune,
	"contact_changes": privPrune,
	// A tenant's event definitions: each change is a new version.
	"tenant_events": privAppend,
	// The migrations' own records: read to tell a server that the schema
	// is behind.
	"herald_migrations": privRead,
	"river_migration":   privRead,

	"api_keys":               privWrite,
	"attachments":            privWrite,
	"api_rejection_counters": privWrite,
	"api_rejections":         privWrite,
	"callback_deliveries":    privWrite,
	"callback_endpoints":     privWrite,
	"channel_accounts":       privWrite,
	"confirmation_windows":   privWrite,
	"contacts":               privWrite,
	"conversations":          privWrite,
	"delivery_deadlines":     privWrite,
	"entity_supersessions":   privWrite,
	"events":                 privWrite,
	// What passengers wrote: retention locks the oldest rows (FOR UPDATE
	// SKIP LOCKED, which needs UPDATE) so that two runs never delete the
	// same ones.
	"inbound_messages":           privWrite,
	"intake_day_counts":          privWrite,
	"login_failure_windows":      privWrite,
	"login_throttle":             privWrite,
	"message_count_marks":        privWrite,
	"message_counts":             privWrite,
	"message_day_counts":         privWrite,
	"message_failure_counts":     privWrite,
	"message_latency_counts":     privWrite,
	"message_latency_day_counts": privWrite,
	"message_template_counts":    privWrite,
	"messages":                   privWrite,
	"meta_templates":             privWrite,
	"prices":                     privWrite,
	"quota_usage":                privWrite,
	"rate_buckets":               privWrite,
	"receipt_inbox":              privWrite,
	"server_credential_refusals": privWrite,
	"sms_log_cursors":            privWrite,
	"sms_log_readers":            privWrite,
	"templates":                  privWrite,
	"tenant_branding":            privWrite,
	"alert_settings":             privWrite,
	"staff_alerts":               privWrite,
	"tenant_limits":              privWrite,
	"tenants":                    privWrite,
	"trip_bookings":              privWrite,
	"upload_rows":                privWrite,
	"uploads":                    privWrite,
	"usage_counters":             privWrite,
	"users":                      privWrite,
	"user_second_factors":        privWrite,
	"user_recovery_codes":        privWrite,
	"user_security_keys":         privWrite,
	"webauthn_ceremonies":        privWrite,
	"whatsapp_number_health":     privWrite,
	"whatsapp_reach":             privWrite,
	// Read by every scope, changed by operators.
	"platform_settings": privWrite,
	// Retention locks the receipts it prunes (FOR UPDATE needs UPDATE).
	"webhook_receipts": privWrite,
	// River's queue.
	"river_job":          privWrite,
	"river_leader":       privWrite,
	"river_notification": privWrite,
	"river_queue":        privWrite,
	"river_client":       privWrite,
	"river_client_queue": privWrite,
}

// ErrNoRuntimeRole says that the role DATABASE_URL names does not exist.
var ErrNoRuntimeRole = errors.New("the runtime role does not exist")

// GrantRuntime gives role, the runtime role, exactly runtimePrivileges on
// the schema's tables, the use of their sequences and nothing else (what
// it held before is revoked first, so a narrowed grant takes effect). It
// runs after every migration as the owner, in one transaction. Granting
// to the owner itself does nothing: an owner holds every privilege.
func GrantRuntime(ctx context.Context, sqlDB *sql.DB, role string) error {
	if role == "" {
		return nil
	}
	// sqlx only for its SelectContext: the pool stays the caller's.
	tx, err := sqlx.NewDb(sqlDB, "pgx").BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	var exists, owner bool
	err = tx.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1),
			EXISTS (SELECT FROM pg_roles WHERE rolname = $1) AND pg_has_role($1, current_user, 'MEMBER')`, role).Scan(&exists, &owner)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("%w: %q (create it as a login role without SUPERUSER or BYPASSRLS: CREATE ROLE %s LOGIN PASSWORD '...')",
			ErrNoRuntimeRole, role, pgx.Identifier{role}.Sanitize())
	}
	if owner {
		return nil
	}
	var tables []string
	if err := tx.SelectContext(ctx, &tables, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`); err != nil {
		return err
	}
	var undeclared []string
	for _, t := range tables {
		if runtimePrivileges[t] == "" {
			undeclared = append(undeclared, t)
		}
	}
	if len(undeclared) > 0 {
		return fmt.Errorf("tables without a runtime grant (db.runtimePrivileges): %s", strings.Join(undeclared, ", "))
	}
	r := pgx.Identifier{role}.Sanitize()
	statements := []string{
		`GRANT USAGE ON SCHEMA public TO ` + r,
		`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ` + r,
		`REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ` + r,
		`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ` + r,
	}
	for _, t := range tables {
		statements = append(statements, fmt.Sprintf(`GRANT %s ON %s TO %s`, runtimePrivileges[t], pgx.Identifier{t}.Sanitize(), r))
	}
	// Before PostgreSQL 15 every role may create in schema public.
	var create bool
	if err := tx.QueryRowContext(ctx, `SELECT has_schema_privilege($1, 'public', 'CREATE')`, role).Scan(&create); err != nil {
		return err
	}
	if create {
		statements = append(statements, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	}
	for _, s := range statements {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("grant the runtime role: %s: %w", s, err)
		}
	}
	return tx.Commit()
}

// RuntimeGrants is runtimePrivileges as text, one table a line in order:
// the test harness fingerprints its templates with it, so a changed grant
// builds a new one.
func RuntimeGrants() string {
	names := make([]string, 0, len(runtimePrivileges))
	for t := range runtimePrivileges {
		names = append(names, t)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, t := range names {
		fmt.Fprintf(&b, "%s: %s\n", t, runtimePrivileges[t])
	}
	return b.String()
}

// OwnsSchema reports whether the role Herald is connected as owns any of
// its tables, or may act as a role that does: a process connected so can
// drop the guards the runtime role cannot.
func (d *DB) OwnsSchema(ctx context.Context) (role string, owns bool, err error) {
	err = d.SQL.QueryRowxContext(ctx, `
		SELECT current_user::text, EXISTS (
			SELECT FROM pg_tables WHERE schemaname = current_schema() AND pg_has_role(current_user, tableowner, 'MEMBER'))`).Scan(&role, &owns)
	return role, owns, err
}
