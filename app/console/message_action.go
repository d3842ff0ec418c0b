package console

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// Resend is the booking panel's manual resend: the user's permission is
// checked, then Messages.Resend queues the new messages (their own
// idempotency keys, triggered_by the user, audited; the originals stay as
// they are).
func (s *MessageConsole) Resend(ctx context.Context, u *app.User, tenantID uuid.UUID, in app.ResendInput) ([]*app.Message, error) {
	if err := app.RequirePermission(u, app.PermResend); err != nil {
		return nil, err
	}
	if !IsEntityType(in.EntityType) {
		return nil, app.Errorf(app.ENOTFOUND, "There are no %q records.", in.EntityType)
	}
	return s.Messages.Resend(ctx, u.Actor(), tenantID, in)
}

// Retry sends a FAILED message again as a new message. A message's status
// only moves forward (FAILED is final, and QUEUED belongs to routing and
// resend), so the failed message is not re-queued: the retry is a new
// QUEUED message planned like a resend (the same template if it is still
// active, else the one routing would pick now, and the channel's current
// ACTIVE account, so a fixed account or template takes effect) to the
// address the failed message went to, with the
// idempotency key retry:{failed message id}, triggered_by the user, and a
// dispatch job. The failed message keeps its status and gets a timeline
// note naming its retry; an audit entry records both. A message whose
// address the provider refused (app.AddressRefusal) is retried only with
// Anyway set: the person was told and chose to send all the same. A chain
// of retries stops at app.MaxRetries (each message counts the retries
// before it) unless Force is set. The console's Retry button and the
// API's POST /api/v1/messages/{id}/retry both come here.
func (s *MessageConsole) Retry(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, opts app.RetryOptions) (*app.Message, error) {
	if err := app.RequirePermission(u, app.PermResend); err != nil {
		return nil, err
	}
	actor := u.Actor()
	var retry *app.Message
	err := s.Store.InTenant(ctx, tenantID, func(tx MessageTx) error {
		m, err := tx.MessageByID(ctx, tenantID, id, true)
		if err != nil {
			return err
		}
		if m.Status != app.MessageFailed {
			return &app.Error{Code: app.ECONFLICT, Reason: "not_failed",
				Message: fmt.Sprintf("Only failed messages can be retried; this one is %s.", m.Status)}
		}
		if m.RedactedAt != nil {
			return &app.Error{Code: app.ECONFLICT, Reason: "personal_data_removed",
				Message: "This message's address and text were removed (retention or the contact's erasure), so it cannot be sent again."}
		}
		if why := app.AddressRefusal(m); why != "" && !opts.Anyway {
			return &app.Error{Code: app.ECONFLICT, Reason: "address_refused",
				Message: why + " Sending again will most likely fail the same way; confirm the warning to send anyway."}
		}
		if m.RetryCount >= app.MaxRetries && !opts.Force {
			return &app.Error{Code: app.ECONFLICT, Reason: "max_retries",
				Message: fmt.Sprintf("This message was already retried %d times, the most Herald retries on its own say; force the retry to send it once more.", m.RetryCount)}
		}
		if prior, err := tx.MessageByIdempotencyKey(ctx, tenantID, retryKey(m.ID)); err == nil {
			return &app.Error{Code: app.ECONFLICT, Reason: "already_retried",
				Message: fmt.Sprintf("This message was retried already (message %s); retry that one if it failed too.", prior.ID)}
		} else if app.ErrorCode(err) != app.ENOTFOUND {
			return err
		}
		if m.Test {
			return app.Errorf(app.ECONFLICT, "A test message is never retried; send another test instead.")
		}
		// A message limited to one file is retried with that file alone.
		next, skip, err := s.planAgain(ctx, tx, tenantID, m, m.FileID)
		if err != nil {
			return err
		}
		if skip != "" {
			return app.Errorf(app.ECONFLICT, "Cannot retry on %s: %s. Fix that first (channel account, template or the passenger's address).",
				m.Channel, strings.ReplaceAll(skip, "_", " "))
		}
		next.IdempotencyKey = retryKey(m.ID)
		next.RetryCount = m.RetryCount + 1
		next.TriggeredBy = actor.ID
		// A person decided to send it again: the event's expiry does not
		// hold it back, quiet hours do.
		next.ExpiresAt = nil
		inserted, err := s.Router.Insert(ctx, tx, next, app.SourceConsole, map[string]any{"retry_of": m.ID.String(), "by": actor.Label,
			"retry_count": next.RetryCount, "forced": m.RetryCount >= app.MaxRetries})
		if err != nil {
			return err
		}
		if !inserted {
			return app.Errorf(app.ECONFLICT, "This message was retried already.")
		}
		if err := tx.InsertMessageEvent(ctx, &app.MessageEvent{TenantID: tenantID, MessageID: m.ID, Source: app.SourceConsole, At: s.Now(),
			Detail: map[string]any{"retried_as": next.ID.String(), "by": actor.Label}}); err != nil {
			return err
		}
		if err := tx.InsertAudit(ctx, actor.Entry(&tenantID, "message.retry", "message", m.ID.String(),
			map[string]any{"retry_id": next.ID.String(), "channel": m.Channel, "failed_reason": m.FailedReason,
				"address_refused": app.AddressRefusal(m) != "", "retry_count": next.RetryCount,
				"forced": m.RetryCount >= app.MaxRetries})); err != nil {
			return err
		}
		retry = next
		return s.Queue.EnqueueDispatch(ctx, tx, next.DispatchJob())
	})
	return retry, err
}

