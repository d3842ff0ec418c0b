// Package provider is the contract between Herald's dispatcher and the
// services that carry messages (Meta's WhatsApp Cloud API, Amazon SES and
// SNS, tenant webhooks, the sandbox): what a send looks like, how failures
// are classified, and what a delivery receipt carries. One package per
// provider implements it.
package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Class says what the dispatcher should do about a failed send.
type Class string

// Error classes.
const (
	// Transient failures are retried with backoff (timeouts, 5xx, overload).
	Transient Class = "transient"
	// Permanent failures are not retried (bad recipient, rejected content);
	// the next channel of a fallback chain takes over.
	Permanent Class = "permanent"
	// RateLimited failures wait for the provider's hint without using an attempt.
	RateLimited Class = "rate_limited"
)

// Error is a classified provider failure.
type Error struct {
	// Code is the provider's own code (131026, MessageRejected, ...).
	Code   string
	Class  Class
	Reason string
	// RetryAfter is the provider's hint for RateLimited errors.
	RetryAfter time.Duration
	// Account marks problems of the channel account itself (expired token,
	// suspended or misconfigured account), which the tenant must fix.
	Account bool
	// ServerCredentials marks the server's own credentials refused (the
	// default AWS credential chain of an account without keys of its own):
	// the operator must fix them, and every account that sends with them
	// fails alike, whatever tenant it belongs to.
	ServerCredentials bool
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Class, e.Code, e.Reason)
}

// Classify returns err's provider error, treating anything unclassified as
// transient: an unknown failure is retried rather than dropped.
func Classify(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Code: "unknown", Class: Transient, Reason: err.Error()}
}

// Account is the channel account a message goes out through, with its
// secrets already decrypted.
type Account struct {
	ID       uuid.UUID
	TenantID uuid.UUID
	Provider string
	Config   map[string]string
	Secrets  map[string]string
}

// WhatsAppTemplate names an approved Meta template and the values of its
// body parameters, in order.
type WhatsAppTemplate struct {
	Name       string
	Language   string
	Parameters []string
	// Header, when set, is the file a template with a DOCUMENT or IMAGE
	// header (HeaderFormat) carries: its Link is sent as the header's
	// parameter.
	Header       *File
	HeaderFormat string
}

// Outbound is one message to send.
type Outbound struct {
	MessageID uuid.UUID
	TenantID  uuid.UUID
	Channel   string
	To        string
	Subject   string
	Body      string
	// Template, when set, sends a WhatsApp template message instead of text.
	Template *WhatsAppTemplate
	// Attempt counts from 1.
	Attempt int
	Account Account
	// UnsubscribeURL, on an optional e-mail, is the https link that
	// unsubscribes its recipient in one click (RFC 8058): e-mail adapters
	// send it as List-Unsubscribe with List-Unsubscribe-Post.
	UnsubscribeURL string
	// SenderName, when set, is the From address's display name, the
	// tenant's branding's; it replaces the account's own.
	SenderName string
	// Attachments are the files the message carries, in order, with
	// their bytes; a provider that cannot carry a file sends its Link.
	Attachments []File
}

// File is one file of a message.
type File struct {
	Filename    string
	ContentType string
	Content     []byte
	// SHA256 is Content's hash in lower-case hex.
	SHA256 string
	// Link, when set, is a signed, expiring https link that serves the
	// file, for channels that carry links rather than files (and that
	// Meta fetches a WhatsApp document from).
	Link string
	// MediaID, when set, is the id of the file uploaded to the provider
	// (Meta's media endpoint), sent instead of the link.
	MediaID string
}

// WhatsAppMedia is how WhatsApp carries a file of contentType: "document"
// (PDF), "image" (JPEG, PNG), or "" for a type Meta takes as neither (a
// calendar entry, a wallet pass, a GIF, a WebP, which WhatsApp knows only
// as a sticker). Meta's list of supported media types (Cloud API,
// "Supported media types") has no .ics or .pkpass: such files travel as
// links.
func WhatsAppMedia(contentType string) string {
	switch contentType {
	case "application/pdf":
		return "document"
	case "image/jpeg", "image/png":
		return "image"
	}
	return ""
}

// WhatsApp's size limits of the files Meta takes: documents up to 100 MB,
// images up to 5 MB.
const (
	MaxWhatsAppDocumentBytes = 100 << 20
	MaxWhatsAppImageBytes    = 5 << 20
)

// Provider sends messages.
type Provider interface {
	// Send hands the message to the provider and returns the provider's id
	// for it. Errors should be *Error.
	Send(ctx context.Context, m Outbound) (externalID string, err error)
}

// Set maps provider names (meta, ses, sns, webhook, sandbox) to providers.
type Set map[string]Provider

// Receipt statuses.
const (
	StatusSent      = "sent"
	StatusDelivered = "delivered"
	StatusRead      = "read"
	StatusFailed    = "failed"
	// StatusInfo reports something worth the timeline that moves no status
	// (an open, a click, a delay, a transient bounce).
	StatusInfo = "info"
)

// Receipt is a provider's report about a message it accepted.
type Receipt struct {
	Provider   string
	ExternalID string
	// AccountRef is the provider-side account the payload says the receipt
	// is about (Meta's metadata.phone_number_id, the SES configuration set
	// of the mail), or empty when it says none. Receipts only touch
	// messages of the channel account it names.
	AccountRef string
	// ReceiptID identifies this report; a replay carries the same id.
	ReceiptID string
	Status    string
	Code      string
	Reason    string
	At        time.Time
	// Raw is a short excerpt of the provider's payload for the timeline.
	Raw string
	// Error classifies a failure's code as the adapter classifies the same
	// code at send time (a rate limit, an account problem, ...); nil when
	// the receipt is no failure or the provider gives no code.
	Error *Error
	// Complaint marks a spam complaint: the contact's address is not used
	// for e-mail again.
	Complaint bool
	// MessageRef is the Herald message id the provider echoed from the
	// send (Meta's biz_opaque_callback_data, SES's message_id tag), or
	// uuid.Nil when the receipt carries none. It finds the message of a
	// send whose answer Herald never read, and so never learned ExternalID.
	MessageRef uuid.UUID `json:",omitzero"`
}

// Echoing is implemented by providers whose receipts of an account's sends
// name the Herald message they are about (Receipt.MessageRef): a send whose
// answer Herald never read is settled by the provider's own receipt, and not
// made again while Herald waits for it.
type Echoing interface {
	Echoes(a Account) bool
}

// Idempotent is implemented by providers whose far end recognises a message
// sent twice (by Outbound.MessageID), so that a send whose outcome is
// unknown (Herald lost the answer) may simply be made again.
type Idempotent interface {
	Idempotent() bool
}
