package app

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// Attrs is a flat string map stored as a JSON object, used for settings such
// as a channel account's non-secret configuration.
type Attrs map[string]string

// Value implements driver.Valuer.
func (a Attrs) Value() (driver.Value, error) {
	if a == nil {
		return "{}", nil
	}
	b, err := json.Marshal(a)
	return string(b), err
}

// Scan implements sql.Scanner.
func (a *Attrs) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*a = Attrs{}
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("attrs: cannot scan %T", src)
	}
	m := Attrs{}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*a = m
	return nil
}

// JSON is a JSON document stored as jsonb, kept as its raw bytes.
type JSON []byte

// Value implements driver.Valuer.
func (j JSON) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	return string(j), nil
}

// Scan implements sql.Scanner.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case string:
		*j = JSON(v)
	case []byte:
		*j = append(JSON(nil), v...)
	default:
		return fmt.Errorf("json: cannot scan %T", src)
	}
	return nil
}

// MarshalJSON implements json.Marshaler.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (j *JSON) UnmarshalJSON(b []byte) error {
	*j = append(JSON(nil), b...)
	return nil
}

// StringList is a list of strings stored as a Postgres text[].
type StringList []string

// Value implements driver.Valuer.
func (l StringList) Value() (driver.Value, error) {
	if l == nil {
		return nil, nil
	}
	b, err := json.Marshal([]string(l))
	if err != nil {
		return nil, err
	}
	// A JSON array of strings is a valid Postgres array literal once its
	// brackets become braces: both quote and escape the same way.
	return "{" + string(b[1:len(b)-1]) + "}", nil
}

// Scan implements sql.Scanner for Postgres text[] literals.
func (l *StringList) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*l = nil
		return nil
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("string list: cannot scan %T", src)
	}
	*l = parsePGArray(s)
	return nil
}

// parsePGArray parses a one-dimensional Postgres text array literal.
func parsePGArray(s string) []string {
	if len(s) < 2 || s[0] != '{' {
		return nil
	}
	s = s[1 : len(s)-1]
	out := []string{}
	for len(s) > 0 {
		var item []byte
		if s[0] == '"' {
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				item = append(item, s[i])
			}
			s = s[min(i+1, len(s)):]
		} else {
			i := 0
			for ; i < len(s) && s[i] != ','; i++ {
				item = append(item, s[i])
			}
			s = s[i:]
		}
		out = append(out, string(item))
		if len(s) > 0 && s[0] == ',' {
			s = s[1:]
		}
	}
	return out
}