// Cancel stops a QUEUED message: it becomes CANCELLED with a timeline entry
// and an audit entry. Its dispatch job then finds it no longer QUEUED and
// does nothing.
func (s *MessageConsole) Cancel(ctx context.Context, u *app.User, tenantID, id uuid.UUID) (*app.Message, error) {
	if err := app.RequirePermission(u, app.PermCancelMessage); err != nil {
		return nil, err
	}
	actor := u.Actor()
	var m *app.Message
	err := s.Store.InTenant(ctx, tenantID, func(tx MessageTx) (err error) {
		if m, err = tx.MessageByID(ctx, tenantID, id, true); err != nil {
			return err
		}
		if m.Status != app.MessageQueued {
			return app.Errorf(app.ECONFLICT, "Only queued messages can be cancelled; this one is %s already.", m.Status)
		}
		now := s.Now()
		ok, err := tx.CancelQueuedMessage(ctx, tenantID, id, now)
		if err != nil {
			return err
		}
		if !ok {
			return app.Errorf(app.ECONFLICT, "The message left the queue while you were cancelling it.")
		}
		from, to := app.MessageQueued, app.MessageCancelled
		if err := tx.InsertMessageEvent(ctx, &app.MessageEvent{TenantID: tenantID, MessageID: id, FromStatus: &from, ToStatus: &to,
			Source: app.SourceConsole, At: now, Detail: map[string]any{"by": actor.Label}}); err != nil {
			return err
		}
		m.Status, m.UpdatedAt = app.MessageCancelled, now
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "message.cancel", "message", id.String(),
			map[string]any{"channel": m.Channel, "trigger_event": m.TriggerEvent}))
	})
	return m, err
}

