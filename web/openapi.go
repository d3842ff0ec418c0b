package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/pb33f/libopenapi"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"go.yaml.in/yaml/v3"
)

// OpenAPIFiles holds the API's OpenAPI document: openapi.yaml, the root
// (version, info, servers, security, shared components), and one partial
// document per area of the API holding only paths and components.
//
//go:embed openapi/*.yaml
var OpenAPIFiles embed.FS

// openAPIRoot is the root document's name in OpenAPIFiles.
const openAPIRoot = "openapi.yaml"

// OpenAPI is the merged OpenAPI document of the public API.
type OpenAPI struct {
	// JSON is the document as GET /api/openapi.json serves it.
	JSON []byte
	// ETag names this version of the document: a hash of JSON.
	ETag string

	modelOnce sync.Once
	model     *v3.Document
	modelErr  error
}

// LoadOpenAPI merges the root document and the partial documents of fsys
// (the *.yaml files of its openapi directory) into one, with the servers
// naming baseURL. A path or component that two files define is an error, as
// is a partial document holding anything but paths and components: areas of
// the API are written separately, and one must not silently replace
// another's definition.
func LoadOpenAPI(fsys fs.FS, baseURL string) (*OpenAPI, error) {
	names, err := fs.Glob(fsys, "openapi/*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	rootName := path.Join("openapi", openAPIRoot)
	if !slices.Contains(names, rootName) {
		return nil, fmt.Errorf("openapi: no root document %s", rootName)
	}
	root, err := readYAMLMapping(fsys, rootName)
	if err != nil {
		return nil, err
	}
	// origin records which file defined each path and component, for the
	// message about a duplicate.
	origin := map[string]string{}
	for _, key := range sectionKeys(root) {
		origin[key] = openAPIRoot
	}
	for _, name := range names {
		if name == rootName {
			continue
		}
		part, err := readYAMLMapping(fsys, name)
		if err != nil {
			return nil, err
		}
		if err := mergePartial(root, part, path.Base(name), origin); err != nil {
			return nil, err
		}
	}
	if baseURL != "" {
		setServerURL(root, baseURL)
	}
	var compact, buf bytes.Buffer
	if err := writeJSON(&compact, root); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	// Indented, the document reads well in a browser, and its lines keep
	// the written order of operations where tools sort by line.
	if err := json.Indent(&buf, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return &OpenAPI{JSON: buf.Bytes(), ETag: `"` + hex.EncodeToString(sum[:12]) + `"`}, nil
}

// Model returns the document as libopenapi's model, with every reference
// resolved, built on first use: the reference page reads it.
func (o *OpenAPI) Model() (*v3.Document, error) {
	o.modelOnce.Do(func() {
		doc, err := libopenapi.NewDocument(o.JSON)
		if err != nil {
			o.modelErr = fmt.Errorf("openapi: %w", err)
			return
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			o.modelErr = fmt.Errorf("openapi: %w", err)
			return
		}
		o.model = &m.Model
	})
	return o.model, o.modelErr
}

// handleOpenAPI serves the OpenAPI document. It needs no API key, and it
// changes only with the binary, so clients revalidate by ETag.
func (s *Server) handleOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderETag, s.OpenAPI.ETag)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	if c.Get(fiber.HeaderIfNoneMatch) == s.OpenAPI.ETag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(s.OpenAPI.JSON)
}

func readYAMLMapping(fsys fs.FS, name string) (*yaml.Node, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", path.Base(name), err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("openapi: %s is not a YAML mapping", path.Base(name))
	}
	return doc.Content[0], nil
}

// mergePartial adds a partial document's paths, webhooks and components to
// root.
func mergePartial(root, part *yaml.Node, file string, origin map[string]string) error {
	for i := 0; i < len(part.Content); i += 2 {
		key, val := part.Content[i].Value, part.Content[i+1]
		if key != "paths" && key != "components" && key != "webhooks" {
			return fmt.Errorf("openapi: %s may hold only paths, webhooks and components, not %q (line %d)", file, key, part.Content[i].Line)
		}
		if val.Kind != yaml.MappingNode {
			return fmt.Errorf("openapi: %s: %s is not a mapping (line %d)", file, key, val.Line)
		}
		if key == "paths" {
			if err := mergeEntries(mapping(root, "paths"), val, "path", "", file, origin); err != nil {
				return err
			}
			continue
		}
		// OpenAPI 3.1's webhooks: the requests Herald itself sends (status
		// callbacks), merged like paths.
		if key == "webhooks" {
			if err := mergeEntries(mapping(root, "webhooks"), val, "webhook", "", file, origin); err != nil {
				return err
			}
			continue
		}
		for j := 0; j < len(val.Content); j += 2 {
			section, entries := val.Content[j].Value, val.Content[j+1]
			if entries.Kind != yaml.MappingNode {
				return fmt.Errorf("openapi: %s: components.%s is not a mapping (line %d)", file, section, entries.Line)
			}
			into := mapping(mapping(root, "components"), section)
			if err := mergeEntries(into, entries, "component", section+".", file, origin); err != nil {
				return err
			}
		}
	}
	return nil
}

// mergeEntries appends the entries of from to into, refusing a key that is
// already there.
func mergeEntries(into, from *yaml.Node, kind, prefix, file string, origin map[string]string) error {
	for i := 0; i < len(from.Content); i += 2 {
		k := from.Content[i]
		id := kind + " " + prefix + k.Value
		if first, dup := origin[id]; dup {
			return fmt.Errorf("openapi: %s %q is defined in both %s and %s (line %d)", kind, prefix+k.Value, first, file, k.Line)
		}
		origin[id] = file
		into.Content = append(into.Content, k, from.Content[i+1])
	}
	return nil
}

// sectionKeys lists the root's own paths and components in the form
// mergeEntries records them.
func sectionKeys(root *yaml.Node) []string {
	var keys []string
	if p := lookup(root, "paths"); p != nil {
		for i := 0; i < len(p.Content); i += 2 {
			keys = append(keys, "path "+p.Content[i].Value)
		}
	}
	if c := lookup(root, "components"); c != nil {
		for i := 0; i < len(c.Content); i += 2 {
			section := c.Content[i+1]
			for j := 0; j < len(section.Content); j += 2 {
				keys = append(keys, "component "+c.Content[i].Value+"."+section.Content[j].Value)
			}
		}
	}
	return keys
}

// lookup returns the value of key in a mapping node, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mapping returns the mapping under key in m, adding an empty one if there
// is none.
func mapping(m *yaml.Node, key string) *yaml.Node {
	if v := lookup(m, key); v != nil {
		return v
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// setServerURL makes the document's one server the deployment's base URL.
func setServerURL(root *yaml.Node, baseURL string) {
	servers := lookup(root, "servers")
	if servers == nil || servers.Kind != yaml.SequenceNode || len(servers.Content) == 0 {
		return
	}
	if u := lookup(servers.Content[0], "url"); u != nil {
		u.Value = baseURL
	}
}

// writeJSON writes a YAML node as JSON, keeping the order of mapping keys,
// so the served document reads in the order it was written.
func writeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		return writeJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			buf.Write(k)
			buf.WriteByte(':')
			if err := writeJSON(buf, n.Content[i+1]); err != nil {
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
			if err := writeJSON(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(buf, n)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return err
		}
		buf.WriteString(strconv.FormatBool(b))
	case "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.Write(b)
	default:
		b, _ := json.Marshal(n.Value)
		buf.Write(b)
	}
	return nil
}
