package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestNormalizeEmail(t *testing.T) {
	t.Parallel()
	got, err := app.NormalizeEmail("email", "Anna.Schmidt@Example.DE")
	require.NoError(t, err)
	require.Equal(t, "anna.schmidt@example.de", got)
	for _, bad := range []string{"", "anna", "anna@", "Anna <anna@example.de>", "anna@localhost"} {
		_, err := app.NormalizeEmail("email", bad)
		require.Equal(t, app.EINVALID, app.ErrorCode(err), bad)
	}
}
