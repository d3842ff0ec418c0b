package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/app/provider"
)

// fetchFiles fetches the message's files given by URL that are not stored
// yet, before the claim: a run that fetches makes no provider call (its
// time went to the fetch, FetchTimeout of its own) and comes back at once
// (fetched true) to send with the stored bytes. A file that gives no file
// and never will records why, and the claim fails the message with it; a
// transient failure retries the job, nothing having been sent, until its
// last attempt, which records the failure instead.
func (d *Dispatcher) fetchFiles(ctx context.Context, job DispatchJob, attempt, maxAttempts int) (DispatchOutcome, bool, error) {
	var pending []*Attachment
	err := d.stores.Send.InTenant(ctx, job.TenantID, func(tx SendTx) error {
		files, err := tx.MessageFiles(ctx, job.TenantID, job.MessageID, false)
		for _, f := range files {
			if !f.Ready() && f.FetchError == nil && f.SourceURL != nil {
				pending = append(pending, f)
			}
		}
		return err
	})
	if err != nil || len(pending) == 0 || d.opts.Fetcher == nil {
		return DispatchOutcome{}, false, err
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.FetchTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			cancel()
		}
	})
	defer stop()
	for _, f := range pending {
		data, err := d.opts.Fetcher.Fetch(fctx, *f.SourceURL, MaxAttachmentBytes)
		reason := ""
		if err != nil {
			pe := provider.Classify(err)
			if pe.Class != provider.Permanent && attempt < maxAttempts {
				d.fileNote(ctx, job, map[string]any{"file": f.Filename, "error_code": pe.Code, "error": pe.Reason, "will_retry": true,
					"note": "the file could not be fetched; nothing was sent"})
				return DispatchOutcome{Retry: pe}, true, nil
			}
			reason = pe.Reason
		} else if e := CheckFileBytes(f.Filename, f.ContentType, deref(f.DeclaredSHA256), data); e != nil {
			data, reason = nil, e.Message
		}
		if reason != "" {
			reason = fmt.Sprintf("%s (%s): %s", f.Filename, redactURL(*f.SourceURL), reason)
			if len(reason) > 1000 {
				reason = strings.ToValidUTF8(reason[:997], "") + "..."
			}
		}
		if err := d.stores.Send.InTenant(ctx, job.TenantID, func(tx SendTx) error {
			_, err := tx.RecordFileFetch(ctx, job.TenantID, f.ID, data, reason, d.Now())
			return err
		}); err != nil {
			return DispatchOutcome{}, true, err
		}
	}
	// Sent by the next run, with the bytes stored: it does not wait.
	return DispatchOutcome{Snooze: time.Millisecond}, true, nil
}

// fileNote puts a note about the message's files on its timeline.
func (d *Dispatcher) fileNote(ctx context.Context, job DispatchJob, detail map[string]any) {
	err := d.stores.Send.InTenant(ctx, job.TenantID, func(tx SendTx) error {
		return tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: job.TenantID, MessageID: job.MessageID, Source: SourceDispatch, At: d.Now(), Detail: detail})
	})
	if err != nil {
		d.opts.Log.WarnContext(ctx, "timeline note about files not recorded", "message_id", job.MessageID, "err", err)
	}
}

// filesRefusal is why a message's files keep it from being sent, if
// anything does: a file that could not be fetched, or files that came to
// more than a message may carry.
func filesRefusal(files []*Attachment) *sendRefusal {
	var total int64
	for _, f := range files {
		switch {
		case f.FetchError != nil:
			return &sendRefusal{ReasonAttachmentUnavailable, ReasonAttachmentUnavailable, *f.FetchError}
		case !f.Ready():
			return &sendRefusal{ReasonAttachmentUnavailable, ReasonAttachmentUnavailable,
				f.Filename + ": the file has not been fetched, and this server fetches no files."}
		}
		total += *f.Size
	}
	if total > MaxAttachmentTotalBytes {
		return &sendRefusal{ReasonAttachmentUnavailable, ReasonAttachmentUnavailable,
			fmt.Sprintf("The message's files have %d bytes in all; a message may carry %d (10 MiB).", total, MaxAttachmentTotalBytes)}
	}
	return nil
}

// outboundFiles are the files as the provider gets them, each with its
// short link when the dispatcher makes links.
func (d *Dispatcher) outboundFiles(files []*Attachment) []provider.File {
	if len(files) == 0 {
		return nil
	}
	out := make([]provider.File, len(files))
	for i, f := range files {
		out[i] = provider.File{Filename: f.Filename, ContentType: f.ContentType, Content: f.Content, SHA256: *f.SHA256}
		if d.opts.Files != nil {
			out[i].Link = d.opts.Files.URL(f, d.Now())
		}
	}
	return out
}

// fitFiles fits the call's files to what its channel carries and returns
// those it cannot: e-mail carries each file; an SMS carries their links,
// written into its text when it was routed; WhatsApp carries what one
// Meta message can (fitWhatsApp); a webhook receiver gets the event, not
// its files.
func (d *Dispatcher) fitFiles(m *Message, acct *ChannelAccount, out *provider.Outbound) []notSentFile {
	if len(out.Attachments) == 0 {
		return nil
	}
	var reason string
	switch {
	case m.Channel == WhatsApp && acct.Provider == "meta":
		return fitWhatsApp(out)
	case m.Channel == Email:
		return nil
	case m.Channel == SMS && d.opts.Files != nil:
		return nil
	case m.Channel == SMS:
		reason = "this server makes no file links for an SMS to carry"
	default:
		reason = "the " + string(m.Channel) + " channel carries no files"
	}
	notSent := make([]notSentFile, len(out.Attachments))
	for i, f := range out.Attachments {
		notSent[i] = notSentFile{f, reason}
	}
	out.Attachments = nil
	return notSent
}

// sentDetail is the timeline detail of an accepted send: with the name,
// size and hash of each file it carried, the proof of what was sent.
func sentDetail(s *send, rec acceptedSend) map[string]any {
	detail := map[string]any{
		"provider": s.account.Provider, "external_id": rec.externalID, "attempt": rec.attempt, "provider_ms": rec.took.Milliseconds(),
	}
	notSent := map[string]bool{}
	for _, n := range s.notSent {
		notSent[n.file.SHA256+"/"+n.file.Filename] = true
	}
	var files []map[string]any
	for _, f := range s.files {
		if !notSent[*f.SHA256+"/"+f.Filename] {
			files = append(files, map[string]any{"filename": f.Filename, "content_type": f.ContentType, "size": *f.Size, "sha256": *f.SHA256})
		}
	}
	if len(files) > 0 {
		detail["attachments"] = files
	}
	if len(s.notSent) > 0 {
		detail[ReasonAttachmentsNotSent] = notSentDetail(s.notSent)
	}
	return detail
}

// redactURL is a file URL as a timeline shows it: without its query,
// which often carries a signature.
func redactURL(raw string) string {
	for i := 0; i < len(raw); i++ {
		if raw[i] == '?' || raw[i] == '#' {
			return raw[:i]
		}
	}
	return raw
}
