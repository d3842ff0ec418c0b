// Command herald is Herald's one binary: the web server, the job workers,
// migrations and the administration commands. This file wires the concrete
// types together (config.go reads the environment, admin.go has the
// administration commands); the work happens in app, db, jobs and web.
package main

import (
	"context"
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
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // time zones must resolve in a static binary without /usr/share/zoneinfo

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/jobs"
	"github.com/heraldhq/herald/web"
)

// version is set at build time with -ldflags "-X main.version=...";
// without it, herald version reports the module version Go stamped in.
var version = "dev"

// command is one of herald's commands as `herald help` lists it and
// `herald <command> --help` explains it.
type command struct {
	name    string // with the subcommand, e.g. "admin create-tenant"
	args    string // the synopsis after the name
	summary string
}

// commands lists every command in the order the usage shows them.
func commands() []command {
	return []command{
		{"serve", "", "web server and job workers in one process"},
		{"web", "", "web server only"},
		{"worker", "", "job workers only"},
		{"migrate", "", "apply database migrations (Herald's and River's)"},
		{"admin create-tenant", "--slug S --name N [--plan FREE|PRO|ENTERPRISE] [--locale de-DE] [--timezone Europe/Berlin]", "create a tenant and print its id"},
		{"admin create-user", "--email E --password P --role operator|manager|support [--tenant S] [--name N]", "create a console user and print its id"},
		{"admin create-api-key", "--tenant S --name N", "create an API key for a tenant and print its secret"},
		{"admin reset-two-factor", "--email E [--tenant S]", "remove an account's second factors: authenticator app, security keys, recovery codes (the operator's without --tenant), and end its sessions, for a lost device or key"},
		{"admin set-limits", "--tenant S [--intake-per-minute N] [--daily-email N] [--daily-sms N] [--daily-whatsapp N] [--daily-webhook N] [--sms-countries DE,AT] [--sms-international-daily N] [--sms-recipient-daily N] [--max-sms-parts N]", "set a tenant's limits at intake (a flag left out: the default)"},
		{"admin ensure-operator", "", "create the first operator admin (from HERALD_ADMIN_EMAIL/PASSWORD, or generated in dev)"},
		{"demo", "[--if-missing]", "create the demo tenant with a manager, a support user and an API key; print them, ending with `export KEY=...`"},
		{"version", "", "the version and the VCS revision herald was built from"},
		{"help", "[env | command]", "this text, every environment variable with its default, or one command's usage"},
	}
}

// lookupCommand finds a command by its name, subcommand included.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// synopsis is how the command is called: `herald <name> <args>`.
func (c command) synopsis() string { return strings.TrimSpace("herald " + c.name + " " + c.args) }

// printCommands lists the commands whose name starts with prefix, with
// their summaries in a column (on the next line after a long synopsis).
func printCommands(w io.Writer, prefix string) {
	const column = 31
	for _, c := range commands() {
		if !strings.HasPrefix(c.name, prefix) {
			continue
		}
		if s := "  " + c.synopsis(); len(s) <= column-2 {
			fmt.Fprintf(w, "%-*s%s\n", column, s, c.summary)
		} else {
			fmt.Fprintf(w, "%s\n%*s%s\n", s, column, "", c.summary)
		}
	}
}

// printUsage prints herald's usage: every command and where the
// configuration is explained.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "Herald: transactional messaging for booking businesses.\n\nUsage:\n")
	printCommands(w, "")
	fmt.Fprint(w, "\nEvery command takes -h or --help.\n"+
		"Configuration comes from the environment: herald help env lists it.\n")
}

// usageError marks a mistake in how the command was called; it exits with 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = buildVersion(version, bi)
	}
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "herald:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// cli is what run hands each command: the environment and the outputs.
type cli struct {
	getenv         func(string) string
	stdout, stderr io.Writer
}

