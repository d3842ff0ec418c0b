// Package tool is what Herald's two tools share as commands: the load
// generator (db/bench, `go tool task bench`) and the fault-injection suite
// (db/chaos, `go tool task chaos`). Both are programs of their own, not
// subcommands of herald, so that none of their code is in the server's
// binary; they start herald's web and worker processes from a herald binary
// they are given. This package parses their flags the way herald parses its
// own (help on stdout, a mistake exits 2 naming it), finds that binary, and
// reads the configuration herald would read from the environment.
package tool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// DefaultHerald is where `go tool task bench` and `go tool task chaos`
// build the herald binary, relative to the repository's root.
const DefaultHerald = ".data/bin/herald"

// RunFunc is a tool's whole command, with its inputs passed in so that
// tests can call it.
type RunFunc func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// Main runs a tool's command until it returns or SIGINT or SIGTERM cancels
// it, and exits: 0 on success or when help was asked for, 2 on a usage
// error, 1 on any other error, which it prints after the tool's name.
func Main(name string, run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	var ue UsageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
}

// Run runs a tool's command as its task does, in an empty environment,
// and returns what it printed; the tools' tests call it.
func Run(run RunFunc, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	return out.String(), errOut.String(), err
}

// UsageError marks a mistake in how a tool was called; it exits with 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// Flags is a tool's flag set: it neither prints nor exits by itself, -h and
// --help print the usage on stdout, and a wrong flag prints it on stderr.
type Flags struct {
	*flag.FlagSet
	synopsis, summary string
	stdout, stderr    io.Writer
}

// NewFlags returns the flag set of the tool called name; synopsis is how it
// is called and summary what it does, both for its usage.
func NewFlags(name, synopsis, summary string, stdout, stderr io.Writer) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Flags{FlagSet: fs, synopsis: synopsis, summary: summary, stdout: stdout, stderr: stderr}
}

// Herald adds the --herald flag: the herald binary the tool starts.
func (fs *Flags) Herald() *string {
	return fs.String("herald", DefaultHerald, "the herald `binary` to start as web and worker (go tool task "+fs.Name()+" builds it at the default)")
}

// usage prints how the tool is called, what it does and its flags.
func (fs *Flags) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags:\n", fs.synopsis, fs.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// Parse parses args and rejects stray positional arguments. Asked for help,
// it prints the usage and returns flag.ErrHelp, which Main turns into
// success.
func (fs *Flags) Parse(args []string) error {
	if err := fs.FlagSet.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.usage(fs.stdout)
		return err
	} else if err != nil {
		fs.usage(fs.stderr)
		return Usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// Herald is a herald binary a tool starts, and the configuration its
// processes read from the tool's environment.
type Herald struct {
	// Path is the binary's absolute path.
	Path     string
	getenv   func(string) string
	defaults map[string]string
}

// FindHerald checks that path is an executable herald binary and reads its
// configuration table (`herald help env`), so that Env returns what the
// processes the tool starts will read.
func FindHerald(ctx context.Context, path string, getenv func(string) string) (*Herald, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("no herald binary at %s: build one (`go build -o %s .` at the repository's root) or name one with --herald; "+
			"`go tool task bench` and `go tool task chaos` build it at %s", path, path, DefaultHerald)
	}
	cmd := exec.CommandContext(ctx, abs, "help", "env")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s help env: %w: %s", path, err, strings.TrimSpace(errOut.String()))
	}
	defaults, err := parseEnvHelp(out.String())
	if err != nil {
		return nil, fmt.Errorf("%s help env: %w", path, err)
	}
	return &Herald{Path: abs, getenv: getenv, defaults: defaults}, nil
}

// Env returns the value herald's processes read for a variable of its
// configuration: the environment's, or when that is unset or empty the
// default `herald help env` lists ("" for none).
func (h *Herald) Env(name string) string {
	if v := h.getenv(name); v != "" {
		return v
	}
	return h.defaults[name]
}

// OwnerURL is the server a tool creates its database on, as the role that
// owns Herald's schema, as `herald migrate` reads it: MIGRATE_DATABASE_URL,
// else DATABASE_URL when set, else MIGRATE_DATABASE_URL's default (the
// local cluster's owner). The tool's herald processes connect with it too:
// in dev Herald only warns about an owner role.
func (h *Herald) OwnerURL() string {
	for _, name := range []string{"MIGRATE_DATABASE_URL", "DATABASE_URL"} {
		if v := h.getenv(name); v != "" {
			return v
		}
	}
	return h.defaults["MIGRATE_DATABASE_URL"]
}

// parseEnvHelp reads `herald help env`: a header, then a row per variable
// with its name, its default ("-" for none) and its description, in
// columns. No default of a variable a tool reads has a space in it.
func parseEnvHelp(text string) (map[string]string, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "VARIABLE") {
		return nil, errors.New("not the configuration table (VARIABLE DEFAULT DESCRIPTION)")
	}
	defaults := map[string]string{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		if f[1] != "-" {
			defaults[f[0]] = f[1]
		}
	}
	if _, ok := defaults["DATABASE_URL"]; !ok {
		return nil, errors.New("the configuration table lists no default DATABASE_URL")
	}
	return defaults, sc.Err()
}

// AdminExec runs statements on one connection outside a transaction, as
// CREATE DATABASE and DROP DATABASE require.
func AdminExec(ctx context.Context, dsn string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}
