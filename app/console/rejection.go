package console

import (
	"context"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// RejectionFilter narrows the Requests page: an HTTP status (or a class
// such as 4xx) and an event id, both optional.
type RejectionFilter struct {
	// Status is an exact status; StatusClass a hundred (4 for 4xx) when
	// Status is 0.
	Status      int
	StatusClass int
	EventID     string
}

// RejectionFilterInput is the Requests page's filter form as typed.
type RejectionFilterInput struct {
	Status  string
	EventID string
}

// ParseRejectionFilter checks the filter form; errs names each field typed
// wrong (the field is then ignored).
func ParseRejectionFilter(in RejectionFilterInput) (RejectionFilter, map[string]string) {
	var f RejectionFilter
	errs := map[string]string{}
	switch s := strings.ToLower(strings.TrimSpace(in.Status)); {
	case s == "":
	case len(s) == 3 && strings.HasSuffix(s, "xx") && s[0] >= '1' && s[0] <= '5':
		f.StatusClass = int(s[0] - '0')
	default:
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 || n > 599 {
			errs["status"] = "Status is an HTTP status such as 422, or a class such as 4xx."
		} else {
			f.Status = n
		}
	}
	f.EventID = strings.TrimSpace(in.EventID)
	if len(f.EventID) > 200 {
		errs["event_id"] = "An event id has at most 200 characters."
		f.EventID = ""
	}
	return f, errs
}

// RejectionTx reads the tenant's rejected requests.
type RejectionTx interface {
	app.Tx
	// Rejections returns one keyset page of the tenant's rejected requests
	// matching f, newest first (or next to page.Cursor).
	Rejections(ctx context.Context, tenantID uuid.UUID, f RejectionFilter, page PageRequest) ([]*app.APIRejection, error)
	RejectionByID(ctx context.Context, tenantID, id uuid.UUID) (*app.APIRejection, error)
}

// Rejections serves the console's Requests page.
type Rejections struct {
	Store app.Store[RejectionTx]
}

// List returns a page of the tenant's rejected requests matching f.
func (s *Rejections) List(ctx context.Context, tenantID uuid.UUID, f RejectionFilter, page PageRequest) ([]*app.APIRejection, bool, error) {
	var rs []*app.APIRejection
	err := s.Store.InTenant(ctx, tenantID, func(tx RejectionTx) (err error) {
		rs, err = tx.Rejections(ctx, tenantID, f, page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rs, more := KeysetPage(rs, page)
	return rs, more, nil
}

// Get returns one of the tenant's rejected requests; another tenant's is
// ENOTFOUND.
func (s *Rejections) Get(ctx context.Context, tenantID, id uuid.UUID) (*app.APIRejection, error) {
	var r *app.APIRejection
	err := s.Store.InTenant(ctx, tenantID, func(tx RejectionTx) (err error) {
		r, err = tx.RejectionByID(ctx, tenantID, id)
		return err
	})
	return r, err
}
