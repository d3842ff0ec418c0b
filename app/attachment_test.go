package app_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/app/provider/webhook"
	"github.com/heraldhq/herald/db"
)

// Small files whose bytes sniff as their types.
var (
	pdfBytes = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0}, 40)...)
	icsBytes = []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Herald//EN\r\nBEGIN:VEVENT\r\nUID:1@example.com\r\nDTSTART:20270412T071500Z\r\nSUMMARY:Gardasee\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
)

// fileServer serves files by path and counts the requests of each.
type fileServer struct {
	srv *httptest.Server

	mu     sync.Mutex
	files  map[string][]byte
	status map[string]int
	hits   map[string]int
}

func newFileServer(t *testing.T) *fileServer {
	t.Helper()
	f := &fileServer{files: map[string][]byte{}, status: map[string]int{}, hits: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits[r.URL.Path]++
		body, ok := f.files[r.URL.Path]
		status := f.status[r.URL.Path]
		f.mu.Unlock()
		switch {
		case status != 0:
			w.WriteHeader(status)
		case !ok:
			http.NotFound(w, r)
		default:
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fileServer) put(path string, body []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = body
	return f.srv.URL + path
}

func (f *fileServer) setStatus(path string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[path] = status
}

func (f *fileServer) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// sesRecorder stands in for SES's SendEmail: it keeps each request body
// and answers with the next status (200 with a message id when none).
type sesRecorder struct {
	srv *httptest.Server

	mu       sync.Mutex
	bodies   [][]byte
	statuses []int
}

func newSESRecorder(t *testing.T) *sesRecorder {
	t.Helper()
	r := &sesRecorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, body)
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		n := len(r.bodies)
		r.mu.Unlock()
		if status != http.StatusOK {
			w.Header().Set("X-Amzn-ErrorType", "InternalServiceErrorException")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"message":"internal failure"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"MessageId":"0100018f-ses-%04d"}`, n)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *sesRecorder) requests() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// useSES gives the tenant an ACTIVE SES account aimed at a recorder.
func (b *pipelineBundle) useSES(t *testing.T, tn *app.Tenant) *sesRecorder {
	t.Helper()
	_, _ = b.useAWS(t, tn, app.Email)
	rec := newSESRecorder(t)
	b.svc.Providers["ses"].(*ses.Provider).Endpoint = rec.srv.URL
	return rec
}

// allowLoopbackFiles lets the bundle fetch files from the tests' local
// servers: the guard's test allow-list, which production never sets.
func (b *pipelineBundle) allowLoopbackFiles() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fetcher = webhook.NewFetcher(webhook.Options{AllowPrivate: true, AnyPort: true}, true)
}

func (b *pipelineBundle) files(t *testing.T, m *app.Message) []*app.Attachment {
	t.Helper()
	var fs []*app.Attachment
	require.NoError(t, b.svc.Store.InTenant(b.ctx, m.TenantID, func(tx *db.Tx) (err error) {
		fs, err = tx.MessageFiles(b.ctx, m.TenantID, m.ID, false)
		return err
	}))
	return fs
}

// mimePart is one leaf part of a parsed e-mail.
type mimePart struct {
	contentType, filename string
	body                  []byte
}

// parseRaw parses the raw MIME message of a SendEmail request and returns
// its header and leaf parts in order.
func parseRaw(t *testing.T, body []byte) (mail.Header, []mimePart) {
	t.Helper()
	var in struct {
		Content struct {
			Raw *struct{ Data []byte }
		}
	}
	require.NoError(t, json.Unmarshal(body, &in))
	require.NotNil(t, in.Content.Raw, "a message with files goes as Content.Raw")
	msg, err := mail.ReadMessage(bytes.NewReader(in.Content.Raw.Data))
	require.NoError(t, err)
	var parts []mimePart
	var walk func(contentType string, r io.Reader, disposition, encoding string)
	walk = func(contentType string, r io.Reader, disposition, encoding string) {
		mt, params, err := mime.ParseMediaType(contentType)
		require.NoError(t, err)
		if strings.HasPrefix(mt, "multipart/") {
			mr := multipart.NewReader(r, params["boundary"])
			for {
				p, err := mr.NextRawPart()
				if err == io.EOF {
					return
				}
				require.NoError(t, err)
				walk(p.Header.Get("Content-Type"), p, p.Header.Get("Content-Disposition"), p.Header.Get("Content-Transfer-Encoding"))
			}
		}
		raw, err := io.ReadAll(r)
		require.NoError(t, err)
		part := mimePart{contentType: mt}
		switch encoding {
		case "base64":
			part.body, err = base64.StdEncoding.DecodeString(strings.NewReplacer("\r", "", "\n", "").Replace(string(raw)))
			require.NoError(t, err)
		case "quoted-printable":
			part.body, err = io.ReadAll(quotedprintable.NewReader(bytes.NewReader(raw)))
			require.NoError(t, err)
		default:
			part.body = raw
		}
		if disposition != "" {
			d, dp, err := mime.ParseMediaType(disposition)
			require.NoError(t, err)
			require.Equal(t, "attachment", d)
			part.filename = dp["filename"]
		}
		parts = append(parts, part)
	}
	walk(msg.Header.Get("Content-Type"), msg.Body, "", "")
	return msg.Header, parts
}

func attachment(name, contentType string, data []byte) map[string]any {
	return map[string]any{"filename": name, "content_type": contentType, "content": base64.StdEncoding.EncodeToString(data)}
}

func attachmentURL(name, contentType, url string) map[string]any {
	return map[string]any{"filename": name, "content_type": contentType, "url": url}
}

// TestAttachments_Email sends an e-mail with an event's invoice (inline)
// and its passenger's ticket (by URL) through the real SES adapter, and
// reads the MIME message SES received.
func TestAttachments_Email(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	b.allowLoopbackFiles()
	tn := b.tenant(t, "anhang")
	rec := b.useSES(t, tn)
	files := newFileServer(t)
	ticketURL := files.put("/tickets/GARDA-1.pdf", pdfBytes)

	req := booking("evt-files-1", "GARDA-1", "+4915112345678", "EMAIL")
	req["attachments"] = []map[string]any{attachment("Rechnung März.pdf", "application/pdf", pdfBytes[:len(pdfBytes)-1])}
	req["recipients"].([]map[string]any)[0]["attachments"] = []map[string]any{
		attachmentURL("ticket.pdf", "application/pdf", ticketURL+"?signature=abc"),
		attachment("reise.ics", "text/calendar", icsBytes),
	}
	m := b.routeOne(t, tn, req)

	// The first run fetches the ticket and sends nothing; SES's 500 fails
	// the next one, which retries with the stored bytes.
	out, err := b.dispatch(m, 1, 5, &completion{})
	require.NoError(t, err)
	require.Positive(t, out.Snooze)
	require.Empty(t, rec.requests())
	rec.mu.Lock()
	rec.statuses = []int{http.StatusInternalServerError}
	rec.mu.Unlock()
	out, err = b.dispatch(m, 1, 5, &completion{})
	require.NoError(t, err)
	require.NotNil(t, out.Retry)
	sent := b.sendOK(t, m)
	require.Equal(t, 1, files.count("/tickets/GARDA-1.pdf"), "a retry sends the bytes fetched before")

	reqs := rec.requests()
	require.Len(t, reqs, 2)
	header, parts := parseRaw(t, reqs[1])
	require.Equal(t, "anna@example.com", header.Get("To"))
	subject, err := new(mime.WordDecoder).DecodeHeader(header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, sent.Subject, subject)
	require.Len(t, parts, 5)
	require.Equal(t, "text/plain", parts[0].contentType)
	// Text parts travel with CRLF line ends.
	crlf := func(b []byte) string { return strings.ReplaceAll(string(b), "\r\n", "\n") }
	require.Equal(t, "text/html", parts[1].contentType)
	require.Contains(t, crlf(parts[1].body), sent.Body, "the stored body goes in the tenant's layout")
	require.Equal(t, ses.PlainText(crlf(parts[1].body)), crlf(parts[0].body))
	want := []struct {
		name, contentType string
		data              []byte
	}{
		{"Rechnung März.pdf", "application/pdf", pdfBytes[:len(pdfBytes)-1]},
		{"ticket.pdf", "application/pdf", pdfBytes},
		{"reise.ics", "text/calendar", icsBytes},
	}
	for i, w := range want {
		p := parts[2+i]
		require.Equal(t, w.name, p.filename)
		require.Equal(t, w.contentType, p.contentType)
		require.Equal(t, app.SHA256Hex(w.data), app.SHA256Hex(p.body), "bytes of %s", w.name)
	}

	// The timeline's send names each file with its size and hash.
	var detail map[string]any
	for _, e := range b.timeline(t, tn.ID, m.ID) {
		if e.ToStatus != nil && *e.ToStatus == app.MessageSent {
			detail = e.Detail
		}
	}
	require.NotNil(t, detail)
	listed, _ := json.Marshal(detail["attachments"])
	for _, w := range want {
		require.Contains(t, string(listed), app.SHA256Hex(w.data))
	}
	stored := b.files(t, m)
	require.Len(t, stored, 3)
	require.Equal(t, int64(len(pdfBytes)), *stored[1].Size)
}

// TestAttachments_EmailWithoutFiles keeps the simple content for e-mails
// without files.
func TestAttachments_EmailWithoutFiles(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "ohneanhang")
	rec := b.useSES(t, tn)
	m := b.routeOne(t, tn, booking("evt-nofiles", "GARDA-2", "+4915112345678", "EMAIL"))
	b.sendOK(t, m)
	var in struct{ Content struct{ Simple, Raw any } }
	require.NoError(t, json.Unmarshal(rec.requests()[0], &in))
	require.NotNil(t, in.Content.Simple)
	require.Nil(t, in.Content.Raw)
}

// TestAttachments_FetchFailures fails a message whose file by URL gives
// no file, with the reason on the message, and sends nothing.
func TestAttachments_FetchFailures(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		// url returns the file's URL, given the file server.
		url      func(f *fileServer) string
		loopback bool
		reason   string
	}{
		{"NotFound", func(f *fileServer) string { return f.srv.URL + "/missing.pdf" }, true, "404"},
		{"Unreachable", func(f *fileServer) string {
			closed := httptest.NewServer(http.NotFoundHandler())
			closed.Close()
			return closed.URL + "/ticket.pdf"
		}, true, "unreachable"},
		{"TooLarge", func(f *fileServer) string {
			return f.put("/big.pdf", append(pdfBytes, bytes.Repeat([]byte{' '}, app.MaxAttachmentBytes)...))
		}, true, "too large"},
		{"WrongType", func(f *fileServer) string { return f.put("/page.pdf", []byte("<html><body>login</body></html>")) }, true, "text/html"},
		{"Loopback", func(f *fileServer) string { return f.put("/ticket.pdf", pdfBytes) }, false, "loopback"},
		{"MetadataService", func(*fileServer) string { return "http://169.254.169.254/latest/meta-data/" }, false, "metadata"},
		{"PrivateNetwork", func(*fileServer) string { return "https://10.1.2.3/ticket.pdf" }, false, "private network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupPipeline(t, nil)
			if tt.loopback {
				b.allowLoopbackFiles()
			}
			tn := b.tenant(t, "fetch-"+strings.ToLower(tt.name))
			rec := b.useSES(t, tn)
			files := newFileServer(t)
			req := booking("evt-"+tt.name, "GARDA-3", "+4915112345678", "EMAIL")
			req["attachments"] = []map[string]any{attachmentURL("ticket.pdf", "application/pdf", tt.url(files))}
			m := b.routeOne(t, tn, req)

			out, err := b.dispatch(m, 1, 5, &completion{})
			require.NoError(t, err)
			require.Positive(t, out.Snooze)
			out, err = b.dispatch(m, 1, 5, &completion{})
			require.NoError(t, err)
			require.True(t, out.Done)
			failed := b.message(t, tn.ID, m.ID)
			require.Equal(t, app.MessageFailed, failed.Status)
			require.Equal(t, app.ReasonAttachmentUnavailable, *failed.FailedReason)
			last := b.timeline(t, tn.ID, m.ID)
			detail, _ := json.Marshal(last[len(last)-1].Detail)
			require.Contains(t, string(detail), tt.reason)
			require.Contains(t, string(detail), "ticket.pdf")
			require.Empty(t, rec.requests(), "nothing is sent")
		})
	}

	t.Run("ServerErrorRetries", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		b.allowLoopbackFiles()
		tn := b.tenant(t, "fetch-retry")
		rec := b.useSES(t, tn)
		files := newFileServer(t)
		url := files.put("/ticket.pdf", pdfBytes)
		files.setStatus("/ticket.pdf", http.StatusBadGateway)
		req := booking("evt-retry", "GARDA-4", "+4915112345678", "EMAIL")
		req["attachments"] = []map[string]any{attachmentURL("ticket.pdf", "application/pdf", url)}
		m := b.routeOne(t, tn, req)

		out, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.NotNil(t, out.Retry, "a 502 is retried")
		require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status)
		files.setStatus("/ticket.pdf", 0)
		out, err = b.dispatch(m, 2, 5, &completion{})
		require.NoError(t, err)
		require.Positive(t, out.Snooze)
		b.sendOK(t, m)
		require.Len(t, rec.requests(), 1)
	})
}

// TestAttachments_ConcurrentFetch lets two messages of one event fetch
// the event's file at once: the first stored bytes win, and both
// messages send them.
func TestAttachments_ConcurrentFetch(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "fetch-race")
	files := newFileServer(t)
	url := files.put("/ticket.pdf", pdfBytes)
	req := booking("evt-race", "GARDA-5", "+4915112345678", "EMAIL")
	req["recipients"] = append(req["recipients"].([]map[string]any), map[string]any{"name": "Ben Schmidt", "email": "ben@example.com", "locale": "de-DE"})
	req["attachments"] = []map[string]any{attachmentURL("ticket.pdf", "application/pdf", url)}
	ms := b.route(t, tn, req)
	require.Len(t, ms, 2)

	// Each fetch gets different bytes; only one may be stored.
	var n int
	var mu sync.Mutex
	b.mu.Lock()
	b.fetcher = fetchFunc(func() []byte {
		mu.Lock()
		defer mu.Unlock()
		n++
		return append(append([]byte(nil), pdfBytes...), byte('0'+n))
	})
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.dispatch(m, 1, 5, &completion{})
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	a, b2 := b.files(t, ms[0]), b.files(t, ms[1])
	require.Len(t, a, 1)
	require.Equal(t, a[0].ID, b2[0].ID)
	require.NotNil(t, a[0].SHA256)
	require.Equal(t, *a[0].SHA256, *b2[0].SHA256)
}

// fetchFunc is a fetcher that returns what f gives.
type fetchFunc func() []byte

func (f fetchFunc) Fetch(_ context.Context, _ string, _ int64) ([]byte, error) { return f(), nil }

// TestParseNotificationRequest_Attachments refuses every bad file with a
// 422 naming the field, and stores nothing (Submit refuses before its
// transaction).
func TestParseNotificationRequest_Attachments(t *testing.T) {
	t.Parallel()

	request := func(event, recipient []map[string]any) []byte {
		req := booking("evt-bad-file", "GARDA-9", "+4915112345678", "EMAIL")
		req["recipients"] = append(req["recipients"].([]map[string]any), map[string]any{"name": "Ben", "email": "ben@example.com"})
		if event != nil {
			req["attachments"] = event
		}
		if recipient != nil {
			req["recipients"].([]map[string]any)[1]["attachments"] = recipient
		}
		body, err := json.Marshal(req)
		require.NoError(t, err)
		return body
	}
	pdf := func() map[string]any { return attachment("a.pdf", "application/pdf", pdfBytes) }
	with := func(a map[string]any, k string, v any) map[string]any { a[k] = v; return a }
	six := make([]map[string]any, 6)
	for i := range six {
		six[i] = pdf()
	}

	tests := []struct {
		name             string
		event, recipient []map[string]any
		code             string
		reason, field    string
	}{
		{"WrongType", nil, []map[string]any{pdf(), with(pdf(), "content_type", "application/zip")}, app.EINVALID, "unsupported_content_type", "recipients[1].attachments[1].content_type"},
		{"BytesNotTheType", nil, []map[string]any{attachment("a.pdf", "application/pdf", pngBytes)}, app.EINVALID, "content_type_mismatch", "recipients[1].attachments[0].content_type"},
		{"SHA256Mismatch", []map[string]any{with(pdf(), "sha256", strings.Repeat("ab", 32))}, nil, app.EINVALID, "sha256_mismatch", "attachments[0].sha256"},
		{"SHA256NotHex", []map[string]any{with(pdf(), "sha256", "xyz")}, nil, app.EINVALID, "invalid_sha256", "attachments[0].sha256"},
		{"MalformedBase64", []map[string]any{with(pdf(), "content", "JVBERi0x%%%")}, nil, app.EINVALID, "invalid_base64", "attachments[0].content"},
		{"TooManyForOneMessage", []map[string]any{pdf(), pdf(), pdf()}, []map[string]any{pdf(), pdf(), pdf()}, app.EINVALID, "too_many_attachments", "recipients[1].attachments"},
		{"TooManyForTheEvent", six, nil, app.EINVALID, "too_many_attachments", "attachments"},
		{"UrlAndContent", []map[string]any{with(pdf(), "url", "https://files.example.com/a.pdf")}, nil, app.EINVALID, "invalid_attachment", "attachments[0]"},
		{"NotHTTPS", []map[string]any{attachmentURL("a.pdf", "application/pdf", "ftp://files.example.com/a.pdf")}, nil, app.EINVALID, "invalid_attachment_url", "attachments[0].url"},
		{"CredentialsInURL", []map[string]any{attachmentURL("a.pdf", "application/pdf", "https://u:p@files.example.com/a.pdf")}, nil, app.EINVALID, "invalid_attachment_url", "attachments[0].url"},
		{"PathInFilename", []map[string]any{with(pdf(), "filename", "../../etc/passwd")}, nil, app.EINVALID, "invalid_filename", "attachments[0].filename"},
		{"Empty", []map[string]any{attachment("a.pdf", "application/pdf", nil)}, nil, app.EINVALID, "invalid_attachment", "attachments[0]"},
		{"Oversized", []map[string]any{attachment("big.pdf", "application/pdf", append(pdfBytes, bytes.Repeat([]byte{' '}, app.MaxRequestBytes)...))}, nil, app.ETOOLARGE, "payload_too_large", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := app.ParseNotificationRequest(request(tt.event, tt.recipient), testStart, app.BuiltIn)
			require.Error(t, err)
			var e *app.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.code, e.Code, e.Message)
			require.Equal(t, tt.reason, e.Reason, e.Message)
			require.Equal(t, tt.field, e.Field, e.Message)
			require.NotEmpty(t, e.Message)
		})
	}

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()
		req, err := app.ParseNotificationRequest(request(
			[]map[string]any{with(pdf(), "sha256", strings.ToUpper(app.SHA256Hex(pdfBytes))), attachment("pass.pkpass", "application/vnd.apple.pkpass", zipBytes(t))},
			[]map[string]any{attachment("karte.png", "image/png", pngBytes), attachment("reise.ics", "text/calendar; charset=utf-8", icsBytes),
				attachmentURL("ticket.pdf", "application/pdf", "https://files.example.com/t.pdf?sig=1")}), testStart, app.BuiltIn)
		require.NoError(t, err)
		require.Equal(t, "text/calendar", req.Recipients[1].Attachments[1].ContentType)
	})
}

// zipBytes is a small ZIP archive, as a wallet pass is.
func zipBytes(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, err := z.Create("pass.json")
	require.NoError(t, err)
	_, err = w.Write([]byte(`{"formatVersion":1}`))
	require.NoError(t, err)
	require.NoError(t, z.Close())
	return buf.Bytes()
}

// TestAttachments_Retention deletes an event's files with the event, once
// retention pruned its messages.
func TestAttachments_Retention(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "anhang-alt")
	req := booking("evt-old-files", "GARDA-6", "+4915112345678", "EMAIL")
	// A private address: the message fails, so it is finished.
	req["attachments"] = []map[string]any{attachment("a.pdf", "application/pdf", pdfBytes), attachmentURL("t.pdf", "application/pdf", "https://10.0.0.7/t.pdf")}
	m := b.routeOne(t, tn, req)
	_, err := b.dispatch(m, 1, 5, &completion{})
	require.NoError(t, err)
	_, err = b.dispatch(m, 1, 5, &completion{})
	require.NoError(t, err)
	require.Equal(t, app.MessageFailed, b.message(t, tn.ID, m.ID).Status)
	require.Len(t, b.files(t, m), 2)

	b.clock.Advance(100 * 24 * time.Hour)
	res, err := b.svc.Maintenance.Prune(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Messages)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM attachments WHERE tenant_id = $1`, tn.ID))
}
