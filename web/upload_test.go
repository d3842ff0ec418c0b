package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// confirmedHeader is a BOOKING_CONFIRMED passenger list's header: every
// variable of the event, a phone and an e-mail column.
const confirmedHeader = "name;phone;email;tour_name;departure_date;booking_reference;deposit_amount"

// confirmedRows is a list of n passengers under confirmedHeader, each
// with their own phone number.
func confirmedRows(n int) string {
	var b strings.Builder
	b.WriteString(confirmedHeader + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Passenger %d;+49151%08d;p%d@example.com;Gardasee;2027-04-12;B-%d;150,00 €\n", i, 10000000+i, i, i)
	}
	return b.String()
}

// uploadAnswer is the API's answer to an upload.
type uploadAnswer struct {
	ID          uuid.UUID
	Status      string
	TotalRows   int `json:"total_rows"`
	StoredRows  int `json:"stored_rows"`
	RefusedRows int `json:"refused_rows"`
	Duplicate   bool
	Messages    app.UploadCounts
	Error       struct {
		Code, Message, Field string
		Details              []struct{ Code, Message, Field string }
	}
}

// postUpload posts a CSV body to /api/v1/uploads with the query and
// decodes the answer.
func postUpload(t *testing.T, h *webtest.Herald, query, csv string) (int, uploadAnswer) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/v1/uploads?"+query, strings.NewReader(csv))
	req.Header.Set("Authorization", "Bearer "+h.Key)
	req.Header.Set("Content-Type", "text/csv")
	do := h.Do
	if !utf8.ValidString(csv) {
		// The document describes a CSV body as text: only the answer is
		// checked.
		do = h.DoGarbage
	}
	resp := do(t, req)
	var out uploadAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// uploadEvents counts the tenant's events made from uploads.
func uploadEvents(h *webtest.Herald) int {
	return h.Count(`SELECT count(*) FROM events WHERE source_event_id LIKE 'upload:%'`)
}

func TestUpload_BadInput(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	q := "trigger_event=BOOKING_CONFIRMED"

	for name, tc := range map[string]struct {
		csv, query    string
		status        int
		code, field   string
		problems      int
		messagePhrase string
	}{
		"MalformedCSV": {csv: confirmedHeader + "\n\"Anna;+4915112345678;a@example.com;G;2027-04-12;B-1;1\n", status: 400, code: "malformed_csv", field: "rows[1]"},
		"BadEncoding": {csv: confirmedHeader + "\nJ\xfcrgen;+4915112345678;j@example.com;G;2027-04-12;B-1;1\n", status: 422, code: "invalid_encoding",
			field: "rows[1]", messagePhrase: "UTF-8"},
		"UnknownColumn": {csv: strings.ReplaceAll(strings.Replace(confirmedRows(2), "deposit_amount", "deposit_amount;seat", 1), "€\n", "€;12A\n"),
			status: 422, code: "unknown_column", field: "columns.seat"},
		"MappingToNothing": {csv: confirmedRows(1), query: "&map=name=nickname", status: 422, code: "unknown_target", field: "mapping.name"},
		"MissingVariable": {csv: strings.ReplaceAll(strings.Replace(confirmedRows(2), ";deposit_amount", "", 1), ";150,00 €", ""), status: 422,
			code: "missing_variable", field: "columns.deposit_amount"},
		"WrongColumnCount": {csv: confirmedRows(1) + "Bob;+4915112345670\n", status: 422, code: "wrong_column_count", field: "rows[2]"},
		"Empty":            {csv: confirmedHeader + "\n", status: 422, code: "empty_upload", field: "file"},
		"UnknownEvent":     {csv: confirmedRows(1), query: "&trigger_event=NOPE", status: 422, code: "unknown_event", field: "trigger_event"},
		"SendAtInPast":     {csv: confirmedRows(1), query: "&send_at=2020-01-01T00:00:00Z", status: 422, code: "send_at_in_past", field: "send_at"},
	} {
		t.Run(name, func(t *testing.T) {
			query := q + tc.query
			if strings.Contains(tc.query, "trigger_event") {
				query = strings.TrimPrefix(tc.query, "&")
			}
			status, out := postUpload(t, h, query, tc.csv)
			require.Equal(t, tc.status, status, "%+v", out.Error)
			require.Equal(t, tc.code, out.Error.Code, out.Error.Message)
			require.Equal(t, tc.field, out.Error.Field)
			require.NotEmpty(t, out.Error.Message)
			if tc.messagePhrase != "" {
				require.Contains(t, out.Error.Message, tc.messagePhrase)
			}
		})
	}

	t.Run("EveryRowProblemListedByRowAndColumn", func(t *testing.T) {
		lines := strings.Split(confirmedRows(20), "\n")
		lines[17] = "Row Seventeen;+49 12;r17@example.com;Gardasee;2027-04-12;B-17;150,00 €"
		lines[3] = "Row Three;+4915112345603;not-an-address;Gardasee;2027-04-12;B-3;150,00 €"
		lines[5] = "Row Five;+4915112345605;r5@example.com;;2027-04-12;B-5;150,00 €"
		status, out := postUpload(t, h, q, strings.Join(lines, "\n"))
		require.Equal(t, 422, status)
		got := map[string]string{}
		for _, d := range out.Error.Details {
			got[d.Field] = d.Code
		}
		require.Equal(t, map[string]string{"rows[3].email": "invalid_email", "rows[5].tour_name": "missing_variable", "rows[17].phone": "invalid_phone"}, got)
		require.Equal(t, "rows[3].email", out.Error.Field, "the first problem is the error itself")
	})

	t.Run("TooManyRows", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("name,phone,tour_name,departure_date,booking_reference,deposit_amount\n")
		for i := 0; i <= app.MaxUploadRows; i++ {
			b.WriteString("A,+4915112345678,G,2027-04-12,B,1\n")
		}
		status, out := postUpload(t, h, q, b.String())
		require.Equal(t, 413, status)
		require.Equal(t, "too_many_rows", out.Error.Code)
		require.Contains(t, out.Error.Message, "100000")
	})

	t.Run("NothingStored", func(t *testing.T) {
		require.Zero(t, h.Count(`SELECT count(*) FROM uploads`))
		require.Zero(t, h.Count(`SELECT count(*) FROM upload_rows`))
		require.Zero(t, uploadEvents(h))
	})
}

