package app

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Tx is one open transaction on Herald's database. Services never see it
// bare: each names the statements it runs in an interface of its own that
// embeds Tx (RouteTx, DispatchTx, ...), so a test fake implements a handful of
// methods and a reader sees what a service touches. Tx itself is what the job
// queue needs: a job is inserted in the transaction of the row it works on.
type Tx interface {
	// TenantID is the tenant the transaction is scoped to, or uuid.Nil in
	// platform scope.
	TenantID() uuid.UUID
}

// Store opens transactions on Herald's database and hands them to fn as a T,
// the statements one service runs. Every read and write of a tenant's data
// happens inside a transaction scoped to that tenant, which the database
// enforces with row-level security as a second line of defence behind the
// tenant filter every statement carries. Work that spans tenants (operator
// pages, sign-in, API-key lookup, maintenance) runs in an explicit platform
// scope, so forgetting a scope is an empty result, never a leak.
//
// A transaction belongs to one tenant (or to the platform), always, from
// its first statement to its commit: nothing moves it to another tenant's
// scope, so one tenant's locks, timeouts and failures end only that
// tenant's work. Work of several tenants is several transactions, and any
// batching stays within one tenant's. Every test database refuses a
// second scope in a transaction (db/dbtest/guard.go).
type Store[T Tx] interface {
	// InTenant runs fn in a transaction that can see only tenantID's rows.
	// The transaction commits when fn returns nil and rolls back otherwise.
	InTenant(ctx context.Context, tenantID uuid.UUID, fn func(T) error) error
	// InPlatform runs fn in a transaction that can see every tenant's rows.
	InPlatform(ctx context.Context, fn func(T) error) error
}

// DispatchState is a message with what sending it needs.
type DispatchState struct {
	Message *Message
	// Tenant and Account are nil when the message has no channel account.
	Tenant  *Tenant
	Account *ChannelAccount
	// CredentialsRefused: the account is in a spell of refusals of the
	// server's own credentials (see ServerCredentials).
	CredentialsRefused bool
	// MaxSMSParts is the operator's limit of the tenant's SMS length in
	// parts; nil: DefaultMaxSMSParts.
	MaxSMSParts *int
	// Branding is the tenant's e-mail branding, on an e-mail whose tenant
	// set one; nil: the neutral layout.
	Branding *Branding
	// AckMarked: the tenant marked the message's event as asking for
	// acknowledgement (an ACKNOWLEDGED deadline for it).
	AckMarked bool
}

// SentRecord is a provider's acceptance of a message: the message becomes
// SENT with the provider's id, the timeline gets Detail, and the send counts
// towards the tenant's usage of Channel in UsageMonth.
type SentRecord struct {
	TenantID, MessageID  uuid.UUID
	Provider, ExternalID string
	Attempt              int
	At                   time.Time
	Channel              Channel
	UsageMonth           time.Time
	Detail               map[string]any
	// CallbackEvent names the callback event whose subscribed endpoints
	// the recording returns, so that it costs no statement of its own.
	CallbackEvent string
}

// UsageShards is how many rows a tenant's usage of a channel in a month is
// spread over, so that concurrent sends of a tenant do not queue on one
// row.
const UsageShards = 256

// SentResult is what recording a send found: whether the message moved to
// SENT (it may have left QUEUED meanwhile), and, when it did, the endpoints
// subscribed to the record's callback event.
type SentResult struct {
	Moved       bool
	Subscribers []uuid.UUID
	// Current is, when the message did not move, the provider id it has
	// (another attempt's, recorded first), or empty.
	Current string
}

// ReceiptRecord is a provider's receipt for a known message and what it
// does to the message.
type ReceiptRecord struct {
	Receipt             provider.Receipt
	TenantID, MessageID uuid.UUID
	// From is the message's status as read; To, when set, is the status the
	// receipt moves it to.
	From, To string
	// Detail is the timeline entry's detail.
	Detail map[string]any
	// FailedReason is the message's failed_reason when it moves to FAILED:
	// a code, such as meta_131026 (the provider's text is in Detail).
	FailedReason string
	// CallbackEvent names the callback event of the move, whose subscribed
	// endpoints the recording returns when the message moved.
	CallbackEvent string
}

// RecordedReceipt is what recording a receipt did: whether it was new
// (Fresh), whether the message moved (Moved), and then the endpoints
// subscribed to the record's callback event.
type RecordedReceipt struct {
	Fresh, Moved bool
	Subscribers  []uuid.UUID
}

// Clock returns the current time; tests substitute a fixed one.
type Clock func() time.Time
