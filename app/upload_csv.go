package app

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds of an upload.
const (
	// MaxUploadRows is the most rows an upload holds, the header not
	// counted.
	MaxUploadRows = 100000
	// MaxUploadBytes bounds an upload's file: 100,000 rows of a passenger
	// list fit with room to spare.
	MaxUploadBytes = 16 << 20
	// MaxUploadProblems is the most problems one answer lists; the last
	// says how many more there were.
	MaxUploadProblems = 1000
)

// uploadFile is a CSV file as read: its header (row 0), its rows (row n
// at index n-1) and the sha256 of its bytes.
type uploadFile struct {
	header []string
	rows   [][]string
	sum    []byte
}

// readUploadCSV reads a CSV file of UTF-8 text, with a comma or a
// semicolon between fields (whichever the header line has more of; a
// spreadsheet saved in a German locale uses semicolons), with or without a
// byte order mark. Every row must have the header's number of fields and
// be UTF-8; a row past MaxUploadRows ends the reading at once (ETOOLARGE),
// as does a quote that never closes (EMALFORMED). The other problems are
// all returned, by row.
func readUploadCSV(r io.Reader) (*uploadFile, problems, error) {
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(r, h), 64<<10)
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.Comma = separatorOf(br)
	f := &uploadFile{}
	var p problems
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, csv.ErrFieldCount) {
			return nil, nil, malformedCSV(n, err)
		}
		if n > MaxUploadRows {
			return nil, nil, &Error{Code: ETOOLARGE, Reason: "too_many_rows", Field: "file",
				Message: fmt.Sprintf("The file has more than %d rows after its header; split it into several uploads.", MaxUploadRows)}
		}
		if err != nil {
			p.add(Invalid("wrong_column_count", rowField(n, ""), "Row %d has %d fields; the header has %d.", n, len(rec), len(f.header)))
		}
		if e := rowText(n, rec); e != nil {
			p.add(e)
		}
		if n == 0 {
			f.header = rec
			continue
		}
		f.rows = append(f.rows, rec)
	}
	// Drain what the reader left (nothing, for a well-formed file), so
	// that the sum is the whole file's.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, nil, malformedCSV(len(f.rows)+1, err)
	}
	if f.header == nil || len(f.rows) == 0 {
		return nil, nil, Invalid("empty_upload", "file", "The file has no rows after its header: the first line names the columns, each further line is one passenger.")
	}
	f.sum = sumOf(h)
	return f, p, nil
}

func sumOf(h hash.Hash) []byte { return h.Sum(nil) }

// separatorOf peeks at the first line and returns the separator it has
// more of: a semicolon, or a comma (also when it has neither).
func separatorOf(br *bufio.Reader) rune {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	if bytes.Count(head, []byte(";")) > bytes.Count(head, []byte(",")) {
		return ';'
	}
	return ','
}

// malformedCSV is the error of a file the CSV reader cannot read past.
func malformedCSV(n int, err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		// The body's own bound (a file past its size).
		return ae
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &Error{Code: EMALFORMED, Reason: "malformed_csv", Field: rowField(n, ""),
			Message: fmt.Sprintf("The file is not valid CSV at line %d, column %d (%s): a quoted field must end with a quote before the next separator.", pe.Line, pe.Column, pe.Err)}
	}
	return &Error{Code: EMALFORMED, Reason: "malformed_csv", Message: fmt.Sprintf("The file could not be read to its end: %v.", err)}
}

// rowText refuses a row that is not UTF-8 or has a NUL character.
func rowText(n int, rec []string) *Error {
	for _, v := range rec {
		if !utf8.ValidString(v) {
			return Invalid("invalid_encoding", rowField(n, ""),
				"Row %d is not UTF-8 text: save the file as \"CSV UTF-8\" (a spreadsheet's other CSV formats write umlauts and accents in an older encoding).", n)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return Invalid("invalid_text", rowField(n, ""), "Row %d contains a NUL character.", n)
		}
	}
	return nil
}

// rowField names a row, or a field of it, as problems name them: rows
// are numbered as in the file, the header being row 0.
func rowField(n int, field string) string {
	if field == "" {
		return fmt.Sprintf("rows[%d]", n)
	}
	return fmt.Sprintf("rows[%d].%s", n, field)
}

// Targets an upload's columns map to besides the event's variables.
var uploadRecipientFields = []string{"name", "phone", "email", "locale", "timezone", "passenger_profile_id"}

// uploadBookingField is the column that names a row's booking.
const uploadBookingField = "booking_id"

// uploadIgnore maps a column to nothing.
const uploadIgnore = "-"

// uploadColumns resolves each column of the header to its target: the
// mapping's, or the column's own name when it is a target (case and
// spaces aside). Every column must map to something (or to "-"), every
// mapping must name a column and a target, and each of the event's
// variables and an address must come from some column.
func uploadColumns(header []string, mapping map[string]string, def *EventDef) ([]string, problems) {
	var p problems
	targets := append(append(slices.Clone(uploadRecipientFields), uploadBookingField), def.Variables...)
	out := make([]string, len(header))
	for i, h := range header {
		h = strings.TrimSpace(h)
		t, mapped := mapping[h]
		if !mapped {
			t = strings.ReplaceAll(strings.ToLower(h), " ", "_")
		}
		t = strings.TrimSpace(t)
		switch {
		case t == uploadIgnore:
		case !slices.Contains(targets, t) && mapped:
			p.add(Invalid("unknown_target", "mapping."+h, "Column %q is mapped to %q, which is neither a recipient field (%s, %s) nor a variable of %s (%s).",
				h, t, strings.Join(uploadRecipientFields, ", "), uploadBookingField, def.Name, strings.Join(def.Variables, ", ")))
		case !slices.Contains(targets, t):
			p.add(Invalid("unknown_column", "columns."+h, "Column %q is neither a recipient field (%s, %s) nor a variable of %s (%s): map it to one, or to - to leave it out.",
				h, strings.Join(uploadRecipientFields, ", "), uploadBookingField, def.Name, strings.Join(def.Variables, ", ")))
		case slices.Contains(out[:i], t):
			p.add(Invalid("duplicate_target", "columns."+h, "Column %q gives %s, which an earlier column gives already.", h, t))
		default:
			out[i] = t
			continue
		}
		out[i] = uploadIgnore
	}
	for col := range mapping {
		if !slices.ContainsFunc(header, func(h string) bool { return strings.TrimSpace(h) == col }) {
			p.add(Invalid("unknown_column", "mapping."+col, "The mapping names column %q, which the file does not have (its columns: %s).", col, strings.Join(header, ", ")))
		}
	}
	p = append(p, missingColumns(out, def)...)
	return out, p
}

// missingColumns names the variables no column gives (a passenger's name
// gives passenger_name), and a list with neither phones nor e-mails.
func missingColumns(cols []string, def *EventDef) problems {
	var p problems
	for _, v := range def.Variables {
		if slices.Contains(cols, v) || (v == "passenger_name" && slices.Contains(cols, "name")) {
			continue
		}
		p.add(Invalid("missing_variable", "columns."+v, "No column gives %s, which %s requires: add a column %s, or map one to it.", v, def.Name, v))
	}
	if !slices.Contains(cols, "phone") && !slices.Contains(cols, "email") {
		p.add(Invalid("no_address", "columns", "No column gives a phone number or an e-mail address: add a column phone or email, or map one to it."))
	}
	return p
}