func TestUpload_Limits(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) {
		cfg.Quotas[app.PlanPro][app.Email] = 5
	}})
	q := "trigger_event=BOOKING_CONFIRMED"

	t.Run("QuotaForTheWholeUpload", func(t *testing.T) {
		status, out := postUpload(t, h, q, confirmedRows(6))
		require.Equal(t, 429, status)
		require.Equal(t, "quota_exceeded", out.Error.Code)
		require.Contains(t, out.Error.Message, "6 EMAIL")
	})

	t.Run("DayCapForTheWholeUpload", func(t *testing.T) {
		require.NoError(t, h.Services.Limits.Set(h.Ctx, app.CLIActor, h.Tenant.ID, app.LimitInput{DailyWhatsApp: "3", SMSRecipientDaily: "100"}))
		status, out := postUpload(t, h, q+"&map=email=-", confirmedRows(4))
		require.Equal(t, 429, status, "%+v", out.Error)
		require.Equal(t, "daily_limit_exceeded", out.Error.Code)
		require.Zero(t, h.Count(`SELECT count(*) FROM intake_day_counts WHERE tenant_id = $1 AND count > 0`, h.Tenant.ID),
			"the check keeps no count")
	})

	t.Run("WithinLimitsIsStoredReady", func(t *testing.T) {
		status, out := postUpload(t, h, q+"&map=email=-", confirmedRows(3))
		require.Equal(t, 201, status, "%+v", out.Error)
		require.Equal(t, app.UploadReady, out.Status)
		require.Equal(t, 3, out.TotalRows)
		require.Zero(t, uploadEvents(h), "nothing is sent before the start")
	})
}

