// Package web is Herald's HTTP surface: the console, the JSON API, provider
// webhooks, health and metrics, all on one fiber app. Handlers are thin: they
// parse, call one app service, and render.
package web

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/app/provider/awsnotify"
)

// BodyLimit caps request bodies, uploads' aside (UploadBodyLimit). The
// API's own limit for a notification is smaller (16 KiB) and answered with
// its own error; this one protects the server from anything larger,
// provider webhooks included.
const BodyLimit = 1 << 20

// Server holds what the handlers need; app/wire builds it.
type Server struct {
	Config app.Config
	Log    *slog.Logger
	Health *app.Health
	// Credentials lists the accounts whose sends AWS refuses for the
	// server's own credentials, on the operators' start page.
	Credentials *app.ServerCredentials

	// The API and provider webhooks.
	Intake *app.Intake
	// Events is every tenant's event registry: the built-in events and
	// the tenant's own.
	Events *app.Registry
	// Uploads stores passenger lists and starts them; UploadReader shows
	// their progress, preview and error file.
	Uploads      *app.Uploads
	UploadReader *app.UploadReader
	Messages     *app.Messages
	Receipts     *app.Receipts
	Inbound      *app.Inbound
	// Inbox is the conversations staff read and answer.
	Inbox *app.Inbox
	// Preferences serves the unsubscribe links of optional e-mails.
	Preferences *app.Preferences
	// Acks records acknowledgements by quick-reply button and signed link.
	Acks *app.Acknowledgements
	// Files serves the short links of messages' files.
	Files *app.FileServer
	// PublicLimits throttles the public links (files, unsubscribe) per
	// client address; nil: unlimited.
	PublicLimits *app.PublicLimits
	Hooks        *app.Hooks
	// Deadlines serves the tenant's delivery deadlines, to the API and on
	// the console's settings page.
	Deadlines *console.Deadlines
	// ConfirmWindows serves the tenant's confirmation windows, to the API
	// and on the console's settings page.
	ConfirmWindows *console.ConfirmWindows
	// Brandings serves the tenant's e-mail branding to the API and the
	// previews; BrandingConsole to the console's branding page.
	Brandings       *app.Brandings
	BrandingConsole *console.Brandings
	// Alerts serves the staff-alert settings to the API; AlertConsole to
	// the console's page.
	Alerts       *app.Alerts
	AlertConsole *console.Alerts
	// Callbacks serves the tenant's status callback endpoints to the API;
	// CallbackConsole to the console.
	Callbacks       *app.Callbacks
	CallbackConsole *console.Callbacks
	// Contacts reads and changes contacts, for the API and the console.
	Contacts *app.Contacts
	// MetaTemplates applies Meta's template reviews and serves the
	// account's template page.
	MetaTemplates *app.MetaTemplates
	// NumberHealths records Meta's quality and account updates of
	// WhatsApp numbers; nil ignores them.
	NumberHealths *app.NumberHealths
	// SNSVerifier checks the signatures of Amazon's webhook posts.
	SNSVerifier *awsnotify.Verifier

	// APIKeys authenticates the API and serves the console's key page;
	// Tenants, Users and Templates serve the console as well.
	APIKeys   *console.APIKeys
	Tenants   *console.Tenants
	Users     *console.Users
	Templates *console.Templates

	// The console's other services.
	Sessions *console.Sessions
	// TwoFactor serves the enrolment page, the requirement settings and
	// the resets of a lost second factor.
	TwoFactor  *console.TwoFactor
	Dashboards *console.Dashboards
	// Trends serves the dashboard's month and the template figures.
	Trends *console.TrendReader
	// Promise serves the delivery promise's tables: the dashboard's and
	// the operator's across tenants.
	Promise        *console.PromiseReader
	Queues         *console.Queues
	Accounts       *console.Accounts
	MessageConsole *console.MessageConsole
	Trips          *console.Trips
	ContactConsole *console.ContactConsole
	Schedules      *console.Schedules
	AuditLog       *console.AuditLog
	// Rejections keeps the API's rejected requests; RejectionConsole lists
	// them on the Requests page.
	Rejections       *app.Rejections
	RejectionConsole *console.Rejections
	// Limits holds each API key's token bucket and serves the tenant's
	// limits to the API, the settings page and the operator.
	Limits *app.IntakeLimits
	// Prices is the price table operators edit; routing, budgets and
	// approvals price messages by it.
	Prices *app.Prices
	// MetaTemplateConsole serves a WhatsApp account's Meta template page.
	MetaTemplateConsole *console.MetaTemplates

	// Registry receives the HTTP metrics and serves /metrics.
	Registry *prometheus.Registry
	// OpenAPI is the API's document, served at /api/openapi.json and on the
	// console's reference page; App loads it when it is unset.
	OpenAPI *OpenAPI
	Version string

	metrics       *httpMetrics
	consoleRoutes []ConsoleRoute
	apiRoutes     []APIRoute
}

// App returns the fiber app with every route and middleware in place.
func (s *Server) App() *fiber.App {
	a := fiber.New(fiber.Config{
		AppName:               "herald",
		BodyLimit:             BodyLimit,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           2 * time.Minute,
		DisableStartupMessage: true,
		ErrorHandler:          s.handleError,
		// Behind a proxy, the client's address comes from its header (sign-in
		// throttling counts by it). Only a valid IP address from the header
		// counts; anything else falls back to the peer address, so a
		// malformed header cannot make up a throttling key of its own.
		ProxyHeader:        s.Config.ClientIPHeader,
		EnableIPValidation: true,
		// Values from the request (method, path, headers, parameters) are
		// copies, not views of a buffer the next request on the connection
		// reuses: they outlive handlers as metric labels, log attributes,
		// cache keys and goroutine arguments, and would change under them.
		Immutable: true,
	})
	// BodyLimit above is the default; uploads get their own (body.go).
	limitBodies(a)
	s.metrics = newHTTPMetrics(s.Registry)
	if s.OpenAPI == nil {
		// The document is embedded in the binary, so it fails to load only
		// when it was written wrong; wire.Connect reports that as an error
		// before any server starts.
		doc, err := LoadOpenAPI(OpenAPIFiles, baseURLOf(s.Config))
		if err != nil {
			panic(err)
		}
		s.OpenAPI = doc
	}
	s.routes(a)
	return a
}

// baseURLOf is the deployment's public URL, or "" when none is configured.
func baseURLOf(cfg app.Config) string {
	if cfg.BaseURL == nil {
		return ""
	}
	return cfg.BaseURL.String()
}
