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
type Store[T Tx] interface {
	// InTenant runs fn in a transaction that can see only tenantID's rows.
	// The transaction commits when fn returns nil and rolls back otherwise.
	InTenant(ctx context.Context, tenantID uuid.UUID, fn func(T) error) error
	// InPlatform runs fn in a transaction that can see every tenant's rows.
	InPlatform(ctx context.Context, fn func(T) error) error
}

// PipelineTx is every statement of the pipeline's stores.
type PipelineTx interface {
	Tx
	TenantStore
	UserStore
	APIKeyStore
	AuditStore
	AccountStore
	TemplateStore
	EventStore
	ContactStore
	MessageStore
	MaintenanceStore
}

// TenantStore reads and writes tenants.
type TenantStore interface {
	CreateTenant(ctx context.Context, t *Tenant) error
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	TenantBySlug(ctx context.Context, slug string) (*Tenant, error)
}

// UserStore reads and writes console users.
type UserStore interface {
	CreateUser(ctx context.Context, u *User) error
	UserByEmail(ctx context.Context, email string) (*User, error)
	UserByID(ctx context.Context, id uuid.UUID) (*User, error)
	CountOperators(ctx context.Context) (int, error)
}

// APIKeyStore reads and writes API keys.
type APIKeyStore interface {
	CreateAPIKey(ctx context.Context, k *APIKey) error
	TouchAPIKey(ctx context.Context, tenantID, id uuid.UUID, at time.Time) error
	// RevokeAPIKey revokes one of the tenant's keys and returns it;
	// revoked is false when it was revoked before. An unknown key is ENOTFOUND.
	RevokeAPIKey(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (k *APIKey, revoked bool, err error)
}

// AuditStore appends to the audit log. The database chains each entry to the
// previous one of the same tenant by hash, so edits are detectable.
type AuditStore interface {
	InsertAudit(ctx context.Context, e *AuditEntry) error
	VerifyAuditChains(ctx context.Context) ([]AuditBreak, error)
}

// AccountStore reads and writes channel accounts.
type AccountStore interface {
	CreateAccount(ctx context.Context, a *ChannelAccount) error
	AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*ChannelAccount, error)
	// ActiveAccount returns the tenant's ACTIVE account on the channel.
	ActiveAccount(ctx context.Context, tenantID uuid.UUID, ch Channel) (*ChannelAccount, error)
	SetAccountStatus(ctx context.Context, tenantID, id uuid.UUID, status, reason string, at time.Time) error
	// AccountsByProvider returns the tenant's accounts with a provider that
	// are not DISABLED.
	AccountsByProvider(ctx context.Context, tenantID uuid.UUID, provider string) ([]*ChannelAccount, error)
}

// TemplateStore reads and writes templates and their history.
type TemplateStore interface {
	CreateTemplates(ctx context.Context, ts []*Template) error
	TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*Template, error)
	// FindTemplate returns the active template of the first locale in
	// locales that has one.
	FindTemplate(ctx context.Context, tenantID uuid.UUID, event string, ch Channel, locales []string) (*Template, error)
	UpdateTemplate(ctx context.Context, t *Template) error
	InsertTemplateVersion(ctx context.Context, t *Template) error
	// LockTemplate returns one of the tenant's templates and locks its row
	// until the transaction ends, so that saves and restores of it run one
	// after the other.
	LockTemplate(ctx context.Context, tenantID, id uuid.UUID) (*Template, error)
}

// EventStore reads and writes events (the outbox).
type EventStore interface {
	// InsertEvent stores the event unless the tenant used its source event
	// id before; it reports whether it stored it.
	InsertEvent(ctx context.Context, e *Event) (bool, error)
	EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Event, error)
	// EventForRouting locks the event for the routing transaction and
	// returns it with its tenant (whose row it does not lock).
	EventForRouting(ctx context.Context, tenantID, id uuid.UUID) (*Event, *Tenant, error)
	EventBySourceID(ctx context.Context, tenantID uuid.UUID, sourceID string) (*Event, error)
	// LatestEventForEntity returns the newest event about the entity, of
	// the trigger event when one is named.
	LatestEventForEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID, trigger string) (*Event, error)
	UpdateEventSchedule(ctx context.Context, e *Event) error
	SetEventStatus(ctx context.Context, e *Event) error
}

