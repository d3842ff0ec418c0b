// Command herald is Herald's one binary: the web server, the job workers,
// migrations and the administration commands. This file wires the concrete
// types together (config.go reads the environment, admin.go has the
// administration commands); the work happens in app, db, jobs and web.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
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
  herald help [env]            this text, or every environment variable with its default

Configuration comes from the environment: herald help env lists it.
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
		if len(rest) > 0 && rest[0] == "env" {
			return printEnvHelp(stdout)
		}
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
