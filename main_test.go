package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

type testBundle struct {
	env map[string]string
}

// setup gives each test its own migrated database and data directory.
func setup(t *testing.T) *testBundle {
	t.Helper()
	name := dbtest.CreateDatabase(t)
	return &testBundle{env: map[string]string{
		"DATABASE_URL":         dbtest.URL(name),
		"MIGRATE_DATABASE_URL": dbtest.OwnerURL(name),
		"HERALD_DATA_DIR":      t.TempDir(),
		"HERALD_LOG_LEVEL":     "warn",
		// Sends go out at any time of day the tests run; the quiet hours'
		// own tests set theirs.
		"HERALD_QUIET_HOURS": "off",
	}}
}

func (b *testBundle) getenv(k string) string { return b.env[k] }

// herald runs the command and returns its stdout, stderr and error.
func (b *testBundle) herald(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, b.getenv, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func (b *testBundle) mustHerald(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := b.herald(t, args...)
	require.NoError(t, err, "herald %s: %s", strings.Join(args, " "), errOut)
	return out
}

func TestRun_Usage(t *testing.T) {
	t.Parallel()
	b := &testBundle{env: map[string]string{"HERALD_DATA_DIR": t.TempDir()}}

	out := b.mustHerald(t, "version")
	require.True(t, strings.HasPrefix(out, "herald "), "version names herald first, got %q", out)

	for name, args := range map[string][]string{
		"NoCommand":          nil,
		"UnknownCommand":     {"launch"},
		"AdminNoSub":         {"admin"},
		"AdminUnknown":       {"admin", "delete-everything"},
		"ServeExtraArg":      {"serve", "now"},
		"VersionExtraArg":    {"version", "now"},
		"UnknownFlag":        {"demo", "--colour", "red"},
		"HelpUnknownCommand": {"help", "launch"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := b.herald(t, args...)
			var ue usageError
			require.True(t, errors.As(err, &ue), "usage error, got %v", err)
		})
	}

	t.Run("BadConfigNamesVariable", func(t *testing.T) {
		b := &testBundle{env: map[string]string{"HERALD_DATA_DIR": t.TempDir(), "HERALD_ENV": "prod", "HERALD_BASE_URL": "https://herald.example.com"}}
		_, _, err := b.herald(t, "migrate")
		require.ErrorContains(t, err, "DATABASE_URL")
	})
}

func TestRun_Help(t *testing.T) {
	t.Parallel()
	// A configuration that would fail: help must not need one.
	b := &testBundle{env: map[string]string{"HERALD_ENV": "prod"}}

	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"help", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, err := b.herald(t, args...)
			require.NoError(t, err)
			require.Empty(t, errOut)
			for _, c := range commands() {
				require.Contains(t, out, c.synopsis(), "the usage lists every command")
			}
		})
	}

	for _, c := range commands() {
		for _, h := range []string{"--help", "-h"} {
			args := append(strings.Fields(c.name), h)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				out, errOut, err := b.herald(t, args...)
				require.NoError(t, err, "asking for help is no error")
				require.Empty(t, errOut)
				if c.name == "help" {
					require.Contains(t, out, "Usage:\n")
					return
				}
				require.True(t, strings.HasPrefix(out, "Usage: "+c.synopsis()+"\n"), "usage on stdout, got %q", out)
				require.Contains(t, out, c.summary[1:])
			})
		}
	}

	t.Run("HelpCommand", func(t *testing.T) {
		out := b.mustHerald(t, "help", "admin", "create-user")
		require.True(t, strings.HasPrefix(out, "Usage: herald admin create-user --email E"), out)
		require.Contains(t, out, "-password string", "the flags are listed")
	})

	for _, args := range [][]string{{"admin", "--help"}, {"admin", "-h"}, {"admin", "help"}, {"help", "admin"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, err := b.herald(t, args...)
			require.NoError(t, err)
			require.Empty(t, errOut)
			require.True(t, strings.HasPrefix(out, "Usage: herald admin <subcommand>"), out)
			for _, sub := range []string{"create-tenant", "create-user", "create-api-key", "set-limits", "ensure-operator"} {
				require.Contains(t, out, "herald admin "+sub)
			}
		})
	}

	t.Run("BadFlagUsageOnStderr", func(t *testing.T) {
		out, errOut, err := b.herald(t, "admin", "create-tenant", "--colour", "red")
		var ue usageError
		require.ErrorAs(t, err, &ue)
		require.Empty(t, out)
		require.Contains(t, errOut, "Usage: herald admin create-tenant")
	})
}

