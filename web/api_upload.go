package web

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// maxUploadField bounds one form field of an upload besides its file.
const maxUploadField = 64 << 10

// uploadRequest is an upload as posted: its settings, from the query or
// the form's fields, and its file, read from the body as it arrives.
type uploadRequest struct {
	in    app.UploadInput
	start bool
	// csrf is the console form's token (its first field).
	csrf string
	file io.Reader
}

// readUploadRequest reads an upload's settings and opens its file: a
// multipart form's field "file" (the fields before it are the settings;
// the file is the form's last field), or else the whole body as CSV with
// the settings in the query. beforeFile runs when the settings are read
// and before a byte of the file is, to refuse a form (its CSRF token)
// without reading on.
func readUploadRequest(c *fiber.Ctx, beforeFile func(*uploadRequest) error) (*uploadRequest, error) {
	fields := map[string][]string{}
	c.Request().URI().QueryArgs().VisitAll(func(k, v []byte) {
		fields[string(k)] = append(fields[string(k)], string(v))
	})
	req := &uploadRequest{}
	mediaType, params, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if mediaType == fiber.MIMEMultipartForm {
		file, name, err := readUploadForm(multipart.NewReader(uploadBody(c), params["boundary"]), fields)
		if err != nil {
			return nil, err
		}
		req.file = file
		fields["filename"] = append(fields["filename"], name)
	} else {
		req.file = uploadBody(c)
	}
	if err := req.settings(fields); err != nil {
		return nil, err
	}
	if err := beforeFile(req); err != nil {
		return nil, err
	}
	return req, nil
}

// readUploadForm reads a multipart form's fields into fields up to its
// file, and returns the file's part, positioned at its first byte.
func readUploadForm(mr *multipart.Reader, fields map[string][]string) (io.Reader, string, error) {
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, "", app.Invalid("missing_file", "file", "The form has no field \"file\" with the CSV file (it must be the form's last field).")
		}
		if err != nil {
			var ae *app.Error
			if errors.As(err, &ae) {
				return nil, "", err
			}
			return nil, "", &app.Error{Code: app.EMALFORMED, Reason: "malformed_form", Message: "The multipart form could not be read: " + err.Error() + "."}
		}
		if part.FormName() == "file" {
			return part, part.FileName(), nil
		}
		v, err := io.ReadAll(io.LimitReader(part, maxUploadField+1))
		if err != nil {
			return nil, "", &app.Error{Code: app.EMALFORMED, Reason: "malformed_form", Message: "The multipart form could not be read: " + err.Error() + "."}
		}
		if len(v) > maxUploadField {
			return nil, "", &app.Error{Code: app.ETOOLARGE, Reason: "payload_too_large", Field: part.FormName(),
				Message: fmt.Sprintf("Field %s is longer than %d bytes.", part.FormName(), maxUploadField)}
		}
		fields[part.FormName()] = append(fields[part.FormName()], string(v))
	}
}

// settings reads the upload's settings from its fields: trigger_event,
// map (lines of column=target), send_at, trip_id, start, csrf.
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
	r.csrf = first("csrf")
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
	req, err := readUploadRequest(c, func(*uploadRequest) error { return nil })
	if err != nil {
		return err
	}
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