// ContactStore reads and writes contacts and conversations.
type ContactStore interface {
	// FindContact looks a recipient up by profile id, else phone, else e-mail.
	FindContact(ctx context.Context, tenantID uuid.UUID, profileID, phone, email string) (*Contact, error)
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	// CreateContact stores c, or returns the contact that won a race for the
	// same profile id.
	CreateContact(ctx context.Context, c *Contact) (*Contact, error)
	UpdateContact(ctx context.Context, c *Contact, r Recipient, at time.Time) error
	// LatestOpenConversation returns the contact's newest conversation that
	// is not resolved.
	LatestOpenConversation(ctx context.Context, tenantID, contactID uuid.UUID) (*Conversation, error)
	// InsertInbound stores an inbound message unless its provider id is
	// known; it reports whether it stored it.
	InsertInbound(ctx context.Context, m *InboundMessage) (bool, error)
	// OpenWhatsAppWindow records until when the contact's WhatsApp window is
	// open (it only ever moves later).
	OpenWhatsAppWindow(ctx context.Context, tenantID, contactID uuid.UUID, until time.Time) error
	// MarkEmailComplained records a spam complaint: the address is not
	// used for e-mail again.
	MarkEmailComplained(ctx context.Context, tenantID, contactID uuid.UUID, at time.Time) error
	// OpenConversation returns the contact's open conversation about the
	// entity, opening one when there is none.
	OpenConversation(ctx context.Context, tenantID, contactID uuid.UUID, entityType, entityID string, at time.Time) (*Conversation, error)
}

// MessageStore reads and writes messages, their timelines, receipts and usage.
type MessageStore interface {
	// InsertMessage stores m with its first timeline entry unless its
	// idempotency key exists; it reports whether it stored them.
	InsertMessage(ctx context.Context, m *Message, first *MessageEvent) (bool, error)
	MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Message, error)
	MessagesByEvent(ctx context.Context, tenantID, eventID uuid.UUID) ([]*Message, error)
	MessagesByEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*Message, error)
	CancelQueuedMessages(ctx context.Context, tenantID, eventID uuid.UUID, at time.Time) (int, error)
	// MessageForDispatch returns the message with its tenant, its channel
	// account and the tenant's usage of its channel in the month, in one
	// round trip; Tenant and Account are nil when it has no account.
	MessageForDispatch(ctx context.Context, tenantID, id uuid.UUID, month time.Time) (*DispatchState, error)
	// RecordSent moves a QUEUED message to SENT and, only when it moved,
	// writes the timeline entry and counts the send in the month's usage;
	// false if it was not QUEUED.
	RecordSent(ctx context.Context, s SentRecord) (bool, error)
	// MarkFailed moves a message in one of the from statuses to FAILED.
	MarkFailed(ctx context.Context, tenantID, id uuid.UUID, from []string, reason, code string, at time.Time) (bool, error)
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	Timeline(ctx context.Context, tenantID, messageID uuid.UUID) ([]*MessageEvent, error)
	MessageByExternalID(ctx context.Context, provider, externalID string) (*Message, error)
	// StoreReceipt records a receipt once; false means it was seen before.
	StoreReceipt(ctx context.Context, tenantID, messageID *uuid.UUID, r provider.Receipt) (bool, error)
	// RecordReceipt stores a receipt of a known message once and, the
	// first time only, moves the message from r.From to r.To (when r.To is
	// set and the message is still in r.From) and writes the timeline entry,
	// in one statement. fresh is false for a receipt seen before; moved says
	// whether the status changed.
	RecordReceipt(ctx context.Context, r ReceiptRecord) (fresh, moved bool, err error)
	Usage(ctx context.Context, tenantID uuid.UUID, ch Channel, month time.Time) (int, error)
	AddUsage(ctx context.Context, tenantID uuid.UUID, ch Channel, month time.Time, n int) error
}

// DispatchState is a message with what sending it needs.
type DispatchState struct {
	Message *Message
	// Tenant and Account are nil when the message has no channel account.
	Tenant  *Tenant
	Account *ChannelAccount
	// Used is the tenant's count of messages on the message's channel in
	// the month asked for.
	Used int
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
}

// MaintenanceStore serves the periodic housekeeping jobs.
type MaintenanceStore interface {
	ListTenants(ctx context.Context) ([]*Tenant, error)
	// StuckMessages returns QUEUED messages queued before the given time
	// that have no live dispatch job.
	StuckMessages(ctx context.Context, queuedBefore time.Time, limit int) ([]DispatchJob, error)
	// MarkStale sets stale_at on SENT messages sent before the given time
	// that never got a receipt, with a timeline entry each.
	MarkStale(ctx context.Context, sentBefore, at time.Time, limit int) (int, error)
	PruneMessages(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	PruneEvents(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	PruneReceipts(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
}

// Clock returns the current time; tests substitute a fixed one.
type Clock func() time.Time
