package console

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Settings changes are recorded in audit metadata under these keys: config
// maps each changed setting to {"from", "to"} (older entries hold the new
// value alone), and secrets are named, never valued.
const (
	auditConfig         = "config"
	auditSecretsSet     = "secrets_set"
	auditSecretsCleared = "secrets_cleared"
)

// DescribeMetadata writes audit metadata in words, one pair a fact, sorted
// by key: a changed setting as "region: eu-west-1 -> eu-central-1", a
// secret as "changed" or "removed", lists joined with commas, nested
// objects as "key: value" phrases. Never Go syntax, never JSON braces.
func DescribeMetadata(meta map[string]any) []MetadataPair {
	out := make([]MetadataPair, 0, len(meta))
	for k, v := range meta {
		switch k {
		case auditConfig:
			if m, ok := v.(map[string]any); ok {
				for field, change := range m {
					out = append(out, MetadataPair{Key: field, Value: describeChange(change)})
				}
				continue
			}
		case auditSecretsSet, auditSecretsCleared:
			word := "changed"
			if k == auditSecretsCleared {
				word = "removed"
			}
			if list, ok := v.([]any); ok {
				for _, name := range list {
					out = append(out, MetadataPair{Key: describeValue(name), Value: word})
				}
				continue
			}
		}
		out = append(out, MetadataPair{Key: k, Value: describeValue(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	for i := range out {
		out[i].Value = clipMetadata(out[i].Value)
	}
	return out
}

// describeChange writes one setting's change: "old -> new", or the new
// value of an entry that kept only that.
func describeChange(change any) string {
	m, ok := change.(map[string]any)
	if !ok {
		return "set to " + describeValue(change)
	}
	from, to := describeValue(m["from"]), describeValue(m["to"])
	return from + " -> " + to
}

// describeValue writes one metadata value plainly.
func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "(none)"
	case string:
		if v == "" {
			return "(empty)"
		}
		return v
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = describeValue(e)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + describeValue(v[k])
		}
		return strings.Join(parts, "; ")
	}
	// Values written in Go (an entry not read back from the database)
	// take their JSON shape first, so they read the same as stored ones.
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return string(raw)
	}
	if s, ok := decoded.(string); ok {
		return s
	}
	return describeValue(decoded)
}