func TestVersionText(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/heraldhq/herald", Version: "v0.0.0-20261124064910-e5134bd4a1b2+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "e5134bd4a1b2c3d4e5f60718293a4b5c6d7e8f90"},
			{Key: "vcs.time", Value: "2026-11-24T06:49:10Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}

	t.Run("ModuleVersionAndRevision", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "herald v0.0.0-20261124064910-e5134bd4a1b2+dirty\n"+
			"revision e5134bd4a1b2c3d4e5f60718293a4b5c6d7e8f90 (2026-11-24T06:49:10Z) with uncommitted changes\n"+
			"built with go1.26.0\n", versionText("dev", bi))
	})
	t.Run("LdflagsVersionWins", func(t *testing.T) {
		t.Parallel()
		clean := *bi
		clean.Settings = bi.Settings[:3]
		require.Equal(t, "herald v1.4.0\n"+
			"revision e5134bd4a1b2c3d4e5f60718293a4b5c6d7e8f90 (2026-11-24T06:49:10Z)\n"+
			"built with go1.26.0\n", versionText("v1.4.0", &clean))
	})
	t.Run("NoVCS", func(t *testing.T) {
		t.Parallel()
		// go test and builds outside a repository carry no revision.
		require.Equal(t, "herald dev\nbuilt with go1.26.0\n",
			versionText("dev", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}))
	})
	t.Run("NoBuildInfo", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "herald dev\n", versionText("dev", nil))
	})
}

func TestDemoCredentials(t *testing.T) {
	t.Parallel()
	const kept = "demo tenant: demo (x)\nmanager: m@demo  password: p\napi key: hk_ABC234\n"
	want := kept + "# for the README's curl, paste into your shell:\nexport KEY=hk_ABC234\n"

	text, ok := demoCredentials(kept)
	require.True(t, ok)
	require.Equal(t, want, text)

	text, ok = demoCredentials(want)
	require.True(t, ok)
	require.Equal(t, want, text, "an export already kept is not repeated")

	_, ok = demoCredentials("demo tenant exists\n")
	require.False(t, ok, "no key, no export")
}

func TestRun_HelpEnv(t *testing.T) {
	t.Parallel()
	b := &testBundle{env: map[string]string{}}

	require.Contains(t, b.mustHerald(t, "help"), "herald help env", "the usage points to the variables")

	out := b.mustHerald(t, "help", "env")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 1+len(envVars()), "a heading and a line per variable")
	for i, v := range envVars() {
		fields := strings.Fields(lines[1+i])
		require.Equal(t, v.Name, fields[0], "the variables in table order")
		if v.Default != "" {
			require.Equal(t, v.Default, fields[1], "%s shows its default", v.Name)
		}
		require.Contains(t, lines[1+i], v.Usage)
	}
}

func TestRun_Migrate(t *testing.T) {
	t.Parallel()
	name := dbtest.CreateEmptyDatabase(t)
	b := &testBundle{env: map[string]string{
		"DATABASE_URL":         dbtest.URL(name),
		"MIGRATE_DATABASE_URL": dbtest.OwnerURL(name),
		"HERALD_DATA_DIR":      t.TempDir(),
		"HERALD_LOG_LEVEL":     "warn",
	}}
	require.Contains(t, b.mustHerald(t, "migrate"), "applied")
	require.Equal(t, "database is up to date\n", b.mustHerald(t, "migrate"))
}

