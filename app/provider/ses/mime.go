package ses

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/heraldhq/herald/app/provider"
)

// A message with files goes as SendEmail's Content.Raw: the same message
// as Content.Simple would make (its headers, and its HTML with the
// plain-text alternative), in a multipart/mixed with one base64 part per
// file. Messages without files keep Content.Simple, where SES builds the
// MIME itself: one way of rendering (input), two ways of packing it.

// withFiles replaces in's simple content with the raw MIME message of the
// same headers and bodies and m's files.
func withFiles(in *sesv2Input, m provider.Outbound) error {
	simple := in.Content.Simple
	var b bytes.Buffer
	h := func(name, value string) { fmt.Fprintf(&b, "%s: %s\r\n", name, value) }
	h("From", aws.ToString(in.FromEmailAddress))
	h("To", strings.Join(in.Destination.ToAddresses, ", "))
	if len(in.ReplyToAddresses) > 0 {
		h("Reply-To", strings.Join(in.ReplyToAddresses, ", "))
	}
	h("Subject", mime.QEncoding.Encode(charset, aws.ToString(simple.Subject.Data)))
	h("MIME-Version", "1.0")
	for _, x := range simple.Headers {
		h(aws.ToString(x.Name), aws.ToString(x.Value))
	}
	mixed := multipart.NewWriter(&b)
	h("Content-Type", mime.FormatMediaType("multipart/mixed", map[string]string{"boundary": mixed.Boundary()}))
	b.WriteString("\r\n")

	var alt bytes.Buffer
	altW := multipart.NewWriter(&alt)
	if simple.Body.Text != nil {
		if err := textPart(altW, "text/plain", aws.ToString(simple.Body.Text.Data)); err != nil {
			return err
		}
	}
	if err := textPart(altW, "text/html", aws.ToString(simple.Body.Html.Data)); err != nil {
		return err
	}
	if err := altW.Close(); err != nil {
		return err
	}
	part, err := mixed.CreatePart(textproto.MIMEHeader{
		"Content-Type": {mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": altW.Boundary()})},
	})
	if err != nil {
		return err
	}
	if _, err := part.Write(alt.Bytes()); err != nil {
		return err
	}
	for _, f := range m.Attachments {
		if err := filePart(mixed, f); err != nil {
			return err
		}
	}
	if err := mixed.Close(); err != nil {
		return err
	}
	in.Content = &types.EmailContent{Raw: &types.RawMessage{Data: b.Bytes()}}
	return nil
}

// textPart writes one body as quoted-printable UTF-8.
func textPart(w *multipart.Writer, mediaType, body string) error {
	part, err := w.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {mime.FormatMediaType(mediaType, map[string]string{"charset": charset})},
		"Content-Transfer-Encoding": {"quoted-printable"},
	})
	if err != nil {
		return err
	}
	qp := quotedprintable.NewWriter(part)
	if _, err := qp.Write([]byte(body)); err != nil {
		return err
	}
	return qp.Close()
}

// filePart writes one file as base64 in lines of 76 characters. Its name
// is in the Content-Disposition as RFC 2231 parameters (filename*= for a
// name that is not ASCII), and in Content-Type's name as an RFC 2047
// encoded word, which older clients read instead.
func filePart(w *multipart.Writer, f provider.File) error {
	part, err := w.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {mime.FormatMediaType(f.ContentType, nil) + `; name="` + encodedName(f.Filename) + `"`},
		"Content-Disposition":       {mime.FormatMediaType("attachment", map[string]string{"filename": f.Filename})},
		"Content-Transfer-Encoding": {"base64"},
	})
	if err != nil {
		return err
	}
	enc := base64.StdEncoding.EncodeToString(f.Content)
	for len(enc) > 76 {
		if _, err := part.Write([]byte(enc[:76] + "\r\n")); err != nil {
			return err
		}
		enc = enc[76:]
	}
	_, err = part.Write([]byte(enc + "\r\n"))
	return err
}

// encodedName is a file name for a quoted header parameter: as it is when
// it is plain ASCII, else an RFC 2047 encoded word.
func encodedName(name string) string {
	for _, r := range name {
		if r > 126 || r < 32 || r == '"' || r == '\\' {
			return mime.BEncoding.Encode(charset, name)
		}
	}
	return name
}
