package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// attachmentColumns are the columns of attachments but the bytes.
const attachmentColumns = `a.id, a.tenant_id, a.event_id, a.recipient_index, a.position, a.filename, a.content_type,
	a.source_url, a.declared_sha256, a.size_bytes, a.sha256, a.fetched_at, a.fetch_error, a.created_at, a.token_nonce`

// InsertAttachments serves app.IntakeTx.
func (t *Tx) InsertAttachments(ctx context.Context, files []*app.Attachment) error {
	for _, f := range files {
		if f.TenantID != t.tenantID {
			return app.Errorf(app.EINTERNAL, "attachment of tenant %s in a transaction of tenant %s", f.TenantID, t.tenantID)
		}
		_, err := t.tx.NamedExecContext(ctx, `
			INSERT INTO attachments (id, tenant_id, event_id, recipient_index, position, filename, content_type,
				source_url, declared_sha256, content, size_bytes, sha256, created_at)
			VALUES (:id, :tenant_id, :event_id, :recipient_index, :position, :filename, :content_type,
				:source_url, :declared_sha256, :content, :size_bytes, :sha256, :created_at)`, f)
		if err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// messageFilesFrom finds a message's files: its event's, and its
// recipient's own; a message limited to one file (file_id) only that one.
const messageFilesFrom = `
	FROM attachments a JOIN messages m ON m.tenant_id = a.tenant_id AND m.event_id = a.event_id
	WHERE m.tenant_id = $1 AND m.id = $2 AND a.tenant_id = $1
	  AND (a.recipient_index IS NULL OR a.recipient_index = m.recipient_index)
	  AND (m.file_id IS NULL OR a.id = m.file_id)
	ORDER BY a.recipient_index NULLS FIRST, a.position`

// MessageFiles serves app.FileTx.
func (t *Tx) MessageFiles(ctx context.Context, tenantID, messageID uuid.UUID, withContent bool) ([]*app.Attachment, error) {
	cols := attachmentColumns
	if withContent {
		cols += `, a.content`
	}
	files := []*app.Attachment{}
	err := t.tx.SelectContext(ctx, &files, `SELECT `+cols+messageFilesFrom, tenantID, messageID)
	return files, mapErr(err)
}

// RecordFileFetch serves app.FileTx. The condition makes the first record
// win: a file's bytes, once stored, never change.
func (t *Tx) RecordFileFetch(ctx context.Context, tenantID, id uuid.UUID, content []byte, fetchErr string, at time.Time) (bool, error) {
	var n int
	var err error
	if content != nil {
		n, err = t.prune(ctx, `
			UPDATE attachments SET content = $3, size_bytes = $4, sha256 = $5, fetched_at = $6
			WHERE tenant_id = $1 AND id = $2 AND content IS NULL AND fetch_error IS NULL`,
			tenantID, id, content, len(content), app.SHA256Hex(content), at)
	} else {
		n, err = t.prune(ctx, `
			UPDATE attachments SET fetch_error = $3, fetched_at = $4
			WHERE tenant_id = $1 AND id = $2 AND content IS NULL AND fetch_error IS NULL`,
			tenantID, id, fetchErr, at)
	}
	return n == 1, err
}

// FileByID serves app.FileServeTx.
func (t *Tx) FileByID(ctx context.Context, tenantID, id uuid.UUID) (*app.Attachment, error) {
	var f app.Attachment
	err := t.tx.GetContext(ctx, &f, `SELECT `+attachmentColumns+`, a.content FROM attachments a WHERE a.tenant_id = $1 AND a.id = $2`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "file %s not found", id)
	}
	return &f, nil
}

// eventFiles selects, with an event e, its files (app.EventFiles) as
// the JSON array they scan from: the index on (tenant_id, event_id) finds
// them, and an event without files costs one index probe.
const eventFiles = `(SELECT coalesce(json_agg(json_build_object('ID', a.id, 'TenantID', a.tenant_id, 'EventID', a.event_id,
		'RecipientIndex', a.recipient_index, 'Position', a.position, 'Filename', a.filename, 'ContentType', a.content_type,
		'Size', a.size_bytes, 'SHA256', a.sha256, 'TokenNonce', encode(a.token_nonce, 'base64')) ORDER BY a.recipient_index NULLS FIRST, a.position), '[]')
	FROM attachments a WHERE a.tenant_id = e.tenant_id AND a.event_id = e.id)`