func TestRun_Admin(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := strings.TrimSpace(b.mustHerald(t, "admin", "create-tenant", "--slug", "acme", "--name", "Acme Tours", "--plan", "PRO", "--locale", "en", "--timezone", "Europe/Vienna"))
	require.Len(t, id, 36, "create-tenant prints the tenant id")

	secret := b.mustHerald(t, "admin", "create-api-key", "--tenant", "acme", "--name", "booking system")
	require.Regexp(t, `^hk_[A-Z2-7]{26}\n$`, secret, "create-api-key prints the secret and nothing else")

	userID := b.mustHerald(t, "admin", "create-user", "--email", "Mia@Acme.example", "--password", "correct horse battery", "--role", "manager", "--tenant", "acme")
	require.Len(t, strings.TrimSpace(userID), 36)
	b.mustHerald(t, "admin", "create-user", "--email", "ops@herald.example", "--password", "correct horse battery", "--role", "operator")
	b.mustHerald(t, "admin", "set-limits", "--tenant", "acme", "--daily-sms", "5", "--sms-countries", "AT,DE")

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"BadLimit":           {[]string{"admin", "set-limits", "--tenant", "acme", "--daily-sms", "-1"}, "daily_sms"},
		"DuplicateSlug":      {[]string{"admin", "create-tenant", "--slug", "acme", "--name", "Other"}, "slug already exists"},
		"BadSlug":            {[]string{"admin", "create-tenant", "--slug", "Not A Slug!", "--name", "X"}, "--slug"},
		"BadPlan":            {[]string{"admin", "create-tenant", "--slug", "x1", "--name", "X", "--plan", "GOLD"}, "--plan"},
		"BadTimezone":        {[]string{"admin", "create-tenant", "--slug", "x2", "--name", "X", "--timezone", "Nowhere/City"}, "--timezone"},
		"MissingName":        {[]string{"admin", "create-tenant", "--slug", "x3"}, "--name is required"},
		"UnknownFlag":        {[]string{"admin", "create-tenant", "--slug", "x4", "--name", "X", "--colour", "red"}, "colour"},
		"BadRole":            {[]string{"admin", "create-user", "--email", "a@acme.example", "--password", "long enough pw", "--role", "god", "--tenant", "acme"}, "--role"},
		"UnknownTenantUser":  {[]string{"admin", "create-user", "--email", "a@acme.example", "--password", "long enough pw", "--role", "support", "--tenant", "nope"}, "not found"},
		"ManagerNoTenant":    {[]string{"admin", "create-user", "--email", "a@acme.example", "--password", "long enough pw", "--role", "manager"}, "--tenant"},
		"OperatorWithTenant": {[]string{"admin", "create-user", "--email", "a@acme.example", "--password", "long enough pw", "--role", "operator", "--tenant", "acme"}, "--tenant"},
		"DuplicateEmail":     {[]string{"admin", "create-user", "--email", "mia@acme.example", "--password", "long enough pw", "--role", "support", "--tenant", "acme"}, "already exists"},
		"ShortPassword":      {[]string{"admin", "create-user", "--email", "b@acme.example", "--password", "short", "--role", "support", "--tenant", "acme"}, "--password"},
		"BadEmail":           {[]string{"admin", "create-user", "--email", "not-an-email", "--password", "long enough pw", "--role", "support", "--tenant", "acme"}, "--email"},
		"UnknownTenantKey":   {[]string{"admin", "create-api-key", "--tenant", "nope", "--name", "x"}, "not found"},
		"KeyWithoutName":     {[]string{"admin", "create-api-key", "--tenant", "acme"}, "--name is required"},
		"UnknownScope":       {[]string{"admin", "create-api-key", "--tenant", "acme", "--name", "x", "--scopes", "send,root"}, "--scopes"},
		"NoScope":            {[]string{"admin", "create-api-key", "--tenant", "acme", "--name", "x", "--scopes", " "}, "--scopes"},
	} {
		t.Run(name, func(t *testing.T) {
			out, _, err := b.herald(t, tc.args...)
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, out, "a failed command prints nothing on stdout")
		})
	}

	t.Run("KeyScopes", func(t *testing.T) {
		cfg, err := loadConfig(b.getenv)
		require.NoError(t, err)
		svc, err := wire.Connect(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), "test")
		require.NoError(t, err)
		defer svc.Close()
		for args, want := range map[string][]string{
			"":                     app.DefaultScopes,
			" Read , MANAGE,read ": {app.ScopeRead, app.ScopeManage},
			"approve":              {app.ScopeApprove},
		} {
			flags := []string{"admin", "create-api-key", "--tenant", "acme", "--name", "scoped " + args}
			if args != "" {
				flags = append(flags, "--scopes", args)
			}
			secret := strings.TrimSpace(b.mustHerald(t, flags...))
			key, err := svc.APIKeys.Authenticate(context.Background(), secret)
			require.NoError(t, err)
			require.Equal(t, want, []string(key.Scopes), "--scopes %q", args)
		}
	})

	t.Run("ResetTwoFactor", func(t *testing.T) {
		_, _, err := b.herald(t, "admin", "reset-two-factor", "--email", "ops@herald.example")
		require.ErrorContains(t, err, "has no second factor")
		_, _, err = b.herald(t, "admin", "reset-two-factor", "--email", "nobody@herald.example")
		require.ErrorContains(t, err, "No account")
		_, _, err = b.herald(t, "admin", "reset-two-factor", "--email", "mia@acme.example", "--tenant", "acme")
		require.ErrorContains(t, err, "has no second factor", "the tenant's account is found")
	})

	t.Run("NothingStoredByFailures", func(t *testing.T) {
		// Only the one tenant and the two users from above exist.
		out := b.mustHerald(t, "admin", "create-tenant", "--slug", "x1", "--name", "Now valid")
		require.Len(t, strings.TrimSpace(out), 36, "the slug of a failed create is still free")
	})
}

