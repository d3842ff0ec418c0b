package webtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Logs records the log lines of the services, for tests of what an
// operator reads in the logs: how many lines, at what level, with which
// attributes. The zero value is ready to use; share one between the
// processes of a test to see what they log together.
type Logs struct {
	mu      sync.Mutex
	records []slog.Record
}

// Handler returns a handler that records every line next takes, then
// passes it on.
func (l *Logs) Handler(next slog.Handler) slog.Handler {
	return &recordingHandler{logs: l, next: next}
}

// Lines returns the recorded lines at level whose message contains text,
// in the order logged.
func (l *Logs) Lines(level slog.Level, text string) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.records {
		if r.Level == level && strings.Contains(r.Message, text) {
			out = append(out, r.Clone())
		}
	}
	return out
}

// Attr returns the value of a record's attribute key, as text; empty when
// it has none.
func Attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

type recordingHandler struct {
	logs  *Logs
	next  slog.Handler
	attrs []slog.Attr
}

func (h *recordingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	kept := r.Clone()
	kept.AddAttrs(h.attrs...)
	h.logs.mu.Lock()
	h.logs.records = append(h.logs.records, kept)
	h.logs.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h *recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recordingHandler{logs: h.logs, next: h.next.WithAttrs(attrs), attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *recordingHandler) WithGroup(name string) slog.Handler {
	// Herald's services log no groups; a grouped line is recorded with
	// its attributes flat.
	return &recordingHandler{logs: h.logs, next: h.next.WithGroup(name), attrs: h.attrs}
}

// UseServerAWSCredentials points the default AWS credential chain, which
// SES and SNS accounts without keys of their own send with, at fixed test
// keys in the environment, and at nothing else: no profile, no shared
// files, no instance metadata service. It sets the process's environment,
// so the test may not run in parallel (Go refuses t.Setenv then); the
// environment is restored when the test ends.
func UseServerAWSCredentials(t *testing.T) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAHERALDSERVER0001")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYHERALDSRV")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SESV2", "")
	t.Setenv("AWS_ENDPOINT_URL_SNS", "")
}
