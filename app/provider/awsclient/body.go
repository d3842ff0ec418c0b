package awsclient

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// maxErrorBody is how much of an error answer's body is kept for
// classification: AWS's error documents are a few hundred bytes, a proxy's
// error page may be large and is only excerpted.
const maxErrorBody = 16 << 10

// errorBody replaces the body of an error answer: it reads like the
// original, and keeps the head of it after the SDK has consumed it, so
// that Classify can read a code the SDK's parser missed.
type errorBody struct {
	io.Reader
	io.Closer
	head []byte
}

// keepErrorBody is a deserialize middleware next to the transport: it
// wraps the body of every non-2xx answer in an errorBody before the
// operation's deserializer reads it.
var keepErrorBody = middleware.DeserializeMiddlewareFunc("HeraldKeepErrorBody",
	func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		resp, ok := out.RawResponse.(*smithyhttp.Response)
		if !ok || resp == nil || resp.Body == nil || resp.StatusCode < 300 {
			return out, md, err
		}
		head, readErr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body = &errorBody{
			Reader: io.MultiReader(bytes.NewReader(head), &failingReader{readErr}, resp.Body),
			Closer: resp.Body,
			head:   head,
		}
		return out, md, err
	})

// failingReader passes a read error of the head on to the SDK's reader.
type failingReader struct{ err error }

func (f *failingReader) Read([]byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	return 0, io.EOF
}

// KeepErrorBody adds the middleware that keeps error bodies to a client's
// stack; adapters list it in their options' APIOptions.
func KeepErrorBody(stack *middleware.Stack) error {
	return stack.Deserialize.Add(keepErrorBody, middleware.After)
}

// errorBodyOf returns the head of the body of the error answer err came
// with, if KeepErrorBody kept one.
func errorBodyOf(err error) []byte {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		if b, ok := re.Response.Body.(*errorBody); ok {
			return b.head
		}
	}
	return nil
}

// codeInBody finds an AWS error code and message in an error body the SDK
// could not read a code from: the query protocol's error document in the
// shapes that emulators and older front ends send (<ErrorResponse><Errors>
// <Error>, a bare <Error>, <Response><Errors><Error>), or a JSON document
// with __type or code. It returns empty strings when there is none, such
// as for a proxy's HTML page.
func codeInBody(body []byte) (code, msg string) {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return "", ""
	case trimmed[0] == '{':
		var doc map[string]any
		if json.Unmarshal(trimmed, &doc) != nil {
			return "", ""
		}
		for _, k := range []string{"__type", "code", "Code"} {
			if s, ok := doc[k].(string); ok && s != "" {
				code = sanitizeCode(s)
				break
			}
		}
		for _, k := range []string{"message", "Message", "errorMessage"} {
			if s, ok := doc[k].(string); ok && s != "" {
				msg = s
				break
			}
		}
		return code, msg
	case trimmed[0] == '<':
		return codeInXML(trimmed)
	}
	return "", ""
}

// codeInXML reads the first Code and Message elements inside an Error
// element, at any depth, so that the exact wrapping does not matter. HTML
// pages have no such elements; a document that stops parsing yields what
// was read so far.
func codeInXML(body []byte) (code, msg string) {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	var path []string
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return sanitizeCode(code), msg
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			text.Reset()
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			inError := len(path) >= 2 && path[len(path)-2] == "Error"
			switch {
			case inError && t.Name.Local == "Code" && code == "":
				code = strings.TrimSpace(text.String())
			case inError && t.Name.Local == "Message" && msg == "":
				msg = strings.TrimSpace(text.String())
			}
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
			text.Reset()
			if code != "" && msg != "" {
				return sanitizeCode(code), msg
			}
		}
	}
}

// sanitizeCode strips what AWS may add to a code: a namespace before '#'
// and a URL after ':' (as in X-Amzn-ErrorType), like the SDK does.
func sanitizeCode(code string) string {
	code = strings.TrimSpace(code)
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.IndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	// Codes are identifiers; anything else is not one.
	for _, r := range code {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return ""
		}
	}
	return code
}

// bodyExcerpt is a one-line excerpt of a text body for a reason; HTML
// pages are left out, their markup tells a reader nothing.
func bodyExcerpt(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" || strings.HasPrefix(s, "<") {
		return ""
	}
	return strings.Join(strings.Fields(s), " ")
}
