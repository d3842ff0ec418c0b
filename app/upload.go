package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Upload statuses: stored and checked, waiting for its start; its rows
// being turned into events; every row handled.
const (
	UploadReady   = "READY"
	UploadRunning = "RUNNING"
	UploadDone    = "DONE"
)

// UploadBatchSize is how many rows one batch job turns into events, in
// one transaction of the upload's tenant.
const UploadBatchSize = 250

// Upload is a passenger list whose rows become events of one trigger
// event, each under the event id upload:<upload id>:<row>.
type Upload struct {
	ID           uuid.UUID `db:"id" json:"id"`
	TenantID     uuid.UUID `db:"tenant_id" json:"-"`
	TriggerEvent string    `db:"trigger_event" json:"trigger_event"`
	// Mapping is the target (a recipient field or variable) each column
	// gave, by column, as JSON.
	Mapping  JSON    `db:"mapping" json:"mapping"`
	Filename *string `db:"filename" json:"filename,omitempty"`
	Status   string  `db:"status" json:"status"`
	// TotalRows is the file's rows; Cursor the rows handled, in order;
	// StoredRows those stored as events, RefusedRows those intake refused
	// when their turn came (the error file lists them).
	TotalRows   int        `db:"total_rows" json:"total_rows"`
	Cursor      int        `db:"cursor_row" json:"handled_rows"`
	StoredRows  int        `db:"stored_rows" json:"stored_rows"`
	RefusedRows int        `db:"refused_rows" json:"refused_rows"`
	SendAt      *time.Time `db:"send_at" json:"send_at,omitempty"`
	TripID      *string    `db:"trip_id" json:"trip_id,omitempty"`
	APIKeyID    *uuid.UUID `db:"api_key_id" json:"-"`
	CreatedBy   *uuid.UUID `db:"created_by" json:"-"`
	CreatedAt   time.Time  `db:"created_at" json:"created_at"`
	StartedAt   *time.Time `db:"started_at" json:"started_at,omitempty"`
	FinishedAt  *time.Time `db:"finished_at" json:"finished_at,omitempty"`
}

// EventIDOf is the event id of the upload's row n.
func (u *Upload) EventIDOf(n int) string {
	return fmt.Sprintf("upload:%s:%d", u.ID, n)
}

// UploadRow is one row of an upload: the notification request it stands
// for until it is handled, then the event it became or intake's refusal.
type UploadRow struct {
	Number       int        `db:"row_number"`
	Request      JSON       `db:"request"`
	EventID      *uuid.UUID `db:"event_id"`
	ErrorCode    *string    `db:"error_code"`
	ErrorField   *string    `db:"error_field"`
	ErrorMessage *string    `db:"error_message"`
}

// UploadCounts are the messages of an upload's events by outcome: sent
// counts every message a provider accepted (delivered and read included).
type UploadCounts struct {
	Messages  int `db:"messages" json:"messages"`
	Sent      int `db:"sent" json:"sent"`
	Delivered int `db:"delivered" json:"delivered"`
	Failed    int `db:"failed" json:"failed"`
}

// UploadProgress is an upload with its messages' counts.
type UploadProgress struct {
	*Upload
	Counts UploadCounts `json:"messages"`
}

// UploadFailure is one line of an upload's error file: a row intake
// refused, or a message of a row's event that failed.
type UploadFailure struct {
	Row     int    `db:"row_number"`
	Field   string `db:"field"`
	Code    string `db:"code"`
	Message string `db:"message"`
}

// UploadInput is what an upload asks for besides its file.
type UploadInput struct {
	TriggerEvent string
	// Mapping gives a column's target (a recipient field, booking_id or
	// a variable of the event; "-" for none), by the column's header.
	// Columns it leaves out map to the target their header names.
	Mapping map[string]string
	// SendAt, when set, schedules every row (RFC 3339).
	SendAt string
	// TripID, when set, makes every row a booking on the trip, so the
	// list becomes the trip's audience.
	TripID   string
	Filename string
}

// UploadResult is a stored upload; Duplicate when the same file with the
// same settings was uploaded before, which answers with that upload.
type UploadResult struct {
	*Upload
	Duplicate bool `json:"duplicate,omitempty"`
}

