// Command herald is Herald's one binary: the web server, the job workers,
// migrations and the administration commands. This file reads the
// environment and wires the concrete types together; the work happens in
// app, db, jobs and web.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // time zones must resolve in a static binary without /usr/share/zoneinfo

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/bench"
	"github.com/heraldhq/herald/jobs"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `Herald: transactional messaging for booking businesses.

Usage:
  herald serve                 web server and job workers in one process
  herald web                   web server only
  herald worker                job workers only
  herald migrate               apply database migrations (Herald's and River's)
  herald admin create-tenant --slug S --name N [--plan FREE|PRO|ENTERPRISE] [--locale de-DE] [--timezone Europe/Berlin]
  herald admin create-user --email E --password P --role operator|manager|support [--tenant S] [--name N]
  herald admin create-api-key --tenant S --name N
  herald admin ensure-operator  create the first operator admin (from HERALD_ADMIN_EMAIL/PASSWORD, or generated in dev)
  herald demo [--if-missing]   create the demo tenant with a manager, a support user and an API key
  herald bench [--requests N] [--concurrency N] [--rate N] [--duration D] [--tenants N]
                               load test: web and worker processes on a fresh database, figures printed
  herald version

Configuration comes from the environment; see README.md.
`

// usageError marks a mistake in how the command was called; it exits with 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "herald:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run is the whole command, with its inputs passed in so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "herald", version)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	case "serve", "web", "worker", "migrate", "admin", "demo", "bench":
	default:
		fmt.Fprint(stderr, usage)
		return usagef("unknown command %q", cmd)
	}

	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)

	switch cmd {
	case "serve", "web", "worker":
		if len(rest) > 0 {
			return usagef("%s takes no arguments, got %q", cmd, strings.Join(rest, " "))
		}
		return serve(ctx, cfg, log, cmd)
	case "migrate":
		if len(rest) > 0 {
			return usagef("migrate takes no arguments, got %q", strings.Join(rest, " "))
		}
		return migrate(ctx, cfg, log, stdout)
	case "admin":
		return admin(ctx, cfg, log, rest, getenv, stdout, stderr)
	case "bench":
		return runBench(ctx, cfg, rest, stdout, stderr)
	default: // demo
		return demo(ctx, cfg, log, rest, getenv, stdout, stderr)
	}
}

// loadConfig reads the environment and, in dev, fills unset keys with ones
// generated once and kept under the data directory, so that restarts keep
// sessions and stored secrets readable.
func loadConfig(getenv func(string) string) (app.Config, error) {
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		return cfg, err
	}
	if !cfg.Dev() {
		return cfg, nil
	}
	dir := dataDir(getenv)
	if cfg.SecretKey == nil {
		if cfg.SecretKey, err = devKey(dir, "secret.key", 32); err != nil {
			return cfg, fmt.Errorf("HERALD_SECRET_KEY is unset and the dev key could not be kept: %w", err)
		}
	}
	if cfg.SessionKey == nil {
		if cfg.SessionKey, err = devKey(dir, "session.key", 48); err != nil {
			return cfg, fmt.Errorf("HERALD_SESSION_KEY is unset and the dev key could not be kept: %w", err)
		}
	}
	return cfg, nil
}

func dataDir(getenv func(string) string) string {
	if d := getenv("HERALD_DATA_DIR"); d != "" {
		return d
	}
	return ".data"
}

