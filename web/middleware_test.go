package web

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRequestLogLevel(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		dev    bool
		route  string
		status int
		want   slog.Level
	}{
		"ProdSuccess":     {false, "/api/v1/notifications", 202, slog.LevelInfo},
		"ProdClientError": {false, "/api/v1/notifications", 422, slog.LevelInfo},
		"ProdProbe":       {false, "/healthz", 200, slog.LevelDebug},
		"ProdServerError": {false, "/api/v1/notifications", 500, slog.LevelError},
		"DevSuccess":      {true, "/t/:slug/", 200, slog.LevelDebug},
		"DevRedirect":     {true, "/login", 303, slog.LevelDebug},
		"DevClientError":  {true, "/api/v1/notifications", 401, slog.LevelInfo},
		"DevServerError":  {true, "/api/v1/notifications", 503, slog.LevelError},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, requestLogLevel(tc.dev, tc.route, tc.status))
		})
	}
}
