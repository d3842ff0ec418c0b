package db

import (
	"errors"

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
	// Two saves of one template both writing the version they replace.
	"template_versions_pkey": {Code: app.ECONFLICT, Message: templateChanged},
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