// devKey returns n random bytes kept in dir/name, creating the file on first use.
func devKey(dir, name string, n int) ([]byte, error) {
	path := filepath.Join(dir, name)
	if b, err := os.ReadFile(path); err == nil {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(key) != n {
			return nil, fmt.Errorf("%s is damaged; delete it to generate a new one", path)
		}
		return key, nil
	}
	key := make([]byte, n)
	_, _ = rand.Read(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

func newLogger(cfg app.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs the web server, the workers, or both, until ctx ends; then it
// stops taking requests, lets running jobs finish within the shutdown
// timeout, and closes the pool.
func serve(ctx context.Context, cfg app.Config, log *slog.Logger, role string) error {
	svc, err := wire.Connect(ctx, cfg, log, role)
	if err != nil {
		return err
	}
	defer svc.Close()
	if pending, err := db.Pending(ctx, svc.DB.SQL.DB); err != nil {
		return fmt.Errorf("check migrations: %w", err)
	} else if pending {
		return errors.New("the database schema is not up to date: run `herald migrate` first")
	}
	if cfg.AdminEmail != "" {
		if created, err := svc.Users.EnsureOperator(ctx, app.SystemActor, cfg.AdminEmail, cfg.AdminPassword); err != nil {
			return fmt.Errorf("HERALD_ADMIN_EMAIL: create operator admin: %w", err)
		} else if created {
			log.Info("created operator admin", "email", cfg.AdminEmail)
		}
	}

	if cfg.PprofAddr != "" {
		// The profiler gets its own listener so that it is never on the
		// public port.
		go func() {
			mux := http.NewServeMux()
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
			log.Info("profiler listening", "addr", cfg.PprofAddr)
			log.Warn("profiler stopped", "err", http.ListenAndServe(cfg.PprofAddr, mux))
		}()
	}

	var worker *river.Client[pgx.Tx]
	if role != "web" {
		if worker, err = svc.StartWorkers(ctx, jobs.Config{Workers: cfg.Workers, Periodic: jobs.PeriodicJobs(), Logger: log}); err != nil {
			return err
		}
		log.Info("workers started", "queues", cfg.Workers)
	}

	errc := make(chan error, 1)
	var srv interface{ ShutdownWithContext(context.Context) error }
	if role != "worker" {
		fa := svc.Web(version).App()
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return fmt.Errorf("HERALD_ADDR %s: %w", cfg.Addr, err)
		}
		log.Info("herald is listening", "addr", ln.Addr().String(), "console", cfg.BaseURL.String(), "role", role, "version", version)
		go func() { errc <- fa.Listener(ln) }()
		srv = fa
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if srv != nil {
		if err := srv.ShutdownWithContext(stopCtx); err != nil {
			log.Warn("http shutdown", "err", err)
		}
	}
	if worker != nil {
		jobs.Stop(stopCtx, worker, log)
	}
	log.Info("stopped")
	return nil
}

func migrate(ctx context.Context, cfg app.Config, log *slog.Logger, stdout io.Writer) error {
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{ApplicationName: "migrate", MaxConns: 4})
	if err != nil {
		return err
	}
	defer d.Close()
	res, err := db.Migrate(ctx, d.Pool, d.SQL.DB, log)
	if err != nil {
		return err
	}
	if len(res.Applied) == 0 && len(res.RiverApplied) == 0 {
		fmt.Fprintln(stdout, "database is up to date")
		return nil
	}
	fmt.Fprintf(stdout, "applied %d Herald and %d River migrations\n", len(res.Applied), len(res.RiverApplied))
	return nil
}

// newFlags returns a flag set that reports to stderr and does not exit.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and rejects stray positional arguments and missing
// required flags.
func parseFlags(fs *flag.FlagSet, args []string, required ...string) error {
	if err := fs.Parse(args); err != nil {
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	for _, name := range required {
		if strings.TrimSpace(fs.Lookup(name).Value.String()) == "" {
			return usagef("%s: --%s is required", fs.Name(), name)
		}
	}
	return nil
}

func admin(ctx context.Context, cfg app.Config, log *slog.Logger, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("admin: name a subcommand: create-tenant, create-user, create-api-key, ensure-operator")
	}
	sub, args := args[0], args[1:]
	fs := newFlags("admin "+sub, stderr)
	var parse func() error
	var do func(*wire.Services) error

	switch sub {
	case "create-tenant":
		var in app.TenantInput
		fs.StringVar(&in.Slug, "slug", "", "URL name of the tenant (lowercase letters, digits, hyphens)")
		fs.StringVar(&in.Name, "name", "", "display name")
		fs.StringVar(&in.Plan, "plan", app.PlanFree, "FREE, PRO or ENTERPRISE")
		fs.StringVar(&in.DefaultLocale, "locale", "de-DE", "default locale of the tenant's passengers")
		fs.StringVar(&in.Timezone, "timezone", "Europe/Berlin", "IANA time zone the console shows times in")
		parse = func() error { return parseFlags(fs, args, "slug", "name") }
		do = func(svc *wire.Services) error {
			t, err := svc.Tenants.Create(ctx, app.CLIActor, in)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, t.ID)
			return nil
		}
	case "create-user":
		var in app.UserInput
		fs.StringVar(&in.Email, "email", "", "e-mail address, used to sign in")
		fs.StringVar(&in.Password, "password", "", fmt.Sprintf("password (at least %d characters)", app.MinPasswordLength))
		fs.StringVar(&in.Role, "role", "", "operator, manager or support")
		fs.StringVar(&in.TenantSlug, "tenant", "", "tenant slug (managers and support staff)")
		fs.StringVar(&in.Name, "name", "", "the person's name")
		parse = func() error { return parseFlags(fs, args, "email", "password", "role") }
		do = func(svc *wire.Services) error {
			u, err := svc.Users.Create(ctx, app.CLIActor, in)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, u.ID)
			return nil
		}
	case "create-api-key":
		var slug, name string
		fs.StringVar(&slug, "tenant", "", "tenant slug")
		fs.StringVar(&name, "name", "", "what the key is for (e.g. booking-system)")
		parse = func() error { return parseFlags(fs, args, "tenant", "name") }
		do = func(svc *wire.Services) error {
			t, err := svc.Tenants.BySlug(ctx, slug)
			if err != nil {
				return err
			}
			_, secret, err := svc.APIKeys.Create(ctx, app.CLIActor, t.ID, name)
			if err != nil {
				return err
			}
			// The secret alone, so that scripts can capture it.
			fmt.Fprintln(stdout, secret)
			return nil
		}
	case "ensure-operator":
		parse = func() error { return parseFlags(fs, args) }
		do = func(svc *wire.Services) error { return ensureOperator(ctx, cfg, svc, getenv, stdout) }
	default:
		return usagef("admin: unknown subcommand %q (create-tenant, create-user, create-api-key, ensure-operator)", sub)
	}

	if err := parse(); err != nil {
		return err
	}
	svc, err := wire.Connect(ctx, cfg, log, "admin")
	if err != nil {
		return err
	}
	defer svc.Close()
	return describe(do(svc))
}