// setup reads the configuration and makes the logger. Commands call it only
// after their arguments parsed, so that --help needs no configuration.
func (c cli) setup() (app.Config, *slog.Logger, error) {
	cfg, err := loadConfig(c.getenv)
	if err != nil {
		return app.Config{}, nil, err
	}
	return cfg, newLogger(cfg, c.stderr), nil
}

// run is the whole command, with its inputs passed in so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	err := runCommand(ctx, cli{getenv: getenv, stdout: stdout, stderr: stderr}, args)
	if errors.Is(err, flag.ErrHelp) {
		// The usage asked for is printed; asking for it is no failure.
		return nil
	}
	return err
}

func runCommand(ctx context.Context, c cli, args []string) error {
	if len(args) == 0 {
		printUsage(c.stderr)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version", "--version", "-v":
		if err := newFlags("version", c).parse(rest); err != nil {
			return err
		}
		bi, _ := debug.ReadBuildInfo()
		fmt.Fprint(c.stdout, versionText(version, bi))
		return nil
	case "help", "--help", "-h":
		switch {
		case len(rest) == 0 || rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help":
			printUsage(c.stdout)
			return nil
		case rest[0] == "env" && len(rest) == 1:
			return printEnvHelp(c.stdout)
		default:
			// herald help admin create-user is herald admin create-user --help.
			return runCommand(ctx, c, append(slices.Clone(rest), "--help"))
		}
	case "serve", "web", "worker", "migrate":
		if err := newFlags(cmd, c).parse(rest); err != nil {
			return err
		}
		cfg, log, err := c.setup()
		if err != nil {
			return err
		}
		if cmd == "migrate" {
			return migrate(ctx, cfg, log, c.stdout)
		}
		return serve(ctx, cfg, log, cmd)
	case "admin":
		return admin(ctx, c, rest)
	case "demo":
		return demo(ctx, c, rest)
	default:
		printUsage(c.stderr)
		return usagef("unknown command %q", cmd)
	}
}

// buildVersion is the version herald reports: the -ldflags one, else the
// module version Go stamped in (a tag or a pseudo-version naming the
// commit), else "dev". bi may be nil.
func buildVersion(ldVersion string, bi *debug.BuildInfo) string {
	if ldVersion != "" && ldVersion != "dev" {
		return ldVersion
	}
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// versionText is what herald version prints: the version (the -ldflags one,
// else the module version Go stamped in), the VCS revision and whether the
// tree had changes, and the Go release. bi may be nil.
func versionText(ldVersion string, bi *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "herald %s\n", buildVersion(ldVersion, bi))
	if bi == nil {
		return b.String()
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "revision %s", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(" with uncommitted changes")
		}
		b.WriteString("\n")
	}
	if bi.GoVersion != "" {
		fmt.Fprintf(&b, "built with %s\n", bi.GoVersion)
	}
	return b.String()
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

	if cfg.MetricsAddr != "" {
		// Metrics get their own listener, in every role, so a scraper reads
		// the workers' too and the public port never shows them.
		// The port is bound before anything starts, so a taken port stops
		// the process with its reason instead of running unobserved.
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("HERALD_METRICS_ADDR %s: %w", cfg.MetricsAddr, err)
		}
		ms := &http.Server{Handler: metricsMux(svc.Registry), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			log.Info("metrics listening", "addr", mln.Addr().String())
			if err := ms.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics listener stopped", "err", err)
			}
		}()
		defer ms.Close()
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
	d, err := db.Open(ctx, cfg.MigrateDatabaseURL, db.Options{ApplicationName: "migrate", MaxConns: 4})
	if err != nil {
		return err
	}
	defer d.Close()
	res, err := db.Migrate(ctx, d.Pool, d.SQL.DB, log, cfg.RuntimeRole())
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

// metricsMux serves /metrics alone, for HERALD_METRICS_ADDR.
func metricsMux(reg *prometheus.Registry) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", web.MetricsHandler(reg))
	return mux
}
