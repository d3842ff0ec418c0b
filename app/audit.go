package app

import (
	"context"
	"encoding/hex"
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

// AuditAnchor is a checkpoint of a chain's head: its newest entry's id and
// hash when the verification job last ran.
type AuditAnchor struct {
	TenantID *uuid.UUID `db:"tenant_id"`
	HeadID   int64      `db:"head_id"`
	HeadHash []byte     `db:"head_hash"`
}

// AuditTx lists the statements Audit runs.
type AuditTx interface {
	Tx
	VerifyAuditChains(ctx context.Context) ([]AuditBreak, error)
	// CheckAuditAnchors reports every chain whose newest anchored head is
	// gone or changed.
	CheckAuditAnchors(ctx context.Context) ([]AuditBreak, error)
	// AnchorAuditChains records the head of every chain that moved since
	// its last anchor, except the chains in skip, and returns the new anchors.
	AnchorAuditChains(ctx context.Context, skip []*uuid.UUID, at time.Time) ([]AuditAnchor, error)
}

// Audit checks the audit log.
type Audit struct {
	Store Store[AuditTx]
	Log   *slog.Logger
	Now   Clock
}

// Verify recomputes every chain, checks each against its last anchored
// head (so that deleting a chain's newest entries is found too), logs each
// break as an error, and anchors the heads of the chains that verified:
// in the database and in the log, which lives outside it. The oldest
// surviving entry of a chain is trusted as its start, so retention pruning
// does not count as a break. A chain found broken is not anchored again, so
// the break is reported on every run until someone looks into it.
func (a *Audit) Verify(ctx context.Context) ([]AuditBreak, error) {
	var breaks []AuditBreak
	var anchors []AuditAnchor
	err := a.Store.InPlatform(ctx, func(tx AuditTx) error {
		chain, err := tx.VerifyAuditChains(ctx)
		if err != nil {
			return err
		}
		heads, err := tx.CheckAuditAnchors(ctx)
		if err != nil {
			return err
		}
		breaks = append(chain, heads...)
		var skip []*uuid.UUID
		for _, b := range breaks {
			skip = append(skip, b.TenantID)
		}
		anchors, err = tx.AnchorAuditChains(ctx, skip, a.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, b := range breaks {
		a.Log.ErrorContext(ctx, "audit log chain is broken: entries were changed outside Herald",
			"tenant_id", b.TenantID, "entry_id", b.EntryID, "reason", b.Reason)
	}
	for _, an := range anchors {
		a.Log.InfoContext(ctx, "audit log checkpoint", "tenant_id", an.TenantID, "head_id", an.HeadID, "head_hash", hex.EncodeToString(an.HeadHash))
	}
	return breaks, nil
}
