package app

import "fmt"

// MaxJSONDepth is how deeply a JSON body may nest objects and arrays. The
// deepest document Herald reads is a Meta status webhook, at 11 levels; a
// notification's context is a few levels more at most.
const MaxJSONDepth = 32

// CheckJSONDepth refuses a body that nests objects and arrays deeper than
// MaxJSONDepth, in one pass over its bytes that counts brackets outside
// strings and allocates nothing. It runs before anything decodes a body
// (the API, the webhooks, the record of a refused request): a decoder's time
// and memory grow with the nesting, encoding/json allows 10,000 levels, and
// an indented copy grows with its square. Anything else wrong with the body,
// not JSON at all included, is left to the decoder that reads it.
func CheckJSONDepth(body []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > MaxJSONDepth {
				return &Error{Code: EMALFORMED, Reason: "body_too_deep", Message: fmt.Sprintf(
					"The body nests objects and arrays more than %d levels deep; Herald reads at most %d.", MaxJSONDepth, MaxJSONDepth)}
			}
		case (b == '}' || b == ']') && depth > 0:
			depth--
		}
	}
	return nil
}
