package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Health statuses, as monitoring systems and load balancers read them.
const (
	Healthy   = "healthy"
	Degraded  = "degraded"
	Unhealthy = "unhealthy"
)

// QueueState is what the health check reads from River's tables.
type QueueState struct {
	// Available counts jobs ready to run now.
	Available int `json:"available"`
	// OldestAvailable is how long the oldest ready job has waited.
	OldestAvailable time.Duration `json:"-"`
	// Paused lists paused queues.
	Paused []string `json:"paused"`
}

// HealthProbe reads the state the health check judges.
type HealthProbe interface {
	Ping(ctx context.Context) error
	QueueState(ctx context.Context) (QueueState, error)
}

// Health judges whether Herald can do its work.
type Health struct {
	Probe HealthProbe
	Now   Clock
	// MaxLag is how long a ready job may wait before Herald counts as
	// degraded (workers down or overloaded); 0 means one minute.
	MaxLag time.Duration
	// Warnings are problems of the deployment found at start (such as row
	// security not applying to Herald's database role). They make Herald
	// degraded and are shown to operators on every console page.
	Warnings []string
	// Credentials, when set, reports the channel accounts whose sends AWS
	// refused for the server's own credentials within its window: they
	// make Herald degraded (see Check).
	Credentials *ServerCredentials
}

// CheckRowSecurity judges the database role Herald connects as. Postgres
// skips row-level security, the tenants' last line of isolation, for
// superusers and BYPASSRLS roles (bypass names which, or is empty): in prod
// Herald refuses to start with such a role; in dev it returns a warning to
// log loudly and report.
func CheckRowSecurity(dev bool, role, bypass string) (warning string, err error) {
	if bypass == "" {
		return "", nil
	}
	msg := fmt.Sprintf("Herald connects to Postgres as %q, a %s role: row-level security does not apply to it, so nothing in the database keeps one tenant's rows from another's queries. "+
		"Connect as a role without SUPERUSER and BYPASSRLS (db/devdb.sh creates one, herald).", role, bypass)
	if !dev {
		return "", errors.New(msg + " Herald does not start in prod with such a role.")
	}
	return msg, nil
}

// CheckSchemaOwner judges the database role Herald's processes connect as
// (owns: it owns Herald's tables, or may act as a role that does). Such a
// role can drop the triggers that guard the audit chain and the message
// status rules, so in prod Herald refuses to start with it; in dev it
// returns a warning to log loudly and report.
func CheckSchemaOwner(dev bool, role string, owns bool) (warning string, err error) {
	if !owns {
		return "", nil
	}
	msg := fmt.Sprintf("Herald connects to Postgres as %q, which owns Herald's tables: it can drop or disable the triggers that guard the audit log and the message status rules. "+
		"Connect web, worker and serve as the runtime role (DATABASE_URL) and run herald migrate as the owner (MIGRATE_DATABASE_URL); see the README's database roles.", role)
	if !dev {
		return "", errors.New(msg + " Herald does not start in prod with such a role.")
	}
	return msg, nil
}

// HealthReport is the answer of /readyz.
type HealthReport struct {
	Status    string         `json:"status"`
	Database  string         `json:"database"`
	River     string         `json:"river"`
	Error     string         `json:"error,omitempty"`
	Timestamp time.Time      `json:"timestamp"`
	Details   map[string]any `json:"details,omitempty"`
}

// Check reports unhealthy when the database does not answer or River's
// tables cannot be read, degraded when ready jobs wait longer than MaxLag,
// a queue is paused or AWS refuses the server's own credentials, and
// healthy otherwise.
//
// Refused server credentials are degraded, not unhealthy: every message of
// the accounts that send with them waits, retried, but a 503 would have
// the load balancer take this process out of service or restart it, which
// fixes nothing, and stop the API, the webhooks and every other channel
// and tenant besides.
func (h *Health) Check(ctx context.Context) HealthReport {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	r := HealthReport{Status: Healthy, Database: "connected", River: "available", Timestamp: h.Now().UTC()}
	if err := h.Probe.Ping(ctx); err != nil {
		r.Status, r.Database, r.River = Unhealthy, "error: "+err.Error(), "unknown"
		r.Error = "Failed to ping database"
		return r
	}
	q, err := h.Probe.QueueState(ctx)
	if err != nil {
		r.Status, r.River = Unhealthy, "error: "+err.Error()
		r.Error = "Failed to read River's job tables (are migrations applied?)"
		return r
	}
	maxLag := h.MaxLag
	if maxLag == 0 {
		maxLag = time.Minute
	}
	r.Details = map[string]any{
		"available_jobs":      q.Available,
		"oldest_wait_seconds": int(q.OldestAvailable.Seconds()),
		"paused_queues":       q.Paused,
	}
	switch {
	case q.OldestAvailable > maxLag:
		r.Status, r.River = Degraded, "lagging"
		r.Error = fmt.Sprintf("Oldest ready job has waited %s (limit %s): workers are down or overloaded", q.OldestAvailable.Round(time.Second), maxLag)
	case len(q.Paused) > 0:
		r.Status, r.River = Degraded, "paused"
		r.Error = fmt.Sprintf("Queues paused: %v", q.Paused)
	}
	h.checkCredentials(ctx, &r)
	if len(h.Warnings) > 0 {
		r.Details["warnings"] = h.Warnings
		if r.Status == Healthy {
			r.Status, r.Error = Degraded, h.Warnings[0]
		}
	}
	return r
}

// checkCredentials adds the accounts refused for the server's credentials
// to the report: how many, since when, and the codes, never which tenants
// (/readyz answers anyone who asks).
func (h *Health) checkCredentials(ctx context.Context, r *HealthReport) {
	if h.Credentials == nil {
		return
	}
	refused, err := h.Credentials.Refusals(ctx)
	if err != nil {
		r.Details["server_credentials"] = map[string]any{"error": err.Error()}
		h.degrade(r, "Failed to read refusals of the server's AWS credentials")
		return
	}
	if len(refused) == 0 {
		return
	}
	codes, providers := []string{}, []string{}
	refusals, first, last := 0, refused[0].FirstAt, refused[0].LastAt
	for _, c := range refused {
		if !slices.Contains(codes, c.Code) {
			codes = append(codes, c.Code)
		}
		if !slices.Contains(providers, c.Provider) {
			providers = append(providers, c.Provider)
		}
		refusals += c.Refusals
		first, last = minTime(first, c.FirstAt), maxTime(last, c.LastAt)
	}
	r.Details["server_credentials"] = map[string]any{
		"status": "refused", "refused_accounts": len(refused), "refusals": refusals,
		"providers": providers, "codes": codes, "since": first.UTC(), "last_refused_at": last.UTC(),
	}
	h.degrade(r, CredentialProblem(refused))
}

// degrade makes a report degraded for reason, after whatever made it so
// already.
func (h *Health) degrade(r *HealthReport, reason string) {
	if r.Status == Healthy {
		r.Status = Degraded
	}
	if r.Error != "" {
		reason = r.Error + "; " + reason
	}
	r.Error = reason
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
