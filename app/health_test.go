package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestCheckRowSecurity(t *testing.T) {
	t.Parallel()
	for _, dev := range []bool{true, false} {
		warning, err := app.CheckRowSecurity(dev, "herald", "")
		require.NoError(t, err, "a role row security applies to is fine")
		require.Empty(t, warning)
	}
	for _, bypass := range []string{"superuser", "BYPASSRLS"} {
		_, err := app.CheckRowSecurity(false, "admin", bypass)
		require.ErrorContains(t, err, "does not start in prod", "prod refuses a %s role", bypass)
		require.ErrorContains(t, err, `"admin", a `+bypass+` role`)
		warning, err := app.CheckRowSecurity(true, "admin", bypass)
		require.NoError(t, err, "dev starts")
		require.Contains(t, warning, "row-level security does not apply")
	}
}
