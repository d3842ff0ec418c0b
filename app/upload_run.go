package app

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// UploadReadTx lists the statements that show uploads.
type UploadReadTx interface {
	Tx
	UploadByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Upload, error)
	UploadRows(ctx context.Context, tenantID, uploadID uuid.UUID, after, limit int) ([]*UploadRow, error)
	// Uploads returns the tenant's latest uploads, newest first.
	Uploads(ctx context.Context, tenantID uuid.UUID, limit int) ([]*Upload, error)
	// UploadCounts counts the messages of the upload's events by outcome.
	UploadCounts(ctx context.Context, tenantID, uploadID uuid.UUID) (UploadCounts, error)
	// UploadFailures returns the rows intake refused and the failed
	// messages of the upload's events, by row.
	UploadFailures(ctx context.Context, tenantID, uploadID uuid.UUID) ([]UploadFailure, error)
}

// UploadReader shows uploads: progress, preview and error file.
type UploadReader struct {
	Store Store[UploadReadTx]
}

// Progress returns the tenant's upload with its messages' counts.
func (s *UploadReader) Progress(ctx context.Context, tenantID, id uuid.UUID) (*UploadProgress, error) {
	var p UploadProgress
	err := s.Store.InTenant(ctx, tenantID, func(tx UploadReadTx) (err error) {
		if p.Upload, err = tx.UploadByID(ctx, tenantID, id, false); err != nil {
			return err
		}
		p.Counts, err = tx.UploadCounts(ctx, tenantID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// Preview returns the first n rows of an upload not yet handled, as the
// requests they stand for.
func (s *UploadReader) Preview(ctx context.Context, tenantID, id uuid.UUID, n int) ([]*NotificationRequest, error) {
	var rows []*UploadRow
	err := s.Store.InTenant(ctx, tenantID, func(tx UploadReadTx) (err error) {
		rows, err = tx.UploadRows(ctx, tenantID, id, 0, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*NotificationRequest, 0, len(rows))
	for _, r := range rows {
		if len(r.Request) == 0 {
			continue
		}
		// Stored rows passed this parse when they were uploaded; only the
		// fields are wanted here, not a check against the clock.
		var req NotificationRequest
		if err := json.Unmarshal(r.Request, &req); err != nil {
			return nil, err
		}
		out = append(out, &req)
	}
	return out, nil
}

// List returns the tenant's latest uploads.
func (s *UploadReader) List(ctx context.Context, tenantID uuid.UUID, limit int) ([]*Upload, error) {
	var out []*Upload
	err := s.Store.InTenant(ctx, tenantID, func(tx UploadReadTx) (err error) {
		out, err = tx.Uploads(ctx, tenantID, limit)
		return err
	})
	return out, err
}

// Failures returns the upload's error file's lines.
func (s *UploadReader) Failures(ctx context.Context, tenantID, id uuid.UUID) ([]UploadFailure, error) {
	var out []UploadFailure
	err := s.Store.InTenant(ctx, tenantID, func(tx UploadReadTx) (err error) {
		if _, err = tx.UploadByID(ctx, tenantID, id, false); err != nil {
			return err
		}
		out, err = tx.UploadFailures(ctx, tenantID, id)
		return err
	})
	return out, err
}

// Start starts a READY upload: it becomes RUNNING and its first batch job
// is enqueued, in one transaction. Starting it again, or starting it while
// it runs, starts nothing new: a running upload whose batch job was lost
// gets the job of the rows after its cursor, which the queue keeps single.
func (s *Uploads) Start(ctx context.Context, tenantID, id uuid.UUID) (*Upload, error) {
	var u *Upload
	err := s.Store.InTenant(ctx, tenantID, func(tx UploadTx) error {
		if _, err := tx.StartUpload(ctx, tenantID, id, s.Now()); err != nil {
			return err
		}
		var err error
		if u, err = tx.UploadByID(ctx, tenantID, id, false); err != nil {
			return err
		}
		if u.Status != UploadRunning {
			return nil
		}
		return s.Queue.EnqueueUploadBatch(ctx, tx, tenantID, id, u.Cursor)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// RunBatch turns the upload's rows after row from into events, up to
// UploadBatchSize of them, each through intake's own path (Intake.submitIn)
// under its event id upload:<id>:<row>, in one transaction of the
// upload's tenant that also moves the cursor and enqueues the next batch.
// A job for rows the cursor has passed does nothing (a batch that ran
// twice). A row intake refuses (a cap reached since the upload was
// checked, say) rolls back to its savepoint and is recorded with the
// refusal; the other rows go on. A crash rolls the whole batch back, and
// the job's retry runs it again; a row whose event was stored before
// anyway is answered as a duplicate, never sent twice.
func (s *Uploads) RunBatch(ctx context.Context, tenantID, id uuid.UUID, from int) error {
	return s.Store.InTenant(ctx, tenantID, func(tx UploadTx) error {
		u, err := tx.UploadByID(ctx, tenantID, id, true)
		if err != nil || u.Status != UploadRunning || u.Cursor != from {
			return err
		}
		rows, err := tx.UploadRows(ctx, tenantID, id, from, UploadBatchSize)
		if err != nil {
			return err
		}
		key := uploadKey(u, nil)
		events := s.Intake.Registry.For(ctx, tenantID).Memo()
		for _, r := range rows {
			if err := s.runRow(ctx, tx, key, u, r, events); err != nil {
				return err
			}
		}
		if len(rows) > 0 {
			u.Cursor = rows[len(rows)-1].Number
		}
		if u.Cursor >= u.TotalRows || len(rows) == 0 {
			now := s.Now()
			u.Status, u.FinishedAt = UploadDone, &now
		}
		if err := tx.AdvanceUpload(ctx, u, rows); err != nil {
			return err
		}
		if u.Status == UploadDone {
			return nil
		}
		return s.Queue.EnqueueUploadBatch(ctx, tx, tenantID, id, u.Cursor)
	})
}

// runRow submits one row in a savepoint and records its outcome on it.
func (s *Uploads) runRow(ctx context.Context, tx UploadTx, key *APIKey, u *Upload, r *UploadRow, events EventLookup) error {
	var res *SubmitResult
	fnErr, err := tx.Savepoint(ctx, func() (err error) {
		res, err = s.Intake.submitIn(ctx, tx, key, r.Request, events)
		return err
	})
	switch {
	case err != nil:
		return err
	case fnErr == nil:
		r.EventID = &res.ID
		u.StoredRows++
		return nil
	case ErrorCode(fnErr) == EINTERNAL || ErrorCode(fnErr) == EUNAVAILABLE:
		// The database's trouble, not the row's: the batch runs again.
		return fnErr
	}
	code, field, msg := ErrorReason(fnErr), rowField(r.Number, rowTarget(ErrorField(fnErr))), ErrorMessage(fnErr)
	r.ErrorCode, r.ErrorField, r.ErrorMessage = &code, &field, &msg
	u.RefusedRows++
	return nil
}

// UploadBatchTimeout bounds one batch job: UploadBatchSize rows through
// intake take well under it.
const UploadBatchTimeout = 2 * time.Minute
