package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

const rejectionColumns = `id, tenant_id, at, method, path, status, code, message, field, event_id, api_key_prefix,
	request_id, body, body_size, suppressed`

// RecordRejection serves app.RejectionTx. Taking the tenant's next number
// and writing its slot is one statement: the counter's upsert locks the
// tenant's counter row, so concurrent rejections take distinct numbers, and
// the slot's upsert overwrites the oldest row once the ring is full. No
// count is read before a delete, so the ring never holds more than capacity
// rows however many requests are rejected at once.
func (t *Tx) RecordRejection(ctx context.Context, r *app.APIRejection, capacity int) error {
	_, err := t.tx.ExecContext(ctx, `
		WITH n AS (
			INSERT INTO api_rejection_counters AS c (tenant_id, seq) VALUES ($1, 1)
			ON CONFLICT (tenant_id) DO UPDATE SET seq = c.seq + 1
			RETURNING seq)
		INSERT INTO api_rejections AS r (tenant_id, slot, seq, id, at, method, path, status, code, message, field,
			event_id, api_key_prefix, request_id, body, body_size, suppressed)
		SELECT $1, (n.seq % $2)::integer, n.seq, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 FROM n
		ON CONFLICT (tenant_id, slot) DO UPDATE SET seq = excluded.seq, id = excluded.id, at = excluded.at,
			method = excluded.method, path = excluded.path, status = excluded.status, code = excluded.code,
			message = excluded.message, field = excluded.field, event_id = excluded.event_id,
			api_key_prefix = excluded.api_key_prefix, request_id = excluded.request_id, body = excluded.body,
			body_size = excluded.body_size, suppressed = excluded.suppressed`,
		r.TenantID, capacity, r.ID, r.At, r.Method, r.Path, r.Status, r.Code, r.Message, r.Field,
		r.EventID, r.KeyPrefix, r.RequestID, r.Body, r.BodySize, r.Suppressed)
	return mapErr(err)
}

// Rejections serves console.RejectionTx, paging by keyset on (at, id) as
// the messages explorer does on (created_at, id).
func (t *Tx) Rejections(ctx context.Context, tenantID uuid.UUID, f console.RejectionFilter, page console.PageRequest) ([]*app.APIRejection, error) {
	where := []string{"tenant_id = $1"}
	args := []any{tenantID}
	add := func(cond string, vs ...any) {
		for _, v := range vs {
			args = append(args, v)
			cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(args)), 1)
		}
		where = append(where, cond)
	}
	switch {
	case f.Status != 0:
		add("status = ?", f.Status)
	case f.StatusClass != 0:
		add("status >= ? AND status < ?", f.StatusClass*100, f.StatusClass*100+100)
	}
	if f.EventID != "" {
		add("event_id = ?", f.EventID)
	}
	order := "at DESC, id DESC"
	if c := page.Cursor; c != nil {
		if c.Before {
			add("(at, id) > (?, ?)", c.CreatedAt, c.ID)
			order = "at, id"
		} else {
			add("(at, id) < (?, ?)", c.CreatedAt, c.ID)
		}
	}
	args = append(args, page.Limit)
	rs := []*app.APIRejection{}
	err := t.tx.SelectContext(ctx, &rs, `
		SELECT `+rejectionColumns+` FROM api_rejections
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY `+order+`
		LIMIT $`+fmt.Sprint(len(args)), args...)
	return rs, mapErr(err)
}

// RejectionByID serves console.RejectionTx.
func (t *Tx) RejectionByID(ctx context.Context, tenantID, id uuid.UUID) (*app.APIRejection, error) {
	var r app.APIRejection
	err := t.tx.GetContext(ctx, &r, `SELECT `+rejectionColumns+` FROM api_rejections WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Request %s not found: it was never kept, or it is older than what the tenant keeps.", id)
	}
	return &r, nil
}

// PruneRejections serves app.MaintenanceTx: rejected requests older than
// the tenant's retention. Their slots stay free until the ring comes round.
func (t *Tx) PruneRejections(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		DELETE FROM api_rejections WHERE tenant_id = $1 AND slot IN (
			SELECT slot FROM api_rejections WHERE tenant_id = $1 AND at < $2
			ORDER BY at LIMIT $3 FOR UPDATE SKIP LOCKED)`, tenantID, before, limit)
}

// PruneRateBuckets serves app.MaintenanceTx: the idle buckets whose key
// starts with prefix (the public links' buckets; API keys' and accounts'
// buckets are few and stay).
func (t *Tx) PruneRateBuckets(ctx context.Context, prefix string, before time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		DELETE FROM rate_buckets WHERE key IN (
			SELECT key FROM rate_buckets WHERE starts_with(key, $1) AND refilled_at < $2
			LIMIT $3 FOR UPDATE SKIP LOCKED)`, prefix, before, limit)
}

// TenantOfKeyPrefix serves app.KeyPrefixLookup: outside any transaction,
// through the platform-scoped herald_api_key_prefix_tenant function, as
// APIKeyByHash looks keys up.
func (s *Store) TenantOfKeyPrefix(ctx context.Context, prefix string) (uuid.UUID, error) {
	var id *uuid.UUID
	if err := s.db.GetContext(ctx, &id, `SELECT herald_api_key_prefix_tenant($1)`, prefix); err != nil {
		return uuid.Nil, unavailable(mapErr(err))
	}
	if id == nil {
		return uuid.Nil, app.Errorf(app.ENOTFOUND, "No API key has the prefix %s.", prefix)
	}
	return *id, nil
}