func TestRun_EnsureOperatorAndDemo(t *testing.T) {
	t.Parallel()
	b := setup(t)

	out := b.mustHerald(t, "admin", "ensure-operator")
	require.Regexp(t, `^operator admin: admin@herald.local  password: \S{16}\n$`, out)
	require.Equal(t, out, b.mustHerald(t, "admin", "ensure-operator"), "a second run shows the same credentials and creates nothing")

	demo := b.mustHerald(t, "demo", "--if-missing")
	require.Contains(t, demo, "demo tenant: demo")
	require.Contains(t, demo, "manager: manager@demo.herald.local")
	require.Contains(t, demo, "support: support@demo.herald.local")
	key := regexp.MustCompile(`api key: (hk_\S+)`).FindStringSubmatch(demo)
	require.NotNil(t, key, demo)
	require.True(t, strings.HasSuffix(demo, "\nexport KEY="+key[1]+"\n"), "the key as a shell export is the last line, got %q", demo)
	require.Equal(t, demo, b.mustHerald(t, "demo", "--if-missing"), "a later start shows the same credentials")
	_, _, err := b.herald(t, "demo")
	require.ErrorContains(t, err, "exists already")

	t.Run("DemoKeyScopes", func(t *testing.T) {
		// What the README's examples do with $KEY: send, read and manage.
		// Not approve: the key that submits an incident may not decide it.
		pool, err := pgxpool.New(context.Background(), b.env["DATABASE_URL"])
		require.NoError(t, err)
		d := db.New(pool)
		defer d.Close()
		k, err := d.Store().APIKeyByHash(context.Background(), app.HashAPIKey(key[1]))
		require.NoError(t, err)
		require.Equal(t, app.StringList{app.ScopeSend, app.ScopeRead, app.ScopeManage}, k.Scopes)
	})

	t.Run("KeptFileWithoutExport", func(t *testing.T) {
		// A file kept before the export line existed.
		credFile := filepath.Join(b.env["HERALD_DATA_DIR"], "demo.txt")
		old := strings.SplitAfter(demo, "api key: "+key[1]+"\n")[0]
		require.NoError(t, os.WriteFile(credFile, []byte(old), 0o600))
		require.Equal(t, demo, b.mustHerald(t, "demo", "--if-missing"))
	})
	t.Run("KeptFileMissing", func(t *testing.T) {
		require.NoError(t, os.Remove(filepath.Join(b.env["HERALD_DATA_DIR"], "demo.txt")))
		out := b.mustHerald(t, "demo", "--if-missing")
		require.Regexp(t, `\nexport KEY=hk_[A-Z2-7]{26}\n$`, out, "a new key, since the old secret is lost")
		require.NotContains(t, out, key[1])
		require.Equal(t, out, b.mustHerald(t, "demo", "--if-missing"), "and kept for the next start")
	})

	b.env["HERALD_ADMIN_EMAIL"], b.env["HERALD_ADMIN_PASSWORD"] = "root@ops.example", "a long admin password"
	require.Contains(t, b.mustHerald(t, "admin", "ensure-operator"), "operator admin created: root@ops.example")
}

