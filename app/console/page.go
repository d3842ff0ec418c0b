package console

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// PageRequest asks a list for Limit rows after skipping Offset. Console
// lists ask for one row more than they show; Page trims it and reports
// whether another page follows. Lists that page by keyset (the messages
// explorer, the API's message list) read Cursor instead of Offset.
type PageRequest struct {
	Limit  int
	Offset int
	// Cursor, when set, starts the page next to a row of an earlier page
	// instead of at the top of the list.
	Cursor *Cursor
}

// Page trims rows to limit-1 and reports whether rows held more.
func Page[T any](rows []T, req PageRequest) ([]T, bool) {
	if req.Limit > 1 && len(rows) >= req.Limit {
		return rows[:req.Limit-1], true
	}
	return rows, false
}

// Cursor is a position in a list ordered newest first by (created_at, id):
// the page after it holds the older rows (Before false), the page before it
// the newer ones (Before true). A cursor names a row's time and id only, and
// every list reads it within the caller's tenant, so a cursor taken from
// another tenant's list only positions the caller's own rows in time.
type Cursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
	Before    bool
}

// cursorVersion leads every encoded cursor, so the format can change
// without misreading old links.
const cursorVersion = 1

// After is the cursor of the rows older than row (created_at, id).
func After(createdAt time.Time, id uuid.UUID) *Cursor {
	return &Cursor{CreatedAt: createdAt, ID: id}
}

// BeforeRow is the cursor of the rows newer than row (created_at, id).
func BeforeRow(createdAt time.Time, id uuid.UUID) *Cursor {
	return &Cursor{CreatedAt: createdAt, ID: id, Before: true}
}

// String encodes the cursor as the opaque, URL-safe token links and API
// answers carry.
func (c *Cursor) String() string {
	b := make([]byte, 0, 26)
	b = append(b, cursorVersion)
	dir := byte(0)
	if c.Before {
		dir = 1
	}
	b = append(b, dir)
	b = binary.BigEndian.AppendUint64(b, uint64(c.CreatedAt.UnixMicro()))
	b = append(b, c.ID[:]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes a token made by Cursor.String; anything else is an
// EINVALID error naming the field.
func ParseCursor(field, s string) (*Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 26 || b[0] != cursorVersion || b[1] > 1 {
		return nil, app.Invalid("invalid_cursor", field, "%s is not a cursor this list handed out; start again from the first page.", field)
	}
	c := &Cursor{Before: b[1] == 1}
	c.CreatedAt = time.UnixMicro(int64(binary.BigEndian.Uint64(b[2:10]))).UTC()
	copy(c.ID[:], b[10:26])
	return c, nil
}

// KeysetPage trims rows read for req as Page does, and puts a page read
// backwards (a Before cursor, oldest first) back into newest-first order.
func KeysetPage[T any](rows []T, req PageRequest) ([]T, bool) {
	rows, more := Page(rows, req)
	if req.Cursor != nil && req.Cursor.Before {
		rows = slices.Clone(rows)
		slices.Reverse(rows)
	}
	return rows, more
}
