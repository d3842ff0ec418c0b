package app

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// ContactErasure is what erasing contacts removed. Counts only: the audit
// entry of an erasure carries them, never the data that went.
type ContactErasure struct {
	// Contacts counts the contacts erased: one for a request, 0 when the
	// contact was erased before (an erasure repeated changes nothing).
	Contacts int `json:"-"`
	// Messages counts the messages whose personal data went (address,
	// subject, body, timeline, receipts, callback payloads); their facts
	// stay. Cancelled counts those of them still waiting to be sent,
	// which will not be.
	Messages  int `json:"messages"`
	Cancelled int `json:"cancelled"`
	// Inbound counts messages the passenger sent, Conversations the
	// conversations whose content went, History the changes of the
	// contact's details deleted.
	Inbound       int `json:"inbound_messages"`
	Conversations int `json:"conversations"`
	History       int `json:"history"`
	// Events counts the events whose recipient (and, when the event was
	// the contact's alone, its variables) were blanked, Files the files
	// of the contact's messages deleted.
	Events int `json:"events"`
	Files  int `json:"files"`
}

// Add adds o's counts to e's.
func (e *ContactErasure) Add(o ContactErasure) {
	e.Contacts += o.Contacts
	e.Messages += o.Messages
	e.Cancelled += o.Cancelled
	e.Inbound += o.Inbound
	e.Conversations += o.Conversations
	e.History += o.History
	e.Events += o.Events
	e.Files += o.Files
}

// ErasureResult answers an erasure request.
type ErasureResult struct {
	ContactID uuid.UUID `json:"contact_id"`
	// ErasedAt is when the contact was erased: now, or the first time for
	// a request repeated.
	ErasedAt time.Time `json:"erased_at"`
	// AlreadyErased is true when the contact had been erased before (on
	// request or by retention) and this request found nothing left.
	AlreadyErased bool `json:"already_erased"`
	// Removed counts what this request removed.
	Removed ContactErasure `json:"removed"`
}

// ContactErasureTx is the one statement set that erases contacts, shared
// by requests (ContactsTx) and retention (MaintenanceTx.PruneContacts).
type ContactErasureTx interface {
	// EraseContact erases the tenant's contact (locked first) at the
	// time, for the reason (RemovedByErasure, RemovedByRetention), and
	// returns what it removed and the contact as it is now.
	EraseContact(ctx context.Context, tenantID, id uuid.UUID, at time.Time, reason string) (ContactErasure, *Contact, error)
}

// Erase erases a contact on request (the passenger's right to erasure):
// its details and history, what it wrote, its conversations' content, and
// the personal data of every message sent to it (addresses, subjects,
// bodies, timelines, receipts, callback payloads, the event's recipient
// and, where the event was the contact's alone, its variables and files).
// Messages still waiting are cancelled. What remains is the contact's id
// and its messages' facts (event type, channel, status, times, cost), so
// usage and cost stay right. The audit entry records who asked, when and
// the counts, never the data. Erasing again finds nothing and records
// nothing; another tenant's contact is not found.
func (s *Contacts) Erase(ctx context.Context, actor Actor, tenantID, id uuid.UUID) (*ErasureResult, error) {
	out := &ErasureResult{ContactID: id}
	err := s.Store.InTenant(ctx, tenantID, func(tx ContactsTx) error {
		now := s.Now()
		removed, c, err := tx.EraseContact(ctx, tenantID, id, now, RemovedByErasure)
		if err != nil {
			return err
		}
		out.Removed = removed
		out.ErasedAt = *c.ErasedAt
		out.AlreadyErased = removed.Contacts == 0
		if out.AlreadyErased {
			return nil
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "contact.erase", "contact", id.String(), map[string]any{
			"erased_at": now.UTC().Format(time.RFC3339), "messages": removed.Messages, "cancelled": removed.Cancelled,
			"inbound_messages": removed.Inbound, "conversations": removed.Conversations, "history": removed.History,
			"events": removed.Events, "files": removed.Files,
		}))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
