package db_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// TestRuntimeRole connects as the runtime role web, worker and serve use
// (every database test does) and tries what an attacker with its password,
// or a bug, would to rewrite history: each is refused by Postgres itself,
// while the owner keeps what the migrations need.
func TestRuntimeRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := dbtest.OwnerDB(t, b.db)

	role, owns, err := b.db.OwnsSchema(b.ctx)
	require.NoError(t, err)
	require.Equal(t, dbtest.RuntimeRole, role)
	require.False(t, owns, "the tests run as the runtime role")
	_, owns, err = owner.OwnsSchema(b.ctx)
	require.NoError(t, err)
	require.True(t, owns)
	_, err = app.CheckSchemaOwner(false, "herald", true)
	require.ErrorContains(t, err, "does not start in prod")
	warning, err := app.CheckSchemaOwner(true, "herald", true)
	require.NoError(t, err, "dev warns")
	require.Contains(t, warning, "owns Herald's tables")

	for _, c := range []struct{ name, sql, refusal string }{
		{"truncate the anchors", `TRUNCATE audit_anchors`, "permission denied for table audit_anchors"},
		{"truncate the messages", `TRUNCATE messages CASCADE`, "permission denied for table messages"},
		{"drop the anchor guard", `DROP TRIGGER audit_anchors_guard ON audit_anchors`, "must be owner of relation audit_anchors"},
		{"disable the status guard", `ALTER TABLE messages DISABLE TRIGGER messages_status_forward`, "must be owner of table messages"},
		{"replace the status guard", `CREATE OR REPLACE FUNCTION herald_message_status_guard() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
			"permission denied for schema public"},
		{"delete audit entries", `DELETE FROM audit_log`, "permission denied for table audit_log"},
		{"edit audit entries", `UPDATE audit_log SET action = 'forged'`, "permission denied for table audit_log"},
		{"delete anchors", `DELETE FROM audit_anchors`, "permission denied for table audit_anchors"},
		{"edit anchors", `UPDATE audit_anchors SET head_id = 0`, "permission denied for table audit_anchors"},
		{"edit a contact's history", `UPDATE contact_changes SET field = 'x'`, "permission denied for table contact_changes"},
		{"edit a template's history", `DELETE FROM template_versions`, "permission denied for table template_versions"},
		{"edit a message's timeline", `UPDATE message_events SET to_status = 'READ'`, "permission denied for table message_events"},
		{"forge the migration history", `DELETE FROM herald_migrations`, "permission denied for table herald_migrations"},
		{"create a table", `CREATE TABLE stash (x text)`, "permission denied for schema public"},
		{"change a table", `ALTER TABLE messages ADD COLUMN x text`, "must be owner of table messages"},
		{"drop row security", `ALTER TABLE messages DISABLE ROW LEVEL SECURITY`, "must be owner of table messages"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
				_, err := tx.SQL().ExecContext(b.ctx, c.sql)
				return err
			})
			require.ErrorContains(t, err, c.refusal)
		})
	}

	t.Run("a table without a declared grant stops the migration", func(t *testing.T) {
		_, err := owner.SQL.ExecContext(b.ctx, `CREATE TABLE undeclared_things (id int)`)
		require.NoError(t, err)
		err = db.GrantRuntime(b.ctx, owner.SQL.DB, dbtest.RuntimeRole)
		require.ErrorContains(t, err, "tables without a runtime grant (db.runtimePrivileges): undeclared_things")
		_, err = owner.SQL.ExecContext(b.ctx, `DROP TABLE undeclared_things`)
		require.NoError(t, err)
		require.NoError(t, db.GrantRuntime(b.ctx, owner.SQL.DB, dbtest.RuntimeRole), "granting again changes nothing")
	})
	t.Run("a runtime role that does not exist", func(t *testing.T) {
		err := db.GrantRuntime(b.ctx, owner.SQL.DB, "herald_nobody")
		require.ErrorIs(t, err, db.ErrNoRuntimeRole)
		require.ErrorContains(t, err, `CREATE ROLE "herald_nobody" LOGIN`)
	})
}
