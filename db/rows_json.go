package db

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/jmoiron/sqlx/reflectx"

	"github.com/heraldhq/herald/app"
)

// rowMapper finds a struct's fields by their db tags, as sqlx does.
var rowMapper = reflectx.NewMapper("db")

// jsonRows encodes rows (structs or pointers to them) as a JSON array of
// objects with the named columns, their db tags, for
// jsonb_populate_recordset: one statement inserts any number of rows with
// the same text. Times go to the microsecond Postgres keeps, truncated as
// pgx sends them (JSON would round them instead).
func jsonRows[T any](rows []T, columns string) (string, error) {
	cols := strings.Split(columns, ",")
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		v := reflect.Indirect(reflect.ValueOf(row))
		// Read only: sqlx's FieldMap would allocate the nil pointers it
		// passes, turning a missing time into the zero time.
		fields := rowMapper.TypeMap(v.Type())
		obj := make(map[string]any, len(cols))
		for _, c := range cols {
			fi := fields.GetByPath(c)
			if fi == nil {
				return "", fmt.Errorf("encode rows: %T has no field for column %s", row, c)
			}
			obj[c] = jsonValue(reflectx.FieldByIndexesReadOnly(v, fi.Index).Interface())
		}
		out[i] = obj
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// jsonValue is v as a row's JSON holds it: times, and the time a pointer
// points to, truncated to microseconds; nil attributes as the empty object
// they are stored as (Attrs.Value); other values as they are.
func jsonValue(v any) any {
	switch t := v.(type) {
	case app.Attrs:
		if t == nil {
			return app.Attrs{}
		}
		return t
	case time.Time:
		return t.Truncate(time.Microsecond)
	case *time.Time:
		if t == nil {
			return nil
		}
		u := t.Truncate(time.Microsecond)
		return &u
	}
	return v
}