// describe turns app errors into one readable line for the terminal.
func describe(err error) error {
	var e *app.Error
	if errors.As(err, &e) {
		if e.Field != "" {
			return fmt.Errorf("%s (--%s)", e.Message, e.Field)
		}
		return errors.New(e.Message)
	}
	return err
}

// ensureOperator creates the first operator admin: from HERALD_ADMIN_EMAIL
// and HERALD_ADMIN_PASSWORD when set; in dev, when no operator exists, with
// a generated password kept under the data directory and printed.
func ensureOperator(ctx context.Context, cfg app.Config, svc *wire.Services, getenv func(string) string, stdout io.Writer) error {
	if cfg.AdminEmail != "" {
		created, err := svc.Users.EnsureOperator(ctx, app.CLIActor, cfg.AdminEmail, cfg.AdminPassword)
		if err != nil {
			return err
		}
		if created {
			fmt.Fprintf(stdout, "operator admin created: %s (password from HERALD_ADMIN_PASSWORD)\n", cfg.AdminEmail)
		} else {
			fmt.Fprintf(stdout, "operator admin: %s\n", cfg.AdminEmail)
		}
		return nil
	}
	credFile := filepath.Join(dataDir(getenv), "dev-admin.txt")
	n, err := svc.Users.CountOperators(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		if b, err := os.ReadFile(credFile); err == nil {
			fmt.Fprint(stdout, string(b))
		} else {
			fmt.Fprintln(stdout, "an operator admin exists")
		}
		return nil
	}
	if !cfg.Dev() {
		return errors.New("no operator admin exists: set HERALD_ADMIN_EMAIL and HERALD_ADMIN_PASSWORD")
	}
	email, password := "admin@herald.local", strings.ToLower(rand.Text()[:16])
	if _, err := svc.Users.EnsureOperator(ctx, app.CLIActor, email, password); err != nil {
		return err
	}
	text := fmt.Sprintf("operator admin: %s  password: %s\n", email, password)
	if err := os.MkdirAll(filepath.Dir(credFile), 0o755); err == nil {
		_ = os.WriteFile(credFile, []byte(text), 0o600)
	}
	fmt.Fprint(stdout, text)
	return nil
}

