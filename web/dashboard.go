package web

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// handleDashboard shows the tenant's dashboard. An unknown range or channel
// falls back to the default view with a notice saying so.
func (s *Server) handleDashboard(c *fiber.Ctx) error {
	p := s.page(c, "Dashboard")
	q := console.DashboardQuery{}
	var err error
	if q.Range, err = console.ParseDashboardRange(c.Query("range")); err != nil {
		p.Flash = append(p.Flash, views.Flash{Kind: "warning", Message: app.ErrorMessage(err) + " Showing the last 24 hours."})
	}
	if raw := c.Query("channel"); raw != "" {
		ch, ok := app.ParseChannel(raw)
		if !ok {
			p.Flash = append(p.Flash, views.Flash{Kind: "warning", Message: "There is no channel \"" + raw + "\": choose WHATSAPP, EMAIL, SMS or WEBHOOK. Showing all channels."})
		}
		q.Channel = ch
	}
	// The month's trends and the week's promise are read beside the
	// dashboard's own figures, each in a transaction of its own: the page
	// waits for the slowest of the three rather than for all in turn. The
	// goroutines get no fiber.Ctx, which fiber reuses once the handler
	// returns, and the handler always waits for both.
	ctx, user, tenant := c.UserContext(), userOf(c), tenantOf(c)
	type loadedTrends struct {
		trends *console.Trends
		err    error
	}
	type loadedPromise struct {
		promise *console.Promise
		err     error
	}
	month, week := make(chan loadedTrends, 1), make(chan loadedPromise, 1)
	go func() {
		t, err := s.Trends.Load(ctx, user, tenant)
		month <- loadedTrends{t, err}
	}()
	go func() {
		p, err := s.Promise.Tenant(ctx, user, tenant)
		week <- loadedPromise{p, err}
	}()
	d, err := s.Dashboards.Load(ctx, user, tenant, q)
	trends, promise := <-month, <-week
	if err != nil {
		return err
	}
	v := views.DashboardView{
		D: d, Chart: views.NewChart(d), Path: tenantPath(c, "/"),
		FailedHref:    tenantPath(c, "/messages?status=FAILED"),
		StaleHref:     tenantPath(c, "/messages?stale=1"),
		QueuedHref:    tenantPath(c, "/messages?status=QUEUED"),
		ScheduledHref: tenantPath(c, "/scheduled"),
		ApprovalsHref: tenantPath(c, "/approvals"),
		CurlExample:   s.curlExample(),
	}
	if d.HasMessages {
		if trends.err != nil {
			return trends.err
		}
		if promise.err != nil {
			return promise.err
		}
		v.Trends = views.NewTrendsView(trends.trends, tenantPath(c, "/messages"))
		v.Promise = promise.promise
	}
	if user.Can(app.PermAPIKeys) {
		v.APIKeysHref = tenantPath(c, "/api-keys")
	}
	if s.Limits != nil && d.HasMessages {
		u, err := s.Limits.Usage(ctx, tenant.ID)
		if err != nil {
			return err
		}
		v.Costs = u.Budgets
	}
	return s.render(c, views.DashboardPage(p, v))
}

// curlExample is a request that submits the registry's sample booking
// confirmation to this Herald. It carries no key: the reader uses their own.
func (s *Server) curlExample() string {
	base := "http://localhost:8080"
	if s.Config.BaseURL != nil {
		base = strings.TrimSuffix(s.Config.BaseURL.String(), "/")
	}
	trigger := "BOOKING_CONFIRMED"
	sample := map[string]any{}
	if def, ok := app.BuiltInEvent(trigger); ok {
		sample = def.Sample
	}
	body, _ := json.MarshalIndent(map[string]any{
		"event_id":      "evt-first-booking",
		"trigger_event": trigger,
		"recipients":    []map[string]any{{"name": "Anna Schmidt", "email": "anna@example.com", "locale": "en"}},
		"context":       sample,
	}, "  ", "  ")
	return "curl -X POST " + base + "/api/v1/notifications \\\n" +
		"  -H \"Authorization: Bearer $HERALD_API_KEY\" \\\n" +
		"  -H \"Content-Type: application/json\" \\\n" +
		"  -d '" + string(body) + "'"
}
