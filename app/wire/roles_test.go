package wire_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// TestConnect_RefusesTheSchemaOwnerInProd starts Herald's services the way
// web, worker and serve do: in prod as the role that owns the tables it
// refuses, in dev it warns and reports degraded, and as the runtime role
// it starts clean.
func TestConnect_RefusesTheSchemaOwnerInProd(t *testing.T) {
	t.Parallel()
	name := dbtest.CreateDatabase(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	connect := func(env, url string) (*wire.Services, error) {
		cfg := webtest.Config(url)
		cfg.Env = env
		s, err := wire.Connect(context.Background(), cfg, log, "test")
		if err == nil {
			t.Cleanup(s.Close)
		}
		return s, err
	}

	_, err := connect(app.EnvProd, dbtest.OwnerURL(name))
	require.ErrorContains(t, err, "which owns Herald's tables")
	require.ErrorContains(t, err, "does not start in prod")

	s, err := connect(app.EnvDev, dbtest.OwnerURL(name))
	require.NoError(t, err, "dev starts, loudly")
	require.Len(t, s.Health.Warnings, 1)
	require.Contains(t, s.Health.Warnings[0], "which owns Herald's tables")

	s, err = connect(app.EnvProd, dbtest.URL(name))
	require.NoError(t, err)
	require.Empty(t, s.Health.Warnings, "the runtime role owns nothing")
}
