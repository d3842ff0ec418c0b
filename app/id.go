package app

import "github.com/google/uuid"

// NewID returns the id of a new row of the tables that grow with traffic
// (events, messages, contacts, inbound messages, rejected requests): a
// UUIDv7, whose leading 48 bits are the creation time in milliseconds and
// whose other 74 bits are random. Rows created together share their
// primary key's newest index pages, so an insert into a table of millions
// touches a page that is already in memory, instead of a random one that
// must be read and, after each checkpoint, written whole to the WAL again.
func NewID() uuid.UUID {
	return uuid.Must(uuid.NewV7())
}
