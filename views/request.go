package views

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// RequestListView is the Requests page: the filters as typed, what was
// wrong with them, and one page of rejected API requests.
type RequestListView struct {
	Base     string
	Requests []*app.APIRejection
	Pager    Pager
	Input    console.RejectionFilterInput
	Errs     map[string]string
	Filtered bool
}

// RequestDetailView is one rejected request's page; Back returns to the
// list as it was filtered.
type RequestDetailView struct {
	Base    string
	Request *app.APIRejection
	Back    string
}

// EventPageView is one event's page.
type EventPageView struct {
	Base string
	View *console.EventView
	// CanTemplates links templates to their editor.
	CanTemplates bool
}

func reqPath(base string, id uuid.UUID) string { return base + "/requests/" + id.String() }

// reqStatusOptions are the status filter's choices.
func reqStatusOptions() []string {
	return []string{"4xx", "400", "401", "403", "404", "409", "413", "422", "429", "200"}
}

func reqStatusText(status int) string {
	switch status {
	case 200:
		return "200 duplicate"
	}
	return strconv.Itoa(status)
}

func reqTone(status int) string {
	switch {
	case status >= 500 || status == 401 || status == 403:
		return "err"
	case status >= 400:
		return "warn"
	}
	return "neutral"
}

func reqFilterErrors(errs map[string]string) []string {
	var out []string
	for _, k := range []string{"status", "event_id", "cursor"} {
		if e, ok := errs[k]; ok {
			out = append(out, e)
		}
	}
	return out
}

// eventPath is the page of one event.
func eventPath(base string, id uuid.UUID) string { return base + "/events/" + id.String() }

// eventRequestsPath lists the requests that named an event id.
func eventRequestsPath(base, sourceID string) string {
	return base + "/requests?event_id=" + url.QueryEscape(sourceID)
}

func decisionTone(d app.RouteDecision) string {
	switch d.Outcome {
	case app.DecisionQueued:
		return "ok"
	case app.DecisionSkipped:
		return "err"
	}
	return "neutral"
}

func decisionOutcome(d app.RouteDecision) string {
	switch d.Outcome {
	case app.DecisionQueued:
		return "queued"
	case app.DecisionExists:
		return "already sent"
	case app.DecisionSkipped:
		return "skipped"
	}
	return strings.ReplaceAll(d.Outcome, "_", " ")
}

// localePath shows the locales tried, best first: "de-AT → de → en".
func localePath(tried []string) string { return strings.Join(tried, " → ") }

func joinList(ss []string) string { return strings.Join(ss, ", ") }

// reqCap is how many refused requests a tenant keeps, as people write it.
func reqCap() string {
	n := strconv.Itoa(app.DefaultRejectionCap)
	for i := len(n) - 3; i > 0; i -= 3 {
		n = n[:i] + "," + n[i:]
	}
	return n
}

func reqHeading(status int) string {
	if status < 400 {
		return "Repeated request"
	}
	return "Refused request"
}
