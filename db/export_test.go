package db

import (
	"database/sql"

	"github.com/pressly/goose/v3"
)

// NewMigrationProvider returns a goose provider of Herald's migrations that
// records them where Migrate does, for tests that apply them one at a time
// (an upgrade test migrates to the version before its migration, writes the
// rows it upgrades, then migrates the rest).
func NewMigrationProvider(sqlDB *sql.DB) (*goose.Provider, error) { return newProvider(sqlDB) }

// VersionTable is the table Migrate records Herald's migrations in.
const VersionTable = versionTable

// ContactCandidatesQuery lets the tests read the statement's plan.
const ContactCandidatesQuery = contactCandidatesQuery

// MatchInboxQuery lets the tests read the statement's plan.
var MatchInboxQuery = matchInboxQuery

// DeleteInboxReceiptsQuery lets the tests read the statement's plan.
const DeleteInboxReceiptsQuery = deleteInboxReceiptsQuery

// PruneMessagesBatchQuery lets the tests read the statement's plan.
const PruneMessagesBatchQuery = pruneMessagesBatch

// PruneMessagesTimelineQuery lets the tests read the statement's plan.
const PruneMessagesTimelineQuery = pruneMessagesTimeline