func TestUpload_ResumeAfterCrash(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) {
		cfg.Quotas[app.PlanPro][app.WhatsApp] = app.Unlimited
	}})
	status, out := postUpload(t, h, "trigger_event=BOOKING_CONFIRMED&map=email=-", confirmedRows(600))
	require.Equal(t, 201, status, "%+v", out.Error)
	svc := h.Services.Uploads
	_, err := svc.Start(h.Ctx, h.Tenant.ID, out.ID)
	require.NoError(t, err)

	require.NoError(t, svc.RunBatch(h.Ctx, h.Tenant.ID, out.ID, 0))
	require.Equal(t, app.UploadBatchSize, uploadEvents(h))
	// The first batch's job again (River ran it twice): its rows are done.
	require.NoError(t, svc.RunBatch(h.Ctx, h.Tenant.ID, out.ID, 0))
	require.Equal(t, app.UploadBatchSize, uploadEvents(h))

	// A crash that lost the cursor but not the events: the batch runs again
	// from the start, and every row's event id finds its event.
	h.OwnerExec(`UPDATE uploads SET cursor_row = 0, stored_rows = 0 WHERE id = $1`, out.ID)
	require.NoError(t, svc.RunBatch(h.Ctx, h.Tenant.ID, out.ID, 0))
	require.Equal(t, app.UploadBatchSize, uploadEvents(h))

	for from := app.UploadBatchSize; from < 600; from += app.UploadBatchSize {
		require.NoError(t, svc.RunBatch(h.Ctx, h.Tenant.ID, out.ID, from))
	}
	p, err := h.Services.UploadReader.Progress(h.Ctx, h.Tenant.ID, out.ID)
	require.NoError(t, err)
	require.Equal(t, app.UploadDone, p.Status)
	require.Equal(t, 600, p.StoredRows)
	require.Equal(t, 600, uploadEvents(h))
	require.Equal(t, 600, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route'`), "one route job per row")
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM events WHERE source_event_id = $1`, fmt.Sprintf("upload:%s:600", out.ID)))
	require.Zero(t, h.Count(`SELECT count(*) FROM upload_rows WHERE upload_id = $1 AND request IS NOT NULL`, out.ID),
		"a finished upload keeps no requests")
}

func TestUpload_StartTwiceIsOnce(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	status, out := postUpload(t, h, "trigger_event=BOOKING_CONFIRMED&map=email=-", confirmedRows(3))
	require.Equal(t, 201, status, "%+v", out.Error)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := h.Services.Uploads.Start(context.Background(), h.Tenant.ID, out.ID)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'upload_batch'`))

	// The API's start of a running upload answers it and adds nothing.
	var u uploadAnswer
	require.Equal(t, 200, h.Request(http.MethodPost, "/api/v1/uploads/"+out.ID.String()+"/start", nil, &u))
	require.Equal(t, app.UploadRunning, u.Status)
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'upload_batch'`))
}

func TestUpload_EndToEnd(t *testing.T) {
	t.Parallel()
	fake := newFakeMeta(t)
	h := webtest.New(t, webtest.Options{Config: func(cfg *app.Config) { cfg.MetaBaseURL = fake.URL }})
	sb := h.ActiveAccount(app.WhatsApp)
	require.NoError(t, h.Services.Accounts.SetStatus(h.Ctx, app.CLIActor, h.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	acct, err := h.Services.Accounts.Create(h.Ctx, app.CLIActor, h.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "1234567890", "waba_id": "WABA"},
		Secrets: map[string]string{"access_token": "EAAG-test-token", "app_secret": "meta-app-secret"},
	})
	require.NoError(t, err)
	h.ApproveMetaDefaults(acct)

	// A spreadsheet's export: byte order mark, semicolons, own column names.
	csv := "\ufeffVorname;Mobil;tour_name;departure_date;booking_reference;deposit_amount;Notiz\n" +
		"Anna;+4915112345001;Gardasee;2027-04-12;B-1;150,00 €;Fenster\n" +
		"Ben;+4915112345002;Gardasee;2027-04-12;B-2;150,00 €;\n" +
		"Cleo;+4915112345003;Gardasee;2027-04-12;B-3;150,00 €;vegan\n"
	query := "trigger_event=BOOKING_CONFIRMED&map=Vorname=name&map=Mobil=phone&map=Notiz=-&start=true"
	status, out := postUpload(t, h, query, csv)
	require.Equal(t, 201, status, "%+v", out.Error)
	require.Equal(t, app.UploadRunning, out.Status)

	var p uploadAnswer
	h.WaitUntil("the upload's messages are sent", func() bool {
		require.Equal(t, 200, h.Request(http.MethodGet, "/api/v1/uploads/"+out.ID.String(), nil, &p))
		return p.Status == app.UploadDone && p.Messages.Sent == 3
	})
	require.Equal(t, 3, p.StoredRows)
	require.Zero(t, p.RefusedRows)
	fake.mu.Lock()
	var to []string
	for _, r := range fake.requests {
		to = append(to, fmt.Sprint(r["to"]))
	}
	fake.mu.Unlock()
	require.ElementsMatch(t, []string{"+4915112345001", "+4915112345002", "+4915112345003"}, to, "Meta got one message per row")

	t.Run("SameFileAgainSendsNothing", func(t *testing.T) {
		status, again := postUpload(t, h, query, csv)
		require.Equal(t, 200, status)
		require.True(t, again.Duplicate)
		require.Equal(t, out.ID, again.ID)
		require.Equal(t, 3, uploadEvents(h))
	})

	t.Run("ErrorFile", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/uploads/"+out.ID.String()+"/errors", nil)
		req.Header.Set("Authorization", "Bearer "+h.Key)
		resp := h.Do(t, req)
		require.Equal(t, 200, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Content-Type"), "text/csv")
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, "row,field,code,message\n", string(body), "no row was refused and no message failed")
	})

	t.Run("AnotherTenantsUploadIsNotFound", func(t *testing.T) {
		globex, err := h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex", Plan: app.PlanPro})
		require.NoError(t, err)
		_, key, err := h.Services.APIKeys.Create(h.Ctx, app.CLIActor, globex.ID, "globex", app.Scopes...)
		require.NoError(t, err)
		require.Equal(t, 404, h.RequestWithKey(key, http.MethodGet, "/api/v1/uploads/"+out.ID.String(), nil, nil))
	})
}

func TestUpload_TripAndApprovals(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{})

	// The list becomes the trip's audience.
	status, out := postUpload(t, h, "trigger_event=BOOKING_CONFIRMED&map=email=-&start=true&trip_id=T-77", confirmedRows(3))
	require.Equal(t, 201, status, "%+v", out.Error)
	h.WaitUntil("the trip's passengers are known", func() bool {
		var p uploadAnswer
		h.Request(http.MethodGet, "/api/v1/uploads/"+out.ID.String(), nil, &p)
		return p.Status == app.UploadDone && p.Messages.Messages >= 3
	})
	var passengers []app.TripPassenger
	require.NoError(t, h.Services.Store.InTenant(h.Ctx, h.Tenant.ID, func(tx *db.Tx) (err error) {
		passengers, err = tx.TripPassengers(h.Ctx, h.Tenant.ID, "T-77")
		return err
	}))
	require.Len(t, passengers, 3)

	// An incident for the trip reaches the list, and waits for approval as
	// ever; so do the rows of an incident list.
	var res struct{ ID, Status string }
	require.Equal(t, 202, h.Request(http.MethodPost, "/api/v1/notifications", map[string]any{
		"event_id": "incident-1", "trigger_event": "INCIDENT_BROADCAST", "audience": map[string]any{"trip_id": "T-77"},
		"context": map[string]any{"tour_name": "Gardasee", "incident_message": "Delay", "operator_phone": "+49 89 1234567"},
	}, &res))
	require.Equal(t, app.EventAwaitingApproval, res.Status)

	incident := "name;phone;tour_name;incident_message;operator_phone\nAnna;+4915112345001;Gardasee;Delay;+49891234567\n"
	status, up := postUpload(t, h, "trigger_event=INCIDENT_BROADCAST&start=true", incident)
	require.Equal(t, 201, status, "%+v", up.Error)
	h.WaitUntil("the incident list is handled", func() bool {
		var p uploadAnswer
		h.Request(http.MethodGet, "/api/v1/uploads/"+up.ID.String(), nil, &p)
		return p.Status == app.UploadDone
	})
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM events WHERE source_event_id = $1 AND status = 'AWAITING_APPROVAL'`, fmt.Sprintf("upload:%s:1", up.ID)))
	require.Zero(t, h.Count(`SELECT count(*) FROM messages m JOIN events e ON e.id = m.event_id WHERE e.source_event_id = $1`, fmt.Sprintf("upload:%s:1", up.ID)))
}

