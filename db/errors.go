package db

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/app"
)

// constraintErrors turns named constraint violations into errors a user can
// act on, naming the input field where there is one.
var constraintErrors = map[string]*app.Error{
	"tenants_slug_key":         {Code: app.ECONFLICT, Message: "A tenant with this slug already exists.", Field: "slug"},
	"users_tenant_email_key":   {Code: app.ECONFLICT, Message: "A user with this e-mail address already exists.", Field: "email"},
	"users_operator_email_key": {Code: app.ECONFLICT, Message: "An operator with this e-mail address already exists.", Field: "email"},
	"api_keys_hash_key":        {Code: app.ECONFLICT, Message: "An API key with this secret already exists; try again."},
	// An authenticator answering registration with a credential it gave
	// before (to this account or another).
	"user_security_keys_credential_id_key": {Code: app.ECONFLICT, Message: "This security key is registered already."},
	// Two saves of one template both writing the version they replace.
	"template_versions_pkey": {Code: app.ECONFLICT, Message: templateChanged},
	// Two changes of one tenant event both writing the next version.
	"tenant_events_pkey": {Code: app.ECONFLICT, Reason: "event_changed", Message: "This event was changed by someone else at the same time; reload it and apply your change again."},
}

const templateChanged = "This template was changed by someone else at the same time. Copy your changes, reload the page and apply them again."

// mapErr translates Postgres errors into app errors: known constraints get
// their own message, other unique violations are ECONFLICT and check
// violations EINVALID, deadlocks and serialization failures ECONFLICT.
// Everything else passes through as internal.
func mapErr(err error) error {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) {
		return err
	}
	if e, ok := constraintErrors[pgErr.ConstraintName]; ok {
		return e
	}
	switch pgErr.Code {
	case "23505":
		return app.Errorf(app.ECONFLICT, "This already exists.")
	case "23514":
		return app.Errorf(app.EINVALID, "A value is out of range (%s).", pgErr.ConstraintName)
	case "23503":
		return app.Errorf(app.ENOTFOUND, "A referenced record does not exist.")
	case "40P01", "40001":
		// Deadlock or serialization failure: Postgres rolled the
		// transaction back, nothing was stored, and the same request
		// again will most likely go through.
		return app.Errorf(app.ECONFLICT, "Someone changed this at the same time; try again.")
	}
	return err
}

// errUnavailable is what a caller learns when the database cannot be
// reached: the web answers 503 with Retry-After, the dispatcher retries
// recording a send instead of sending again.
var errUnavailable = app.Errorf(app.EUNAVAILABLE, "The database cannot be reached right now; try again in a few seconds.")

// unavailable marks err as app.EUNAVAILABLE when it says the database
// cannot be reached (refused or broken connections, a server shutting
// down or starting up), keeping err itself in the chain for the log.
func unavailable(err error) error {
	if err == nil || !connectionLost(err) {
		return err
	}
	return fmt.Errorf("%w: %w", errUnavailable, err)
}

// connectionLost reports whether err is a failure to reach Postgres rather
// than an answer from it.
func connectionLost(err error) bool {
	if app.ErrorCode(err) == app.EUNAVAILABLE {
		return false // marked already
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01..57P03: the server shuts
		// down or is starting ("the database system is shutting down").
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx reports a connection it closed after a failure by text only.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "failed to connect") || strings.Contains(msg, "unexpected EOF")
}
