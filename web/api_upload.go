package web

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// uploadRequest is an upload as posted: its settings, from the query or
// the form's fields, and its file.
type uploadRequest struct {
	in    app.UploadInput
	start bool
	file  io.Reader
	close func()
}

// readUploadRequest reads an upload's settings and opens its file: a
// multipart form's field "file" (the settings being the form's other
// fields), or else the whole body as CSV with the settings in the query.
// The file is read from the body fasthttp holds (for a form, from the
// part it parsed), never copied first. Close it with close.
func readUploadRequest(c *fiber.Ctx) (*uploadRequest, error) {
	fields := map[string][]string{}
	c.Request().URI().QueryArgs().VisitAll(func(k, v []byte) {
		fields[string(k)] = append(fields[string(k)], string(v))
	})
	req := &uploadRequest{close: func() {}}
	mediaType, _, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if mediaType == fiber.MIMEMultipartForm {
		form, err := c.MultipartForm()
		if err != nil {
			return nil, &app.Error{Code: app.EMALFORMED, Reason: "malformed_form", Message: "The multipart form could not be read: " + err.Error() + "."}
		}
		for k, vs := range form.Value {
			fields[k] = append(fields[k], vs...)
		}
		files := form.File["file"]
		if len(files) != 1 {
			return nil, app.Invalid("missing_file", "file", "The form needs one field \"file\" holding the CSV file.")
		}
		f, err := files[0].Open()
		if err != nil {
			return nil, fmt.Errorf("open uploaded file: %w", err)
		}
		req.file, req.close = f, func() { _ = f.Close() }
		fields["filename"] = append(fields["filename"], files[0].Filename)
	} else {
		// The bytes as sent: refuseEncodedBody refused a content coding.
		req.file = bytes.NewReader(c.Request().Body())
	}
	if err := req.settings(fields); err != nil {
		req.close()
		return nil, err
	}
	return req, nil
}

// settings reads the upload's settings from its fields: trigger_event,
// map (lines of column=target), send_at, trip_id and start.
func (r *uploadRequest) settings(fields map[string][]string) error {
	for k, vs := range fields {
		for _, v := range vs {
			if err := app.CheckText(k, v); err != nil {
				return err
			}
		}
	}
	first := func(k string) string {
		if vs := fields[k]; len(vs) > 0 {
			return strings.TrimSpace(vs[0])
		}
		return ""
	}
	r.in = app.UploadInput{TriggerEvent: first("trigger_event"), SendAt: first("send_at"), TripID: first("trip_id"), Filename: first("filename")}
	switch first("start") {
	case "", "false", "0":
	case "true", "1", "on":
		r.start = true
	default:
		return app.Invalid("invalid_start", "start", "start is true or false.")
	}
	if r.in.TriggerEvent == "" {
		return app.Invalid("missing_trigger_event", "trigger_event", "trigger_event is required: the event every row of the list becomes.")
	}
	m, err := parseUploadMapping(fields["map"])
	r.in.Mapping = m
	return err
}

// parseUploadMapping reads map values: lines of column=target.
func parseUploadMapping(values []string) (map[string]string, error) {
	m := map[string]string{}
	for _, v := range values {
		for _, line := range strings.Split(v, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			col, target, ok := strings.Cut(line, "=")
			if !ok || strings.TrimSpace(col) == "" || strings.TrimSpace(target) == "" {
				return nil, app.Invalid("invalid_mapping", "map", "%q is not column=target (such as Mobile=phone, or Notes=- to leave a column out).", line)
			}
			m[strings.TrimSpace(col)] = strings.TrimSpace(target)
		}
	}
	return m, nil
}

// handleAPIUploadCreate stores an upload (201), or answers the same
// upload stored before (200, duplicate); with start=true it starts it.
func (s *Server) handleAPIUploadCreate(c *fiber.Ctx) error {
	req, err := readUploadRequest(c)
	if err != nil {
		return err
	}
	defer req.close()
	key := apiKeyOf(c)
	res, err := s.Uploads.Create(c.UserContext(), key.TenantID, app.UploadActor{Key: key}, req.in, req.file)
	if err != nil {
		return err
	}
	if req.start {
		if res.Upload, err = s.Uploads.Start(c.UserContext(), key.TenantID, res.ID); err != nil {
			return err
		}
	}
	status := fiber.StatusCreated
	if res.Duplicate {
		status = fiber.StatusOK
	}
	c.Location("/api/v1/uploads/" + res.ID.String())
	return c.Status(status).JSON(res)
}

// handleAPIUploadGet returns an upload's progress.
func (s *Server) handleAPIUploadGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, err := s.UploadReader.Progress(c.UserContext(), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(p)
}

// handleAPIUploadStart starts an upload; starting it again changes
// nothing.
func (s *Server) handleAPIUploadStart(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	u, err := s.Uploads.Start(c.UserContext(), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(u)
}

// handleAPIUploadErrors returns an upload's error file as CSV.
func (s *Server) handleAPIUploadErrors(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	return s.sendUploadErrors(c, apiKeyOf(c).TenantID, id)
}

// sendUploadErrors answers an upload's error file: a CSV with one line
// per refused row or failed message.
func (s *Server) sendUploadErrors(c *fiber.Ctx, tenantID, uid uuid.UUID) error {
	fs, err := s.UploadReader.Failures(c.UserContext(), tenantID, uid)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write([]string{"row", "field", "code", "message"})
	for _, f := range fs {
		_ = w.Write([]string{strconv.Itoa(f.Row), f.Field, f.Code, f.Message})
	}
	w.Flush()
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="upload-%s-errors.csv"`, uid))
	return c.Send(buf.Bytes())
}