// demo creates the demo tenant with a manager, a support user and an API
// key, and prints them. Credentials are kept under the data directory so
// that later starts can show them again.
func demo(ctx context.Context, cfg app.Config, log *slog.Logger, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	ifMissing := fs.Bool("if-missing", false, "do nothing (but show the demo credentials) when the demo tenant exists")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	svc, err := wire.Connect(ctx, cfg, log, "demo")
	if err != nil {
		return err
	}
	defer svc.Close()

	credFile := filepath.Join(dataDir(getenv), "demo.txt")
	if _, err := svc.Tenants.BySlug(ctx, "demo"); err == nil {
		if !*ifMissing {
			return errors.New("the demo tenant exists already")
		}
		if b, err := os.ReadFile(credFile); err == nil {
			fmt.Fprint(stdout, string(b))
		} else {
			fmt.Fprintln(stdout, "demo tenant exists")
		}
		return nil
	} else if app.ErrorCode(err) != app.ENOTFOUND {
		return err
	}

	t, err := svc.Tenants.Create(ctx, app.CLIActor, app.TenantInput{Slug: "demo", Name: "Demo Tours", Plan: app.PlanPro})
	if err != nil {
		return describe(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "demo tenant: %s (%s)\n", t.Slug, t.ID)
	for _, role := range []string{app.RoleManager, app.RoleSupport} {
		email, password := role+"@demo.herald.local", strings.ToLower(rand.Text()[:16])
		if _, err := svc.Users.Create(ctx, app.CLIActor, app.UserInput{
			Email: email, Name: "Demo " + role, Password: password, Role: role, TenantSlug: t.Slug,
		}); err != nil {
			return describe(err)
		}
		fmt.Fprintf(&b, "%s: %s  password: %s\n", role, email, password)
	}
	_, secret, err := svc.APIKeys.Create(ctx, app.CLIActor, t.ID, "demo")
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(&b, "api key: %s\n", secret)
	if err := os.MkdirAll(filepath.Dir(credFile), 0o755); err == nil {
		_ = os.WriteFile(credFile, []byte(b.String()), 0o600)
	}
	fmt.Fprint(stdout, b.String())
	log.Debug("demo tenant created", "tenant", t.ID)
	return nil
}

// runBench runs the load generator against this very binary.
func runBench(ctx context.Context, cfg app.Config, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	bc := bench.Config{DatabaseURL: cfg.DatabaseURL, Out: stdout}
	fs.IntVar(&bc.Tenants, "tenants", 4, "tenants to spread the load over")
	fs.IntVar(&bc.Concurrency, "concurrency", 64, "concurrent HTTP clients in the intake phase")
	fs.IntVar(&bc.Requests, "requests", 20000, "requests in the intake phase")
	fs.IntVar(&bc.Rate, "rate", 200, "events per second in the latency phase")
	fs.DurationVar(&bc.RateDuration, "duration", 15*time.Second, "length of the latency phase")
	fs.BoolVar(&bc.Keep, "keep", false, "keep the benchmark database and logs")
	fs.StringVar(&bc.ProfileDir, "profile", "", "directory for CPU profiles of the web and worker processes")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if bc.Tenants < 1 || bc.Concurrency < 1 || bc.Requests < 1 || bc.Rate < 1 || bc.RateDuration <= 0 {
		return usagef("bench: counts, rate and duration must be positive")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	bc.Binary = exe
	_, err = bench.Run(ctx, bc)
	return err
}