// UploadTx lists the statements uploads run to store and handle rows:
// intake's own, with a savepoint per row so that a row intake refuses
// leaves the batch's other rows.
type UploadTx interface {
	IntakeTx
	Savepoint(ctx context.Context, fn func() error) (fnErr, err error)
	// InsertUpload stores an upload, or nothing when its id is taken.
	InsertUpload(ctx context.Context, u *Upload) (inserted bool, err error)
	InsertUploadRows(ctx context.Context, tenantID, uploadID uuid.UUID, rows []*UploadRow) error
	UploadByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Upload, error)
	// UploadRows returns up to limit rows after row number after, in order.
	UploadRows(ctx context.Context, tenantID, uploadID uuid.UUID, after, limit int) ([]*UploadRow, error)
	// StartUpload moves a READY upload to RUNNING; started is false for
	// an upload in another status.
	StartUpload(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (started bool, err error)
	// AdvanceUpload records the handled rows' outcomes and the upload's
	// cursor, counts and status; an upload done keeps no requests.
	AdvanceUpload(ctx context.Context, u *Upload, rows []*UploadRow) error
	UsageByChannel(ctx context.Context, tenantID uuid.UUID, month time.Time) (map[Channel]int, error)
}

// UploadQueue enqueues an upload's batch jobs.
type UploadQueue interface {
	// EnqueueUploadBatch enqueues the batch of the upload's rows after
	// row from; a batch job already waiting for the same rows is kept
	// and no second one is added.
	EnqueueUploadBatch(ctx context.Context, tx Tx, tenantID, uploadID uuid.UUID, from int) error
}

// Uploads stores passenger lists and turns their rows into events.
type Uploads struct {
	Store  Store[UploadTx]
	Intake *Intake
	Queue  UploadQueue
	// Quotas are the plans' monthly quotas (DefaultQuotas when nil).
	Quotas map[string]map[Channel]int
	Now    Clock
}

// UploadActor is who uploads: an API key, or a console user.
type UploadActor struct {
	Key    *APIKey
	UserID *uuid.UUID
}

// errChecked rolls back the transaction that checked an upload's limits.
var errChecked = errors.New("upload checked")

