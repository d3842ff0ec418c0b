package web

import (
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// Console uploads: the page's list length and preview.
const (
	uploadsListed  = 20
	uploadPreviewN = 10
	// uploadRenderedN is how many of those rows show as rendered messages.
	uploadRenderedN = 3
)

// handleUploads lists the tenant's uploads with the upload form.
func (s *Server) handleUploads(c *fiber.Ctx) error {
	return s.uploadsPage(c, views.UploadForm{}, nil)
}

// uploadsPage renders the uploads page; problems are those of a file just
// refused (the status is then 422).
func (s *Server) uploadsPage(c *fiber.Ctx, form views.UploadForm, problems []*app.Error) error {
	t := tenantOf(c)
	list, err := s.UploadReader.List(c.UserContext(), t.ID, uploadsListed)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		c.Status(fiber.StatusUnprocessableEntity)
	}
	return s.render(c, views.UploadsPage(s.page(c, "Uploads"), views.UploadsProps{
		Base: tenantPath(c, ""), Events: registryNames(), Form: form, Problems: problems, Uploads: list,
		CanUpload: userOf(c).Can(app.PermManageSchedules),
	}))
}

// handleUploadCreate checks and stores an uploaded file. A refused file
// shows every problem on the uploads page; a stored one its own page, with
// the first rows and the start button.
func (s *Server) handleUploadCreate(c *fiber.Ctx) error {
	req, err := readUploadRequest(c)
	if code := app.ErrorCode(err); code == app.EINTERNAL || code == app.EUNAVAILABLE {
		return err
	} else if err != nil {
		return s.uploadsPage(c, views.UploadForm{}, uploadProblems(err))
	}
	defer req.close()
	form := views.UploadForm{TriggerEvent: req.in.TriggerEvent, SendAt: req.in.SendAt, TripID: req.in.TripID}
	for col, target := range req.in.Mapping {
		form.Map += col + "=" + target + "\n"
	}
	u, t := userOf(c), tenantOf(c)
	res, err := s.Uploads.Create(c.UserContext(), t.ID, app.UploadActor{UserID: &u.ID}, req.in, req.file)
	if err != nil {
		if code := app.ErrorCode(err); code == app.EINTERNAL || code == app.EUNAVAILABLE {
			return err
		}
		return s.uploadsPage(c, form, uploadProblems(err))
	}
	if res.Duplicate {
		s.flash(c, "info", "This file was uploaded before with the same settings: this is that upload, and nothing is sent twice.")
	}
	return c.Redirect(tenantPath(c, "/uploads/"+res.ID.String()), fiber.StatusSeeOther)
}

// uploadProblems lists an upload's problems: the error's details, or the
// error itself.
func uploadProblems(err error) []*app.Error {
	if ds := app.ErrorDetails(err); len(ds) > 0 {
		return ds
	}
	return []*app.Error{{Code: app.ErrorCode(err), Reason: app.ErrorReason(err), Field: app.ErrorField(err), Message: app.ErrorMessage(err)}}
}

// handleUploadShow shows an upload's progress, and its first rows while
// it waits for its start.
func (s *Server) handleUploadShow(c *fiber.Ctx) error {
	id, err := uploadParam(c)
	if err != nil {
		return err
	}
	t := tenantOf(c)
	p, err := s.UploadReader.Progress(c.UserContext(), t.ID, id)
	if err != nil {
		return err
	}
	props := views.UploadProps{Base: tenantPath(c, ""), Progress: p, CanStart: userOf(c).Can(app.PermManageSchedules)}
	if p.Status == app.UploadReady {
		if props.Preview, err = s.UploadReader.Preview(c.UserContext(), t.ID, id, uploadPreviewN); err != nil {
			return err
		}
		if def, ok, _ := s.Events.Known(c.UserContext(), t.ID, p.TriggerEvent); ok {
			props.Variables = slices.Clone(def.Variables)
		}
		rows := props.Preview[:min(len(props.Preview), uploadRenderedN)]
		if props.Rendered, err = s.Schedules.PreviewRequests(c.UserContext(), userOf(c), t.ID, rows, 1); err != nil {
			return err
		}
	}
	return s.render(c, views.UploadPage(s.page(c, "Upload"), props))
}

// handleUploadStart starts an upload; starting it again changes nothing.
func (s *Server) handleUploadStart(c *fiber.Ctx) error {
	id, err := uploadParam(c)
	if err != nil {
		return err
	}
	u, err := s.Uploads.Start(c.UserContext(), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	if u.Status != app.UploadReady {
		s.flash(c, "success", "Sending started: the rows become notifications in file order.")
	}
	return c.Redirect(tenantPath(c, "/uploads/"+id.String()), fiber.StatusSeeOther)
}

// handleUploadErrors downloads an upload's error file.
func (s *Server) handleUploadErrors(c *fiber.Ctx) error {
	id, err := uploadParam(c)
	if err != nil {
		return err
	}
	return s.sendUploadErrors(c, tenantOf(c).ID, id)
}

// uploadParam reads the :id of an upload route.
func uploadParam(c *fiber.Ctx) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return uuid.Nil, fiber.ErrNotFound
	}
	return id, nil
}