// TestMessage returns one of the tenant's test messages with its timeline,
// for the template editor's test result.
func (s *MessageConsole) TestMessage(ctx context.Context, u app.Principal, tenantID, id uuid.UUID) (*app.MessageDetail, error) {
	if err := app.RequirePermission(u, app.PermTemplates); err != nil {
		return nil, err
	}
	var d app.MessageDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx MessageTx) (err error) {
		if d.Message, err = tx.MessageByID(ctx, tenantID, id, false); err != nil {
			return err
		}
		if !d.Test {
			return app.Errorf(app.ENOTFOUND, "Message %s is not a test message.", id)
		}
		timelines, err := tx.MessageTimelines(ctx, tenantID, []uuid.UUID{id})
		d.Timeline = timelines[id]
		return err
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// fileKey is the idempotency key of file fileID of message id sent
// again: a double click sends once.
func fileKey(id, fileID uuid.UUID) string { return "file:" + id.String() + ":" + fileID.String() }

// ResendFile sends one file of message id again, alone, on the same
// channel to the same address: a new message limited to that file
// (Message.FileID), planned as a retry is, audited, with a note on the
// original's timeline. Sending it twice sends once.
func (s *MessageConsole) ResendFile(ctx context.Context, u *app.User, tenantID, id, fileID uuid.UUID) (*app.Message, error) {
	if err := app.RequirePermission(u, app.PermResend); err != nil {
		return nil, err
	}
	actor := u.Actor()
	var sent *app.Message
	err := s.Store.InTenant(ctx, tenantID, func(tx MessageTx) error {
		m, err := tx.MessageByID(ctx, tenantID, id, true)
		if err != nil {
			return err
		}
		if m.Test {
			return app.Errorf(app.ECONFLICT, "A test message's files are not sent again; send another test instead.")
		}
		if prior, err := tx.MessageByIdempotencyKey(ctx, tenantID, fileKey(m.ID, fileID)); err == nil {
			sent = prior
			return nil
		} else if app.ErrorCode(err) != app.ENOTFOUND {
			return err
		}
		next, skip, err := s.planAgain(ctx, tx, tenantID, m, &fileID)
		if err != nil {
			return err
		}
		if skip != "" {
			return app.Errorf(app.ECONFLICT, "Cannot send the file on %s: %s.", m.Channel, strings.ReplaceAll(skip, "_", " "))
		}
		next.IdempotencyKey = fileKey(m.ID, fileID)
		next.TriggeredBy = actor.ID
		next.ExpiresAt = nil
		inserted, err := s.Router.Insert(ctx, tx, next, app.SourceConsole, map[string]any{"file_of": m.ID.String(), "file_id": fileID.String(), "by": actor.Label})
		if err != nil || !inserted {
			return err
		}
		if err := tx.InsertMessageEvent(ctx, &app.MessageEvent{TenantID: tenantID, MessageID: m.ID, Source: app.SourceConsole, At: s.Now(),
			Detail: map[string]any{"file_sent_as": next.ID.String(), "file_id": fileID.String(), "by": actor.Label}}); err != nil {
			return err
		}
		if err := tx.InsertAudit(ctx, actor.Entry(&tenantID, "message.resend_file", "message", m.ID.String(),
			map[string]any{"message_id": next.ID.String(), "file_id": fileID.String(), "channel": m.Channel})); err != nil {
			return err
		}
		sent = next
		return s.Queue.EnqueueDispatch(ctx, tx, next.DispatchJob())
	})
	return sent, err
}

// planAgain plans m once more from its event, to exactly the address m
// went to, through the routing plan every message takes; only, when set,
// limits the new message to that one file of the event.
func (s *MessageConsole) planAgain(ctx context.Context, tx MessageTx, tenantID uuid.UUID, m *app.Message, only *uuid.UUID) (*app.Message, string, error) {
	if m.EventID == nil || m.ContactID == nil {
		return nil, "", app.Errorf(app.ECONFLICT, "The notification this message came from is no longer stored, so it cannot be retried; resend it from the booking panel instead.")
	}
	e, err := tx.EventByID(ctx, tenantID, *m.EventID, false)
	if err != nil {
		return nil, "", err
	}
	def, err := e.Def(ctx, tx)
	if err != nil {
		return nil, "", err
	}
	tenant, err := tx.TenantByID(ctx, tenantID)
	if err != nil {
		return nil, "", err
	}
	contact, err := tx.ContactByID(ctx, tenantID, *m.ContactID)
	if err != nil {
		return nil, "", err
	}
	var tmpl *app.Template
	if m.TemplateID != nil {
		t, err := tx.TemplateByID(ctx, tenantID, *m.TemplateID)
		switch {
		case err == nil && t.IsActive && t.Channel == m.Channel:
			tmpl = t
		case err != nil && app.ErrorCode(err) != app.ENOTFOUND:
			return nil, "", err
		}
	}
	// The new message goes to exactly the address m went to, whatever
	// the contact holds now; the rest of the recipient
	// (name, locale, context) is what the event gave.
	recipients, err := e.DecodeRecipients()
	if err != nil {
		return nil, "", err
	}
	rc, index, ok := app.RecipientOf(recipients, m)
	if !ok {
		rc, index = app.Recipient{Name: contact.Name}, -1
	}
	to := app.Addressee{Contact: contact, Recipient: rc.WithAddress(m.Channel, m.ToAddress), Index: index}
	if only != nil {
		// Only the one file rides with the event: an SMS links it alone.
		if e.Files = e.Files.Only(*only); len(e.Files) == 0 {
			return nil, "", app.Errorf(app.ENOTFOUND, "This file is no longer stored with the message's notification.")
		}
	}
	next, skip, err := s.Router.Plan(ctx, tx, tenant, e, def, to, m.ConversationID, m.Channel, tmpl)
	if err != nil {
		return nil, "", err
	}
	next.FileID = only
	return next, skip, nil
}