// Create reads a CSV file from r, validates every row with intake's own
// validation, checks the whole upload against the tenant's day caps and
// plan quotas, and stores it READY: nothing is sent before Start. Any
// problem refuses the whole upload and stores nothing; the error lists
// every problem (up to MaxUploadProblems), each naming its row as
// rows[n].<field>. The upload's id is derived from the tenant, the
// settings and the file's bytes, so the same file uploaded again is the
// same upload, whose events (upload:<id>:<row>) are sent once.
func (s *Uploads) Create(ctx context.Context, tenantID uuid.UUID, actor UploadActor, in UploadInput, r io.Reader) (*UploadResult, error) {
	now := s.Now()
	events := s.Intake.Registry.For(ctx, tenantID).Memo()
	u, def, err := s.newUpload(tenantID, actor, in, now, events)
	if err != nil {
		return nil, err
	}
	f, p, err := readUploadCSV(r)
	if err != nil {
		return nil, err
	}
	cols, cp := uploadColumns(f.header, in.Mapping, def)
	if p = append(p, cp...); len(p) > 0 {
		return nil, capProblems(p)
	}
	u.ID = uploadID(u, cols, f.sum)
	u.TotalRows = len(f.rows)
	u.Mapping, _ = json.Marshal(columnMapping(f.header, cols))
	rows, reqs, p := buildUploadRows(u, f, cols, now, events)
	if len(p) > 0 {
		return nil, capProblems(p)
	}
	if err := s.checkLimits(ctx, u, def, reqs, actor, now); err != nil {
		return nil, err
	}
	res := &UploadResult{Upload: u}
	err = s.Store.InTenant(ctx, tenantID, func(tx UploadTx) error {
		inserted, err := tx.InsertUpload(ctx, u)
		if err != nil || !inserted {
			if err == nil {
				res.Upload, err = tx.UploadByID(ctx, tenantID, u.ID, false)
				res.Duplicate = true
			}
			return err
		}
		return tx.InsertUploadRows(ctx, tenantID, u.ID, rows)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// newUpload checks an upload's settings and returns it without rows.
func (s *Uploads) newUpload(tenantID uuid.UUID, actor UploadActor, in UploadInput, now time.Time, events EventLookup) (*Upload, *EventDef, error) {
	def, ok, err := events(strings.TrimSpace(in.TriggerEvent))
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, Invalid("unknown_event", "trigger_event", "trigger_event %q is not a known event; GET /api/v1/events lists them.", in.TriggerEvent)
	}
	u := &Upload{TenantID: tenantID, TriggerEvent: def.Name, Status: UploadReady, CreatedBy: actor.UserID, CreatedAt: now}
	if actor.Key != nil {
		u.APIKeyID = &actor.Key.ID
	}
	if name := strings.TrimSpace(in.Filename); name != "" {
		name = clipRunes(name, 255)
		u.Filename = &name
	}
	if at := strings.TrimSpace(in.SendAt); at != "" {
		t, err := time.Parse(time.RFC3339, at)
		switch {
		case err != nil:
			return nil, nil, invalidSendAt("send_at")
		case !t.After(now):
			return nil, nil, Invalid("send_at_in_past", "send_at", "send_at %s is not in the future.", at)
		}
		u.SendAt = &t
	}
	if trip := strings.TrimSpace(in.TripID); trip != "" {
		if len(trip) > 200 {
			return nil, nil, Invalid("invalid_trip_id", "trip_id", "trip_id must be at most 200 characters.")
		}
		u.TripID = &trip
	}
	return u, def, nil
}

// clipRunes keeps the first n characters of s.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// uploadNamespace names uploads' ids (version 5 UUIDs).
var uploadNamespace = uuid.MustParse("5b0e3c1e-6f0a-4d59-9a39-4c2f3b8e7d21")

// uploadID is an upload's id: the same tenant, event, schedule, trip,
// columns and file bytes give the same id.
func uploadID(u *Upload, cols []string, sum []byte) uuid.UUID {
	parts := []string{u.TenantID.String(), u.TriggerEvent, strings.Join(cols, ","), fmt.Sprintf("%x", sum), deref(u.TripID)}
	if u.SendAt != nil {
		parts = append(parts, u.SendAt.UTC().Format(time.RFC3339))
	}
	return uuid.NewSHA1(uploadNamespace, []byte(strings.Join(parts, "\n")))
}

// columnMapping is the target of each column that gives one.
func columnMapping(header, cols []string) map[string]string {
	m := map[string]string{}
	for i, t := range cols {
		if t != uploadIgnore {
			m[strings.TrimSpace(header[i])] = t
		}
	}
	return m
}

// capProblems is the error of an upload's problems, listing at most
// MaxUploadProblems of them.
func capProblems(p problems) error {
	if len(p) > MaxUploadProblems {
		more := len(p) - MaxUploadProblems + 1
		p = append(p[:MaxUploadProblems-1:MaxUploadProblems-1], Invalid("more_problems", "rows",
			"%d more problems are not listed; fix these and upload again.", more))
	}
	return p.err()
}

// buildUploadRows turns each row into the notification request it stands
// for and validates it with intake's validation, naming each problem by
// row and column target.
func buildUploadRows(u *Upload, f *uploadFile, cols []string, now time.Time, events EventLookup) ([]*UploadRow, []*NotificationRequest, problems) {
	var p problems
	rows := make([]*UploadRow, 0, len(f.rows))
	reqs := make([]*NotificationRequest, 0, len(f.rows))
	for i, rec := range f.rows {
		n := i + 1
		body, _ := json.Marshal(rowRequest(u, n, rec, cols))
		req, err := ParseNotificationRequest(body, now, events)
		if err != nil {
			for _, d := range rowProblems(n, err) {
				p.add(d)
			}
			continue
		}
		rows = append(rows, &UploadRow{Number: n, Request: body})
		reqs = append(reqs, req)
	}
	return rows, reqs, p
}

// rowRequest is the notification request of row n: one recipient, the
// variables in its context, the upload's schedule, and, for an upload to
// a trip, the row's booking on the trip (the row's own event id when the
// list names no booking).
func rowRequest(u *Upload, n int, rec []string, cols []string) map[string]any {
	rc, vars := map[string]any{}, map[string]any{}
	booking := ""
	for i, t := range cols {
		if i >= len(rec) || t == uploadIgnore {
			continue
		}
		v := strings.TrimSpace(rec[i])
		switch {
		case v == "":
		case t == uploadBookingField:
			booking = v
		case isRecipientField(t):
			rc[t] = v
		default:
			vars[t] = v
		}
	}
	if name, ok := rc["name"]; ok {
		if _, set := vars["passenger_name"]; !set {
			vars["passenger_name"] = name
		}
	}
	if rc["name"] == nil {
		rc["name"] = ""
	}
	req := map[string]any{"event_id": u.EventIDOf(n), "trigger_event": u.TriggerEvent, "recipients": []any{rc}, "context": vars}
	if u.SendAt != nil {
		req["send_at"] = u.SendAt.Format(time.RFC3339)
	}
	if u.TripID != nil {
		vars["trip_id"] = *u.TripID
		if booking == "" {
			booking = u.EventIDOf(n)
		}
	}
	if booking != "" {
		req["conversation_context"] = map[string]string{"type": EntityBooking, "id": booking}
	}
	return req
}

func isRecipientField(t string) bool {
	for _, f := range uploadRecipientFields {
		if f == t {
			return true
		}
	}
	return false
}

// rowProblems names intake's problems with row n's request by the row
// and the column target: recipients[0].phone is rows[n].phone,
// context.tour_name is rows[n].tour_name.
func rowProblems(n int, err error) problems {
	ds := ErrorDetails(err)
	if len(ds) == 0 {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: EINVALID, Reason: "invalid_row", Message: err.Error()}
		}
		ds = []*Error{e}
	}
	out := make(problems, 0, len(ds))
	for _, d := range ds {
		c := *d
		c.Details = nil
		c.Field = rowField(n, rowTarget(d.Field))
		c.Message = fmt.Sprintf("Row %d: %s", n, d.Message)
		out = append(out, &c)
	}
	return out
}

