package db

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const uploadColumns = `id, tenant_id, trigger_event, mapping, filename, status, total_rows, cursor_row, stored_rows,
	refused_rows, send_at, trip_id, api_key_id, created_by, created_at, started_at, finished_at`

// uploadRowChunk is how many rows one insert statement stores.
const uploadRowChunk = 2000

// InsertUpload serves app.UploadTx: nothing is stored when the id is
// taken (the same file uploaded again).
func (t *Tx) InsertUpload(ctx context.Context, u *app.Upload) (bool, error) {
	res, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO uploads (`+uploadColumns+`)
		VALUES (:id, :tenant_id, :trigger_event, :mapping, :filename, :status, :total_rows, :cursor_row, :stored_rows,
			:refused_rows, :send_at, :trip_id, :api_key_id, :created_by, :created_at, :started_at, :finished_at)
		ON CONFLICT (id) DO NOTHING`, u)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr(err)
}

// InsertUploadRows serves app.UploadTx, a chunk of rows per statement.
func (t *Tx) InsertUploadRows(ctx context.Context, tenantID, uploadID uuid.UUID, rows []*app.UploadRow) error {
	for start := 0; start < len(rows); start += uploadRowChunk {
		chunk := rows[start:min(start+uploadRowChunk, len(rows))]
		numbers, requests := make(app.StringList, len(chunk)), make(app.StringList, len(chunk))
		for i, r := range chunk {
			numbers[i], requests[i] = strconv.Itoa(r.Number), string(r.Request)
		}
		_, err := t.tx.ExecContext(ctx, `
			INSERT INTO upload_rows (tenant_id, upload_id, row_number, request)
			SELECT $1, $2, n::integer, r::jsonb FROM unnest($3::text[], $4::text[]) AS x(n, r)`,
			tenantID, uploadID, numbers, requests)
		if err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// UploadByID serves app.UploadTx and app.UploadReadTx.
func (t *Tx) UploadByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.Upload, error) {
	q := `SELECT ` + uploadColumns + ` FROM uploads WHERE tenant_id = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var u app.Upload
	if err := t.tx.GetContext(ctx, &u, q, tenantID, id); err != nil {
		return nil, notFound(err, "Upload %s not found.", id)
	}
	return &u, nil
}

// UploadRows serves app.UploadTx and app.UploadReadTx.
func (t *Tx) UploadRows(ctx context.Context, tenantID, uploadID uuid.UUID, after, limit int) ([]*app.UploadRow, error) {
	var out []*app.UploadRow
	err := t.tx.SelectContext(ctx, &out, `
		SELECT row_number, request, event_id, error_code, error_field, error_message
		FROM upload_rows WHERE tenant_id = $1 AND upload_id = $2 AND row_number > $3
		ORDER BY row_number LIMIT $4`, tenantID, uploadID, after, limit)
	return out, mapErr(err)
}

