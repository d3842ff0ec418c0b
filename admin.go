// The administration commands: herald admin ... and herald demo, and the
// flag handling they share with bench.

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
)

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
