package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// Actor kinds recorded in the audit log.
const (
	ActorUser   = "user"
	ActorAPIKey = "api_key"
	ActorSystem = "system"
	ActorCLI    = "cli"
)

// Actor is whoever causes a change: a console user, a tenant system through
// its API key, Herald itself, or an administrator at the command line.
type Actor struct {
	Type  string
	ID    *uuid.UUID
	Label string
}

// SystemActor is Herald acting on its own (jobs, webhooks, maintenance).
var SystemActor = Actor{Type: ActorSystem, Label: "herald"}

// CLIActor is an administrator using the herald command.
var CLIActor = Actor{Type: ActorCLI, Label: "herald admin"}

// Entry returns an audit entry made by a.
func (a Actor) Entry(tenantID *uuid.UUID, action, targetType, targetID string, meta map[string]any) *AuditEntry {
	return &AuditEntry{
		TenantID:   tenantID,
		ActorType:  a.Type,
		ActorID:    a.ID,
		ActorLabel: a.Label,
		Action:     action,
		TargetType: targetType,
		TargetID:   targetID,
		Metadata:   meta,
	}
}

// AuditEntry is one line of the audit log. Hash chains it to the previous
// entry of the same tenant (or of the platform, when TenantID is nil); the
// database computes both hashes on insert.
type AuditEntry struct {
	ID         int64          `db:"id"`
	TenantID   *uuid.UUID     `db:"tenant_id"`
	ActorType  string         `db:"actor_type"`
	ActorID    *uuid.UUID     `db:"actor_id"`
	ActorLabel string         `db:"actor_label"`
	Action     string         `db:"action"`
	TargetType string         `db:"target_type"`
	TargetID   string         `db:"target_id"`
	Metadata   map[string]any `db:"-"`
	At         time.Time      `db:"at"`
	PrevHash   []byte         `db:"prev_hash"`
	Hash       []byte         `db:"hash"`
}

// AuditBreak is a place where the audit chain does not verify: an entry whose
// content no longer matches its hash, or whose link to the previous entry is
// broken. Either means the log was edited outside Herald.
type AuditBreak struct {
	TenantID *uuid.UUID `db:"tenant_id"`
	EntryID  int64      `db:"id"`
	Reason   string     `db:"reason"`
}

// AuditTx lists the statements Audit runs.
type AuditTx interface {
	Tx
	VerifyAuditChains(ctx context.Context) ([]AuditBreak, error)
}

// Audit checks the audit log.
type Audit struct {
	Store Store[AuditTx]
	Log   *slog.Logger
}

// Verify recomputes every chain and logs each break as an error. The oldest
// surviving entry of a chain is trusted as its start, so retention pruning
// does not count as a break.
func (a *Audit) Verify(ctx context.Context) ([]AuditBreak, error) {
	var breaks []AuditBreak
	err := a.Store.InPlatform(ctx, func(tx AuditTx) (err error) {
		breaks, err = tx.VerifyAuditChains(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, b := range breaks {
		a.Log.ErrorContext(ctx, "audit log chain is broken: entries were changed outside Herald",
			"tenant_id", b.TenantID, "entry_id", b.EntryID, "reason", b.Reason)
	}
	return breaks, nil
}
