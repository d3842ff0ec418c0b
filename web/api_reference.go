package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/orderedmap"

	"github.com/heraldhq/herald/views"
)

// handleAPIReference shows the API's reference, made from the OpenAPI
// document Herald serves, so the page and the document cannot disagree.
func (s *Server) handleAPIReference(c *fiber.Ctx) error {
	m, err := s.OpenAPI.Model()
	if err != nil {
		return err
	}
	return s.render(c, views.APIReferencePage(s.page(c, "API reference"), apiReference(m)))
}

// maxFieldDepth bounds how deep field tables follow nested objects.
const maxFieldDepth = 4

// apiReference turns the document into the reference page's view: the
// operations grouped by their first tag, in the order of the document's
// tags, then of the paths.
func apiReference(m *v3.Document) views.APIReference {
	ref := views.APIReference{Title: m.Info.Title, Version: m.Info.Version, Intro: markdown(m.Info.Description)}
	if len(m.Servers) > 0 {
		ref.Server = m.Servers[0].URL
	}
	groups := map[string]*views.APIGroup{}
	var order []string
	group := func(name string) *views.APIGroup {
		if g, ok := groups[name]; ok {
			return g
		}
		g := &views.APIGroup{Name: name, Anchor: "tag-" + anchor(name)}
		groups[name] = g
		order = append(order, name)
		return g
	}
	for _, t := range m.Tags {
		group(t.Name).Description = markdown(t.Description)
	}
	if m.Paths != nil {
		for path, item := range m.Paths.PathItems.FromOldest() {
			for method, op := range item.GetOperations().FromOldest() {
				tag := "Other"
				if len(op.Tags) > 0 {
					tag = op.Tags[0]
				}
				g := group(tag)
				g.Ops = append(g.Ops, apiOperation(m, strings.ToUpper(method), path, item, op))
			}
		}
	}
	for _, name := range order {
		if g := groups[name]; len(g.Ops) > 0 {
			ref.Groups = append(ref.Groups, *g)
		}
	}
	if m.Components != nil && m.Components.Schemas != nil {
		if errSchema, ok := m.Components.Schemas.Get("Error"); ok {
			ref.Error = fields(errSchema, "", 0, nil)
		}
	}
	return ref
}

func apiOperation(m *v3.Document, method, path string, item *v3.PathItem, op *v3.Operation) views.APIOperation {
	out := views.APIOperation{
		Anchor: "op-" + anchor(op.OperationId), Method: method, Path: path,
		Summary: op.Summary, Description: markdown(op.Description),
		// An operation without security of its own inherits the document's.
		Public: op.Security != nil && len(op.Security) == 0 || op.Security == nil && len(m.Security) == 0,
	}
	security := op.Security
	if security == nil {
		security = m.Security
	}
	for _, req := range security {
		if req == nil || req.Requirements == nil {
			continue
		}
		for _, scopes := range req.Requirements.FromOldest() {
			out.Scopes = append(out.Scopes, scopes...)
		}
	}
	if op.OperationId == "" {
		out.Anchor = "op-" + anchor(method+" "+path)
	}
	for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
		out.Params = append(out.Params, views.APIParam{
			Name: p.Name, In: p.In, Type: typeName(p.Schema), Required: p.Required != nil && *p.Required,
			Description: markdown(p.Description), Example: exampleText(p.Example),
		})
	}
	if rb := op.RequestBody; rb != nil {
		if mt := jsonContent(rb.Content); mt != nil {
			out.Body = &views.APIBody{
				Required: rb.Required != nil && *rb.Required,
				Fields:   fields(mt.Schema, "", 0, nil),
				Examples: examples(mt),
			}
		}
	}
	if op.Responses != nil {
		for status, r := range op.Responses.Codes.FromOldest() {
			resp := views.APIResponse{Status: status, Description: markdown(r.Description)}
			for name, h := range r.Headers.FromOldest() {
				resp.Headers = append(resp.Headers, views.APIParam{
					Name: name, In: "header", Type: typeName(h.Schema), Required: h.Required, Description: markdown(h.Description),
				})
			}
			if mt := jsonContent(r.Content); mt != nil {
				if ref := mt.Schema.GetReference(); strings.HasSuffix(ref, "/Error") {
					resp.IsError = true
				} else {
					resp.Fields = fields(mt.Schema, "", 0, nil)
				}
				resp.Examples = examples(mt)
			}
			out.Response = append(out.Response, resp)
		}
	}
	return out
}

// jsonContent returns the JSON media type of a body, or nil.
func jsonContent(content *orderedmap.Map[string, *v3.MediaType]) *v3.MediaType {
	if content == nil {
		return nil
	}
	mt, _ := content.Get("application/json")
	return mt
}