// rowTarget is the column target a request field stands for.
func rowTarget(field string) string {
	for _, prefix := range []string{"recipients[0].context.", "recipients[0].", "recipients[0]", "context.", "conversation_context.id", "conversation_context"} {
		if rest, ok := strings.CutPrefix(field, prefix); ok {
			if strings.HasPrefix(prefix, "conversation_context") {
				return uploadBookingField
			}
			return rest
		}
	}
	return field
}

// checkLimits checks the whole upload against the tenant's day caps and
// its plan's quotas before anything is stored. The caps are taken with
// intake's own statement (checkLimits) for all rows at once, as one
// request of every row's recipient, in a transaction that always rolls
// back: the check sees the counters as concurrent requests leave them and
// keeps nothing, since each row takes its own counts when it becomes an
// event. The quota check reads the month's usage in the same transaction.
func (s *Uploads) checkLimits(ctx context.Context, u *Upload, def *EventDef, reqs []*NotificationRequest, actor UploadActor, now time.Time) error {
	all := &NotificationRequest{TriggerEvent: u.TriggerEvent}
	for _, r := range reqs {
		all.Recipients = append(all.Recipients, r.Recipients...)
	}
	in := &intakeRequest{key: uploadKey(u, actor.Key), req: all, def: def, event: &Event{TenantID: u.TenantID, TriggerEvent: u.TriggerEvent}, now: now}
	err := s.Store.InTenant(ctx, u.TenantID, func(tx UploadTx) error {
		if err := checkLimits(ctx, tx, in); err != nil {
			return err
		}
		if err := s.checkQuotas(ctx, tx, in, now); err != nil {
			return err
		}
		return errChecked
	})
	if errors.Is(err, errChecked) {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && strings.HasPrefix(e.Field, "recipients[") {
		// Recipient i is row i+1.
		c := *e
		var i int
		var rest string
		if _, serr := fmt.Sscanf(e.Field, "recipients[%d]%s", &i, &rest); serr == nil || rest == "" {
			c.Field = rowField(i+1, strings.TrimPrefix(rest, "."))
		}
		c.Message = "The upload: " + e.Message
		return &c
	}
	return err
}

// checkQuotas refuses an upload whose messages would pass the plan's
// monthly quota on a channel, counting each row on every channel it may
// be sent on (an upper bound, like the day caps).
func (s *Uploads) checkQuotas(ctx context.Context, tx UploadTx, in *intakeRequest, now time.Time) error {
	t, err := tx.TenantByID(ctx, in.key.TenantID)
	if err != nil {
		return err
	}
	used, err := tx.UsageByChannel(ctx, t.ID, MonthOf(now))
	if err != nil {
		return err
	}
	counts := countRequest(in).perChannel
	chs := make([]Channel, 0, len(counts))
	for ch := range counts {
		chs = append(chs, ch)
	}
	sort.Slice(chs, func(i, j int) bool { return chs[i] < chs[j] })
	for _, ch := range chs {
		q := Quota(s.Quotas, t.Plan, ch)
		if q != Unlimited && used[ch]+counts[ch] > q {
			return &Error{Code: ETOOMANY, Reason: "quota_exceeded", Field: "rows", RetryAfter: MonthOf(now).AddDate(0, 1, 0).Sub(now),
				Message: fmt.Sprintf("The upload may send up to %d %s messages; the %s plan's quota leaves %d this month (%d of %d used).",
					counts[ch], ch, t.Plan, max(q-used[ch], 0), used[ch], q)}
		}
	}
	return nil
}

// uploadKey is the API key an upload's rows are submitted under: the
// uploading key, or for a console upload a key of the tenant with no id
// (its events name no key).
func uploadKey(u *Upload, key *APIKey) *APIKey {
	if key != nil {
		return key
	}
	k := &APIKey{TenantID: u.TenantID, Name: "upload " + u.ID.String()}
	if u.APIKeyID != nil {
		k.ID = *u.APIKeyID
	}
	return k
}