// StartUpload serves app.UploadTx: one conditional statement, so two
// starts at once start it once.
func (t *Tx) StartUpload(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE uploads SET status = 'RUNNING', started_at = $3
		WHERE tenant_id = $1 AND id = $2 AND status = 'READY'`, tenantID, id, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr(err)
}

// AdvanceUpload serves app.UploadTx: the rows' outcomes in one
// statement, the upload's cursor and counts in another; an upload done
// drops its rows' requests, which only its batches read.
func (t *Tx) AdvanceUpload(ctx context.Context, u *app.Upload, rows []*app.UploadRow) error {
	if len(rows) > 0 {
		numbers, events := make(app.StringList, len(rows)), make([]*string, len(rows))
		codes, fields, messages := make([]*string, len(rows)), make([]*string, len(rows)), make([]*string, len(rows))
		for i, r := range rows {
			numbers[i], codes[i], fields[i], messages[i] = strconv.Itoa(r.Number), r.ErrorCode, r.ErrorField, r.ErrorMessage
			if r.EventID != nil {
				s := r.EventID.String()
				events[i] = &s
			}
		}
		_, err := t.tx.ExecContext(ctx, `
			UPDATE upload_rows r SET event_id = x.e::uuid, error_code = x.c, error_field = x.f, error_message = x.m
			FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS x(n, e, c, f, m)
			WHERE r.tenant_id = $1 AND r.upload_id = $2 AND r.row_number = x.n::integer`,
			u.TenantID, u.ID, numbers, events, codes, fields, messages)
		if err != nil {
			return mapErr(err)
		}
	}
	_, err := t.tx.ExecContext(ctx, `
		UPDATE uploads SET cursor_row = $3, stored_rows = $4, refused_rows = $5, status = $6, finished_at = $7
		WHERE tenant_id = $1 AND id = $2`, u.TenantID, u.ID, u.Cursor, u.StoredRows, u.RefusedRows, u.Status, u.FinishedAt)
	if err != nil || u.Status != app.UploadDone {
		return mapErr(err)
	}
	_, err = t.tx.ExecContext(ctx, `UPDATE upload_rows SET request = NULL WHERE tenant_id = $1 AND upload_id = $2`, u.TenantID, u.ID)
	return mapErr(err)
}

// Uploads serves app.UploadReadTx.
func (t *Tx) Uploads(ctx context.Context, tenantID uuid.UUID, limit int) ([]*app.Upload, error) {
	var out []*app.Upload
	err := t.tx.SelectContext(ctx, &out, `SELECT `+uploadColumns+` FROM uploads WHERE tenant_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2`, tenantID, limit)
	return out, mapErr(err)
}

// UploadCounts serves app.UploadReadTx.
func (t *Tx) UploadCounts(ctx context.Context, tenantID, uploadID uuid.UUID) (app.UploadCounts, error) {
	var c app.UploadCounts
	err := t.tx.GetContext(ctx, &c, `
		SELECT count(m.id) AS messages,
			count(m.id) FILTER (WHERE m.status IN ('SENT', 'DELIVERED', 'READ')) AS sent,
			count(m.id) FILTER (WHERE m.status IN ('DELIVERED', 'READ')) AS delivered,
			count(m.id) FILTER (WHERE m.status = 'FAILED') AS failed
		FROM upload_rows r JOIN messages m ON m.tenant_id = r.tenant_id AND m.event_id = r.event_id
		WHERE r.tenant_id = $1 AND r.upload_id = $2 AND r.event_id IS NOT NULL`, tenantID, uploadID)
	return c, mapErr(err)
}

// UploadFailures serves app.UploadReadTx: refused rows, then each failed
// message of a row's event, in row order.
func (t *Tx) UploadFailures(ctx context.Context, tenantID, uploadID uuid.UUID) ([]app.UploadFailure, error) {
	var out []app.UploadFailure
	err := t.tx.SelectContext(ctx, &out, `
		SELECT row_number, field, code, message FROM (
			SELECT r.row_number, coalesce(r.error_field, '') AS field, r.error_code AS code, coalesce(r.error_message, '') AS message, 0 AS k
			FROM upload_rows r WHERE r.tenant_id = $1 AND r.upload_id = $2 AND r.error_code IS NOT NULL
			UNION ALL
			SELECT r.row_number, lower(m.channel::text), coalesce(m.failed_reason, 'failed'),
				coalesce('provider code ' || m.error_code, ''), 1
			FROM upload_rows r JOIN messages m ON m.tenant_id = r.tenant_id AND m.event_id = r.event_id
			WHERE r.tenant_id = $1 AND r.upload_id = $2 AND r.event_id IS NOT NULL AND m.status = 'FAILED'
		) f ORDER BY row_number, k, field`, tenantID, uploadID)
	return out, mapErr(err)
}

// PruneUploads serves app.MaintenanceTx: rows of uploads done (or never
// started) before the time, a batch at a time, then the uploads whose rows
// an earlier batch deleted.
func (t *Tx) PruneUploads(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `
		WITH old AS (
			SELECT id FROM uploads WHERE tenant_id = $1
			  AND ((status = 'DONE' AND finished_at < $2) OR (status = 'READY' AND created_at < $2))),
		r AS (
			DELETE FROM upload_rows WHERE tenant_id = $1 AND (upload_id, row_number) IN (
				SELECT upload_id, row_number FROM upload_rows
				WHERE tenant_id = $1 AND upload_id IN (SELECT id FROM old)
				LIMIT $3 FOR UPDATE SKIP LOCKED)
			RETURNING 1),
		u AS (
			DELETE FROM uploads WHERE tenant_id = $1 AND id IN (SELECT id FROM old)
			  AND NOT EXISTS (SELECT 1 FROM upload_rows x WHERE x.tenant_id = $1 AND x.upload_id = uploads.id)
			RETURNING 1)
		SELECT (SELECT count(*) FROM r) + (SELECT count(*) FROM u)`, tenantID, before, limit)
	return n, mapErr(err)
}