// fields flattens a schema into the rows of a field table: each property
// with its path (recipients[].phone), type, description and rules.
// Compositions are merged; seen stops a schema from nesting itself.
func fields(proxy *base.SchemaProxy, prefix string, depth int, seen []*base.Schema) []views.APIField {
	s := schemaOf(proxy)
	if s == nil || depth > maxFieldDepth || slices.Contains(seen, s) {
		return nil
	}
	seen = append(seen, s)
	var out []views.APIField
	for _, sub := range s.AllOf {
		out = append(out, fields(sub, prefix, depth, seen)...)
	}
	if s.Items != nil && s.Items.IsA() && prefix == "" {
		// A top-level array: its items' fields, as [].name.
		return append(out, fields(s.Items.A, "[]", depth, seen)...)
	}
	if s.Properties == nil {
		return out
	}
	for name, prop := range s.Properties.FromOldest() {
		ps := schemaOf(prop)
		if ps == nil {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		field := views.APIField{
			Name: path, Depth: depth, Type: typeName(prop), Required: slices.Contains(s.Required, name),
			Description: markdown(ps.Description), Rules: rules(ps),
		}
		if one := oneRequiredOf(ps); len(one) > 0 {
			field.Rules = append(field.Rules, "Needs at least one of: "+strings.Join(one, ", "))
		} else if ps.Items != nil && ps.Items.IsA() {
			if one := oneRequiredOf(schemaOf(ps.Items.A)); len(one) > 0 {
				field.Rules = append(field.Rules, "Each needs at least one of: "+strings.Join(one, ", "))
			}
		}
		out = append(out, field)
		switch {
		case ps.Properties != nil && ps.Properties.Len() > 0 || len(ps.AllOf) > 0:
			out = append(out, fields(prop, path, depth+1, seen)...)
		case ps.Items != nil && ps.Items.IsA():
			if items := schemaOf(ps.Items.A); items != nil && (items.Properties != nil && items.Properties.Len() > 0 || len(items.AllOf) > 0) {
				out = append(out, fields(ps.Items.A, path+"[]", depth+1, seen)...)
			}
		}
	}
	return out
}

// oneRequiredOf returns the fields of which an object needs at least one,
// as an anyOf of required fields says.
func oneRequiredOf(s *base.Schema) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, sub := range s.AnyOf {
		ss := schemaOf(sub)
		if ss == nil || len(ss.Required) == 0 {
			return nil
		}
		out = append(out, strings.Join(ss.Required, " and "))
	}
	return out
}

func schemaOf(p *base.SchemaProxy) *base.Schema {
	if p == nil {
		return nil
	}
	return p.Schema()
}

// typeName describes a schema's type for people: "string (uuid)",
// "array of Message", "object", "string or null".
func typeName(p *base.SchemaProxy) string {
	s := schemaOf(p)
	if s == nil {
		return ""
	}
	if ref := p.GetReference(); ref != "" && len(s.Enum) == 0 && (s.Properties != nil && s.Properties.Len() > 0 || len(s.AllOf) > 0) {
		return ref[strings.LastIndex(ref, "/")+1:]
	}
	types := slices.Clone(s.Type)
	if len(types) == 0 {
		switch {
		case len(s.AllOf) > 0:
			types = []string{"object"}
		case s.Const != nil:
			types = []string{"constant"}
		default:
			types = []string{"any"}
		}
	}
	for i, t := range types {
		switch {
		case t == "array" && s.Items != nil && s.Items.IsA():
			types[i] = "array of " + typeName(s.Items.A)
		case t == "object" && s.AdditionalProperties != nil && (s.AdditionalProperties.IsA() || s.AdditionalProperties.B) && (s.Properties == nil || s.Properties.Len() == 0):
			types[i] = "object (any keys)"
		case s.Format != "" && t != "null":
			types[i] = t + " (" + s.Format + ")"
		}
	}
	return strings.Join(types, " or ")
}

