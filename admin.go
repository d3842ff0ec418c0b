// The administration commands: herald admin ... and herald demo, and the
// flag handling every command shares.

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
)

// flagSet is one command's flags. -h and --help print the command's usage
// on stdout; a wrong flag prints it on stderr.
type flagSet struct {
	*flag.FlagSet
	cmd command
	cli cli
}

// newFlags returns the flag set of the command named name (as in commands),
// which neither prints nor exits by itself.
func newFlags(name string, c cli) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	cmd, _ := lookupCommand(name)
	return &flagSet{FlagSet: fs, cmd: cmd, cli: c}
}

// usage prints how the command is called, what it does and its flags.
func (fs *flagSet) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", fs.cmd.synopsis(), strings.ToUpper(fs.cmd.summary[:1])+fs.cmd.summary[1:])
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprint(w, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parse parses args and rejects stray positional arguments and missing
// required flags. Asked for help, it prints the usage and returns
// flag.ErrHelp, which run turns into success.
func (fs *flagSet) parse(args []string, required ...string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.usage(fs.cli.stdout)
		return err
	} else if err != nil {
		fs.usage(fs.cli.stderr)
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

// adminSubcommands names admin's subcommands for its error messages.
const adminSubcommands = "create-tenant, create-user, create-api-key, set-limits, ensure-operator, reset-two-factor"

// printAdminUsage lists admin's subcommands.
func printAdminUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: herald admin <subcommand> [flags]\n\nSubcommands:\n")
	printCommands(w, "admin ")
	fmt.Fprint(w, "\nherald admin <subcommand> --help shows a subcommand's flags.\n")
}

func admin(ctx context.Context, c cli, args []string) error {
	if len(args) == 0 {
		printAdminUsage(c.stderr)
		return usagef("admin: name a subcommand: %s", adminSubcommands)
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "-h", "--help", "-help", "help":
		printAdminUsage(c.stdout)
		return nil
	}
	fs := newFlags("admin "+sub, c)
	var parse func() error
	var do func(app.Config, *wire.Services) error

	switch sub {
	case "create-tenant":
		var in app.TenantInput
		fs.StringVar(&in.Slug, "slug", "", "URL name of the tenant (lowercase letters, digits, hyphens)")
		fs.StringVar(&in.Name, "name", "", "display name")
		fs.StringVar(&in.Plan, "plan", app.PlanFree, "FREE, PRO or ENTERPRISE")
		fs.StringVar(&in.DefaultLocale, "locale", "de-DE", "default locale of the tenant's passengers")
		fs.StringVar(&in.Timezone, "timezone", "Europe/Berlin", "IANA time zone the console shows times in")
		parse = func() error { return fs.parse(args, "slug", "name") }
		do = func(_ app.Config, svc *wire.Services) error {
			t, err := svc.Tenants.Create(ctx, app.CLIActor, in)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, t.ID)
			return nil
		}
	case "create-user":
		var in app.UserInput
		fs.StringVar(&in.Email, "email", "", "e-mail address, used to sign in")
		fs.StringVar(&in.Password, "password", "", fmt.Sprintf("password (at least %d characters)", app.MinPasswordLength))
		fs.StringVar(&in.Role, "role", "", "operator, manager or support")
		fs.StringVar(&in.TenantSlug, "tenant", "", "tenant slug (managers and support staff)")
		fs.StringVar(&in.Name, "name", "", "the person's name")
		parse = func() error { return fs.parse(args, "email", "password", "role") }
		do = func(_ app.Config, svc *wire.Services) error {
			u, err := svc.Users.Create(ctx, app.CLIActor, in)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, u.ID)
			return nil
		}
	case "create-api-key":
		var slug, name, scopes string
		fs.StringVar(&slug, "tenant", "", "tenant slug")
		fs.StringVar(&name, "name", "", "what the key is for (e.g. booking-system)")
		fs.StringVar(&scopes, "scopes", strings.Join(app.DefaultScopes, ","),
			"comma-separated scopes the key grants: "+strings.Join(app.Scopes, ", "))
		parse = func() error { return fs.parse(args, "tenant", "name") }
		do = func(_ app.Config, svc *wire.Services) error {
			list := strings.Split(scopes, ",")
			if strings.TrimSpace(scopes) == "" {
				return usagef("--scopes names no scope; give one or more of %s", strings.Join(app.Scopes, ", "))
			}
			t, err := svc.Tenants.BySlug(ctx, slug)
			if err != nil {
				return err
			}
			_, secret, err := svc.APIKeys.Create(ctx, app.CLIActor, t.ID, name, list...)
			if err != nil {
				return err
			}
			// The secret alone, so that scripts can capture it.
			fmt.Fprintln(c.stdout, secret)
			return nil
		}
	case "reset-two-factor":
		var email, slug string
		fs.StringVar(&email, "email", "", "e-mail address of the account")
		fs.StringVar(&slug, "tenant", "", "tenant slug (empty: the operator account)")
		parse = func() error { return fs.parse(args, "email") }
		do = func(_ app.Config, svc *wire.Services) error {
			if err := svc.Console.TwoFactor.ResetByEmail(ctx, app.CLIActor, email, strings.ToLower(strings.TrimSpace(slug))); err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, "second factors reset (authenticator app, security keys, recovery codes); sessions ended")
			return nil
		}
	case "set-limits":
		var slug string
		var in app.LimitInput
		fs.StringVar(&slug, "tenant", "", "tenant slug")
		fs.StringVar(&in.IntakePerMinute, "intake-per-minute", "", fmt.Sprintf("requests a minute per API key (default %d)", app.DefaultIntakePerMinute))
		fs.StringVar(&in.DailyEmail, "daily-email", "", fmt.Sprintf("e-mails a day (default %d)", app.DefaultDailyCaps[app.Email]))
		fs.StringVar(&in.DailySMS, "daily-sms", "", fmt.Sprintf("SMS a day (default %d)", app.DefaultDailyCaps[app.SMS]))
		fs.StringVar(&in.DailyWhatsApp, "daily-whatsapp", "", fmt.Sprintf("WhatsApp messages a day (default %d)", app.DefaultDailyCaps[app.WhatsApp]))
		fs.StringVar(&in.DailyWebhook, "daily-webhook", "", fmt.Sprintf("webhook messages a day (default %d)", app.DefaultDailyCaps[app.Webhook]))
		fs.StringVar(&in.SMSCountries, "sms-countries", "", "ISO 3166 codes SMS may go to (default the tenant's country and the EU)")
		fs.StringVar(&in.SMSInternationalDaily, "sms-international-daily", "", fmt.Sprintf("SMS a day to numbers abroad (default %d)", app.DefaultSMSInternationalDaily))
		fs.StringVar(&in.SMSRecipientDaily, "sms-recipient-daily", "", fmt.Sprintf("SMS a day to one number (default %d)", app.DefaultSMSRecipientDaily))
		fs.StringVar(&in.MaxSMSParts, "max-sms-parts", "", fmt.Sprintf("longest SMS in parts, 1 to %d (default %d)", app.MaxSMSPartsCeiling, app.DefaultMaxSMSParts))
		parse = func() error { return fs.parse(args, "tenant") }
		do = func(_ app.Config, svc *wire.Services) error {
			t, err := svc.Tenants.BySlug(ctx, slug)
			if err != nil {
				return err
			}
			return svc.Limits.Set(ctx, app.CLIActor, t.ID, in)
		}
	case "ensure-operator":
		parse = func() error { return fs.parse(args) }
		do = func(cfg app.Config, svc *wire.Services) error {
			return ensureOperator(ctx, cfg, svc, c.getenv, c.stdout)
		}
	default:
		printAdminUsage(c.stderr)
		return usagef("admin: unknown subcommand %q (%s)", sub, adminSubcommands)
	}

	if err := parse(); err != nil {
		return err
	}
	cfg, log, err := c.setup()
	if err != nil {
		return err
	}
	svc, err := wire.Connect(ctx, cfg, log, "admin")
	if err != nil {
		return err
	}
	defer svc.Close()
	return describe(do(cfg, svc))
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
// that later starts can show them again. The output ends with the key as a
// shell export, the line the README's curl needs; the dev task runs this
// last before serving so that it stays on screen.
func demo(ctx context.Context, c cli, args []string) error {
	fs := newFlags("demo", c)
	ifMissing := fs.Bool("if-missing", false, "do nothing (but show the demo credentials) when the demo tenant exists")
	if err := fs.parse(args); err != nil {
		return err
	}
	cfg, log, err := c.setup()
	if err != nil {
		return err
	}
	svc, err := wire.Connect(ctx, cfg, log, "demo")
	if err != nil {
		return err
	}
	defer svc.Close()

	credFile := filepath.Join(dataDir(c.getenv), "demo.txt")
	keep := func(text string) {
		if err := os.MkdirAll(filepath.Dir(credFile), 0o755); err == nil {
			_ = os.WriteFile(credFile, []byte(text), 0o600)
		}
	}
	if t, err := svc.Tenants.BySlug(ctx, "demo"); err == nil {
		if !*ifMissing {
			return errors.New("the demo tenant exists already")
		}
		if b, err := os.ReadFile(credFile); err == nil {
			if text, ok := demoCredentials(string(b)); ok {
				fmt.Fprint(c.stdout, text)
				return nil
			}
		}
		if !cfg.Dev() {
			fmt.Fprintln(c.stdout, "demo tenant exists")
			return nil
		}
		// The kept credentials are gone (another data directory, or a
		// file from before), and a key's secret is shown only once: in
		// dev, issue a new key so that the curl in the README works.
		_, secret, err := svc.APIKeys.Create(ctx, app.CLIActor, t.ID, "demo", demoKeyScopes...)
		if err != nil {
			return describe(err)
		}
		text, _ := demoCredentials(fmt.Sprintf("demo tenant: %s (%s)\n"+
			"manager and support users: their passwords were not kept in %s\napi key: %s\n", t.Slug, t.ID, credFile, secret))
		keep(text)
		fmt.Fprint(c.stdout, text)
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
	_, secret, err := svc.APIKeys.Create(ctx, app.CLIActor, t.ID, "demo", demoKeyScopes...)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(&b, "api key: %s\n", secret)
	text, _ := demoCredentials(b.String())
	keep(text)
	fmt.Fprint(c.stdout, text)
	log.Debug("demo tenant created", "tenant", t.ID)
	return nil
}

// demoKeyScopes are the demo key's scopes: what the README's examples do
// with it (send, read, and the management calls). Not approve: the key that
// submits an event awaiting approval may never decide it, so the demo's
// incidents are approved in the console by the demo manager, or with a
// second key that has the approve scope.
var demoKeyScopes = []string{app.ScopeSend, app.ScopeRead, app.ScopeManage}

// demoCredentials returns the kept demo credentials ending, whatever the
// file had, with `export KEY=<the api key line's key>`. ok is false when
// the text names no key.
func demoCredentials(kept string) (text string, ok bool) {
	var b strings.Builder
	var key string
	for line := range strings.Lines(kept) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "export KEY=") || strings.HasPrefix(line, "# ") || line == "" {
			continue
		}
		if k, found := strings.CutPrefix(line, "api key: "); found {
			key = strings.TrimSpace(k)
		}
		b.WriteString(line + "\n")
	}
	if key == "" {
		return kept, false
	}
	// The key has only base32 characters, so it needs no shell quoting.
	fmt.Fprintf(&b, "# for the README's curl, paste into your shell:\nexport KEY=%s\n", key)
	return b.String(), true
}
