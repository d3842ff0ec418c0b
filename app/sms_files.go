package app

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"
)

// FilesPlaceholder is the SMS placeholder of a message's files: one short
// link per file (FileLinks), separated by spaces.
const FilesPlaceholder = "files"

// filesPattern matches {{files}} with the spaces before it on its line, so
// that a message without files leaves no stray space behind.
var filesPattern = regexp.MustCompile(`[ \t]*\{\{\s*(?i:files)\s*\}\}`)

// smsFiles renders an SMS template for the addressee with the links of
// their files: where the text has {{files}}, there; otherwise, when the
// message has files, on a line of their own at the end, so that no file
// is dropped silently. The links are in the stored text, so its parts are
// counted with the links at their real length. Without a FileLinks the
// links are left out, and dispatch notes attachments_not_sent.
func (r *Router) smsFiles(e *Event, to Addressee, body string, vars map[string]string) string {
	var links []string
	if r.Files != nil {
		now := r.Now()
		for _, f := range e.Files {
			if f.RecipientIndex == nil || (to.Index >= 0 && *f.RecipientIndex == to.Index) {
				links = append(links, r.Files.URL(f, now))
			}
		}
	}
	return RenderSMSFiles(body, vars, links)
}

// RenderSMSFiles renders an SMS template with vars and the links of the
// message's files (links, in order).
func RenderSMSFiles(body string, vars map[string]string, links []string) string {
	joined := strings.Join(links, " ")
	hasPlaceholder := filesPattern.MatchString(body)
	body = filesPattern.ReplaceAllStringFunc(body, func(m string) string {
		if joined == "" {
			return ""
		}
		// Keep the spaces before the placeholder: they separate the
		// link from the text before it.
		return m[:strings.Index(m, "{")] + joined
	})
	text, _ := Render(body, vars, false)
	if !hasPlaceholder && joined != "" {
		text = strings.TrimRight(text, " \t\n") + "\n" + joined
	}
	return strings.TrimRight(text, " \t\n")
}

// EventFiles are an event's files as routing reads them with the event
// (every recipient's, in order, without their bytes): the links of an
// SMS are made from them, in the transaction that routes, without a
// statement of their own.
type EventFiles []*Attachment

// Only is the one file with the id, for a message limited to it
// (Message.FileID); empty when the event no longer holds it.
func (f EventFiles) Only(id uuid.UUID) EventFiles {
	for _, a := range f {
		if a.ID == id {
			return EventFiles{a}
		}
	}
	return EventFiles{}
}

// Scan implements sql.Scanner: the files come as a JSON array.
func (f *EventFiles) Scan(src any) error {
	var raw []byte
	switch v := src.(type) {
	case nil:
		*f = nil
		return nil
	case string:
		raw = []byte(v)
	case []byte:
		raw = v
	default:
		return fmt.Errorf("event files: cannot scan %T", src)
	}
	return json.Unmarshal(raw, (*[]*Attachment)(f))
}