// multipartUpload is a console upload form: the token first, the file last.
func multipartUpload(t *testing.T, csrf string, fields map[string]string, csv string) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	require.NoError(t, w.WriteField("csrf", csrf))
	for k, v := range fields {
		require.NoError(t, w.WriteField(k, v))
	}
	fw, err := w.CreateFormFile("file", "manifest.csv")
	require.NoError(t, err)
	_, err = io.WriteString(fw, csv)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return &buf, w.FormDataContentType()
}

func TestUpload_Console(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	doc := s.page("/t/acme/uploads")
	form := doc.Find(`form[action="/t/acme/uploads"]`)
	require.Equal(t, "multipart/form-data", form.AttrOr("enctype", ""))
	inputs := form.Find("input, select, textarea")
	require.Equal(t, "csrf", inputs.First().AttrOr("name", ""), "the token comes first")
	require.Equal(t, "file", inputs.Last().AttrOr("name", ""), "the file comes last")
	require.Zero(t, form.Find("[placeholder]").Length())

	post := func(csrf string, csv string) *http.Response {
		body, ct := multipartUpload(t, csrf, map[string]string{"trigger_event": "BOOKING_CONFIRMED", "map": "email=-"}, csv)
		req := httptest.NewRequest(http.MethodPost, "/t/acme/uploads", body)
		req.Header.Set("Content-Type", ct)
		return s.do(req)
	}

	t.Run("WithoutTokenIsRefused", func(t *testing.T) {
		resp := post("forged", confirmedRows(2))
		require.Equal(t, 403, resp.StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM uploads`))
	})

	t.Run("ProblemsAreListed", func(t *testing.T) {
		s.page("/t/acme/uploads")
		lines := strings.Split(confirmedRows(3), "\n")
		lines[2] = "Bad;+49 1;x@example.com;Gardasee;2027-04-12;B-2;1,00 €"
		resp := post(s.csrf, strings.Join(lines, "\n"))
		require.Equal(t, 422, resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		require.Contains(t, string(body), "rows[2].phone")
		require.Contains(t, string(body), "invalid_phone")
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
		require.NoError(t, err)
		require.Equal(t, "The file was not stored: 1 problem", text(doc.Find(".upload-problems h2")))
		require.Zero(t, c.Count(`SELECT count(*) FROM uploads`))
	})

	t.Run("PreviewStartAndProgress", func(t *testing.T) {
		s.page("/t/acme/uploads")
		resp := post(s.csrf, confirmedRows(12))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		loc := resp.Header.Get("Location")
		doc := s.page(loc)
		require.Equal(t, 10, doc.Find(".upload-preview tbody tr").Length(), "the first ten rows")
		require.Contains(t, text(doc.Find(".upload-preview tbody tr").First()), "Passenger 1")
		require.Equal(t, "12", text(doc.Find(".upload-total")))
		plans := doc.Find(".upload-rendered .upload-row-plan")
		require.Equal(t, 3, plans.Length(), "the first three rows rendered")
		first := plans.First()
		require.Contains(t, text(first.Find("h3").First()), "Row 1")
		require.Positive(t, first.Find(`.planned[data-role=send]`).Length(), "row 1 sends: %s", text(first))
		body := text(first.Find(".planned[data-role=send] pre.body"))
		require.Contains(t, body, "Passenger 1", "the row's values filled into the tenant's template")
		require.Contains(t, body, "B-1")
		require.NotContains(t, body, "{{", "no placeholder left unfilled")
		require.Contains(t, text(plans.Eq(2)), "Passenger 3")
		require.Zero(t, c.Count(`SELECT count(*) FROM messages`), "a preview stores nothing")
		require.Zero(t, c.Count(`SELECT count(*) FROM events`))

		start := s.post(loc+"/start", url.Values{})
		require.Equal(t, http.StatusSeeOther, start.StatusCode)
		doc = s.page(loc)
		require.Contains(t, text(doc.Find(".upload-status")), "RUNNING")
		require.Zero(t, doc.Find(".upload-preview").Length())
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM river_job WHERE kind = 'upload_batch'`))

		errs, r := s.get(loc + "/errors")
		require.Equal(t, 200, r.StatusCode)
		require.Contains(t, errs.Text(), "row,field,code,message")
	})

	t.Run("SupportMayNotUpload", func(t *testing.T) {
		sup := c.signIn(asSupport)
		doc := sup.page("/t/acme/uploads")
		require.Zero(t, doc.Find(`form[action="/t/acme/uploads"]`).Length())
	})
}