// rules lists a schema's constraints as short sentences.
func rules(s *base.Schema) []string {
	var out []string
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = exampleText(e)
		}
		out = append(out, "One of: "+strings.Join(vals, ", "))
	}
	if s.Const != nil {
		out = append(out, "Always "+exampleText(s.Const))
	}
	if s.MinLength != nil && *s.MinLength > 0 || s.MaxLength != nil {
		out = append(out, "Length: "+bounds(s.MinLength, s.MaxLength, "characters"))
	}
	if s.MinItems != nil && *s.MinItems > 0 || s.MaxItems != nil {
		out = append(out, "Items: "+bounds(s.MinItems, s.MaxItems, ""))
	}
	if s.Minimum != nil || s.Maximum != nil {
		var lo, hi *int64
		if s.Minimum != nil {
			v := int64(*s.Minimum)
			lo = &v
		}
		if s.Maximum != nil {
			v := int64(*s.Maximum)
			hi = &v
		}
		out = append(out, "Range: "+bounds(lo, hi, ""))
	}
	if s.UniqueItems != nil && *s.UniqueItems {
		out = append(out, "No item twice")
	}
	if len(s.Examples) > 0 {
		out = append(out, "Example: "+exampleText(s.Examples[0]))
	}
	return out
}

func bounds(lo, hi *int64, unit string) string {
	var s string
	switch {
	case lo != nil && *lo > 0 && hi != nil:
		s = fmt.Sprintf("%d to %d", *lo, *hi)
	case hi != nil:
		s = fmt.Sprintf("at most %d", *hi)
	default:
		s = fmt.Sprintf("at least %d", *lo)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// examples returns a media type's examples as indented JSON.
func examples(mt *v3.MediaType) []views.APIExample {
	var out []views.APIExample
	if mt.Example != nil {
		out = append(out, views.APIExample{Title: "Example", JSON: exampleJSON(mt.Example)})
	}
	for name, e := range mt.Examples.FromOldest() {
		title := e.Summary
		if title == "" {
			title = name
		}
		out = append(out, views.APIExample{Title: "Example: " + title, JSON: exampleJSON(e.Value)})
	}
	return out
}

// exampleJSON renders a YAML example as indented JSON, keeping its key
// order.
func exampleJSON(n *yaml.Node) string {
	var buf bytes.Buffer
	if n == nil || writeExample(&buf, n) != nil {
		return ""
	}
	var out bytes.Buffer
	if json.Indent(&out, buf.Bytes(), "", "  ") != nil {
		return buf.String()
	}
	return out.String()
}

// exampleText renders a scalar example as it would appear in JSON, or a
// structured one compactly.
func exampleText(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	var buf bytes.Buffer
	if writeExample(&buf, n) != nil {
		return n.Value
	}
	return buf.String()
}

func writeExample(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return fmt.Errorf("empty document")
		}
		return writeExample(buf, n.Content[0])
	case yaml.AliasNode:
		return writeExample(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			buf.Write(k)
			buf.WriteByte(':')
			if err := writeExample(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeExample(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			buf.WriteString("null")
		case "!!bool", "!!int", "!!float":
			if _, err := strconv.ParseFloat(n.Value, 64); err == nil || n.Value == "true" || n.Value == "false" {
				buf.WriteString(n.Value)
				return nil
			}
			b, _ := json.Marshal(n.Value)
			buf.Write(b)
		default:
			b, _ := json.Marshal(n.Value)
			buf.Write(b)
		}
	default:
		return fmt.Errorf("unsupported YAML node")
	}
	return nil
}

var nonAnchor = regexp.MustCompile(`[^a-z0-9]+`)

// anchor makes a name into an HTML id.
func anchor(s string) string {
	return strings.Trim(nonAnchor.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// inline finds `code` and **strong** runs in a line of the document's
// Markdown descriptions.
var inline = regexp.MustCompile("`([^`]+)`|\\*\\*([^*]+)\\*\\*|\\*([^*]+)\\*")

// blankLines separate paragraphs.
var blankLines = regexp.MustCompile(`\n\s*\n`)

// markdown renders the little Markdown the document's descriptions use:
// paragraphs separated by blank lines, `code`, **strong** and *emphasis*.
// Text stays text: templ escapes every span.
func markdown(s string) []views.Para {
	var out []views.Para
	for _, block := range blankLines.Split(strings.TrimSpace(s), -1) {
		block = strings.Join(strings.Fields(block), " ")
		if block == "" {
			continue
		}
		var p views.Para
		last := 0
		for _, m := range inline.FindAllStringSubmatchIndex(block, -1) {
			if m[0] > last {
				p = append(p, views.Span{Text: block[last:m[0]]})
			}
			switch {
			case m[2] >= 0:
				p = append(p, views.Span{Kind: "code", Text: block[m[2]:m[3]]})
			case m[4] >= 0:
				p = append(p, views.Span{Kind: "strong", Text: block[m[4]:m[5]]})
			default:
				p = append(p, views.Span{Kind: "strong", Text: block[m[6]:m[7]]})
			}
			last = m[1]
		}
		if last < len(block) {
			p = append(p, views.Span{Text: block[last:]})
		}
		out = append(out, p)
	}
	return out
}