func TestRun_ServeAndGracefulShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	freeAddr := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return ln.Addr().String()
	}

	// A port found free can be taken by a parallel test before serve binds
	// it; serve then stops at once with EADDRINUSE, and the test starts it
	// again on fresh ports. Any other stop fails the test.
	var (
		addr, metricsAddr string
		ctx               context.Context
		cancel            context.CancelFunc
		done              chan error
		status            string
	)
	giveUp := time.After(dbtest.HangGuard)
	for attempt, ready := 1, false; !ready; attempt++ {
		addr, metricsAddr = freeAddr(), freeAddr()
		b.env["HERALD_ADDR"] = addr
		b.env["HERALD_METRICS_ADDR"] = metricsAddr
		ctx, cancel = context.WithCancel(context.Background())
		done = make(chan error, 1)
		go func(ctx context.Context, done chan<- error) {
			var stdout, stderr bytes.Buffer
			done <- run(ctx, []string{"serve"}, b.getenv, &stdout, &stderr)
		}(ctx, done)

		// Wait until serve is ready, or has stopped: then its error says
		// why. Readiness is asked again on each tick; serve stopping is a
		// signal.
		tick := time.NewTicker(50 * time.Millisecond)
	wait:
		for {
			if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
				var r struct{ Status string }
				_ = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				status, ready = r.Status, resp.StatusCode == http.StatusOK
			}
			if ready {
				break
			}
			select {
			case err := <-done:
				cancel()
				if errors.Is(err, syscall.EADDRINUSE) && attempt < 5 {
					break wait
				}
				t.Fatalf("serve stopped before it was ready: %v", err)
			case <-giveUp:
				t.Fatalf("serve did not become ready (last status %q)", status)
			case <-tick.C:
			}
		}
		tick.Stop()
	}
	defer cancel()
	require.Equal(t, "healthy", status)

	// Metrics are on their own listener, not on the public one.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(metrics), "herald_http_requests_total")
	resp, err = http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(dbtest.HangGuard):
		t.Fatal("serve did not stop after its context ended")
	}
	_, err = http.Get("http://" + addr + "/healthz")
	require.Error(t, err, "the listener is closed after shutdown")
}

func TestRun_ServeRefusesUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	b := &testBundle{env: map[string]string{
		"DATABASE_URL":     dbtest.URL(dbtest.CreateEmptyDatabase(t)),
		"HERALD_DATA_DIR":  t.TempDir(),
		"HERALD_LOG_LEVEL": "warn",
		"HERALD_ADDR":      "127.0.0.1:0",
	}}
	_, _, err := b.herald(t, "serve")
	require.ErrorContains(t, err, "run `herald migrate` first")
}

func TestRun_ServeStopsWhenTheMetricsPortIsTaken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	b.env["HERALD_ADDR"] = "127.0.0.1:0"
	b.env["HERALD_METRICS_ADDR"] = taken.Addr().String()
	_, _, err = b.herald(t, "serve")
	require.ErrorIs(t, err, syscall.EADDRINUSE)
	require.ErrorContains(t, err, "HERALD_METRICS_ADDR "+taken.Addr().String())
}
