package db_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db"
)

// messagesIndexReaders names, for every index of messages, the statements
// that need it. Each index costs every insert an entry, and every update
// that changes one of its columns another one (a send, a delivered), so an
// index nobody reads is pure cost on the send path. A new index names its
// reader here; an index whose readers are gone is dropped.
var messagesIndexReaders = map[string]string{
	"messages_pkey":                   "every lookup of a message by id (MessageByID, MessageForDispatch, RecordSent, RecordReceipt)",
	"messages_idempotency_key":        "InsertMessages' ON CONFLICT, MessageByIdempotencyKey",
	"messages_external_key":           "receipts matched to their message (MatchInboxReceipts, herald_park_receipts)",
	"messages_queued_idx":             "StuckMessages, SweepTenants",
	"messages_expiry_idx":             "ExpireMessages, SweepTenants",
	"messages_sent_idx":               "MarkStale, OverdueMessages, SweepTenants",
	"messages_tenant_created_idx":     "ExplorerMessages without a filter, the dashboard's counts since the last roll-up",
	"messages_unredacted_created_idx": "PruneMessages (the messages whose personal data retention has still to remove)",
	"messages_phase_created_idx":      "ExplorerMessages by status, WaitingWork",
	"messages_channel_created_idx":    "ExplorerMessages by channel",
	"messages_trigger_created_idx":    "ExplorerMessages by event",
	"messages_entity_idx":             "the booking panel and the API's messages of a booking (MessagesByEntity), Supersede, ExplorerMessages by entity",
	"messages_failed_reason_idx":      "ExplorerMessages by failure reason (the dashboard's top reasons link there)",
	"messages_address_idx":            "ExplorerMessages by address (did we notify this passenger?)",
	"messages_stale_idx":              "StaleMessages (the dashboard's count)",
	"messages_stale_list_idx":         "ExplorerMessages' stale list",
	"messages_account_idx":            "MessagesByAccount (the account page)",
	"messages_contact_idx":            "ContactsRecentMessages (contact search)",
	"messages_event_id_idx":           "MessagesByEvent, CancelQueuedMessages, PruneEvents",
	"messages_fallback_of_id_idx":     "the fallback_of foreign key's lookups when retention deletes an original, OverdueMessages",
}

func TestMessagesIndexes_EachHasAReader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var names []string
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		rows, err := tx.SQL().QueryContext(b.ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'messages' ORDER BY 1`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			names = append(names, n)
		}
		return rows.Err()
	}))
	require.Equal(t, slices.Sorted(maps.Keys(messagesIndexReaders)), names,
		"every index of messages is named with its readers in messagesIndexReaders, and every one named there exists")
}
