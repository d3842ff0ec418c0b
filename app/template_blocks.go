package app

import (
	"fmt"
	"regexp"
	"strings"
)

// Templates of every channel may hold optional blocks:
//
//	{{#if seat}}Your seat: {{seat}}{{else}}Seats are free.{{/if}}
//
// The first part shows when the variable is present and not empty (after
// trimming spaces), the {{else}} part otherwise; blocks nest. Any other
// {{#...}} or {{/...}} tag, a block left open or a stray {{else}} or
// {{/if}} is an error that ValidateTemplate reports when the template is
// saved, with its line and column. Sending never fails over it: text that
// does not parse renders as it did before blocks existed.

// blockTagPattern finds the block tags: {{#...}}, {{/...}} and {{else}}.
var blockTagPattern = regexp.MustCompile(`\{\{\s*([#/][^{}]*?|else)\s*\}\}`)

// ifTagPattern is the one opening tag there is.
var ifTagPattern = regexp.MustCompile(`^#if\s+([A-Za-z0-9_.]+)$`)

// blockNode is a piece of a parsed template: text with placeholders, or an
// optional block with its two branches.
type blockNode struct {
	text      string
	cond      string
	then      []blockNode
	otherwise []blockNode
	isBlock   bool
}

// BlockError is a mistake in a template's optional blocks, with where it
// is: Line and Column count from 1, Column in characters.
type BlockError struct {
	Line, Column int
	Message      string
}

// Error implements error.
func (e *BlockError) Error() string {
	return fmt.Sprintf("Line %d, column %d: %s", e.Line, e.Column, e.Message)
}

// parseBlocks parses text into nodes.
func parseBlocks(text string) ([]blockNode, error) {
	type frame struct {
		node    blockNode
		inElse  bool
		openPos int
	}
	root := &frame{}
	stack := []*frame{root}
	add := func(n blockNode) {
		top := stack[len(stack)-1]
		if top.inElse {
			top.node.otherwise = append(top.node.otherwise, n)
		} else {
			top.node.then = append(top.node.then, n)
		}
	}
	last := 0
	for _, m := range blockTagPattern.FindAllStringSubmatchIndex(text, -1) {
		if m[0] > last {
			add(blockNode{text: text[last:m[0]]})
		}
		last = m[1]
		tag := strings.TrimSpace(text[m[2]:m[3]])
		top := stack[len(stack)-1]
		switch {
		case ifTagPattern.MatchString(tag):
			name := strings.ToLower(ifTagPattern.FindStringSubmatch(tag)[1])
			stack = append(stack, &frame{node: blockNode{isBlock: true, cond: name}, openPos: m[0]})
		case tag == "else":
			if len(stack) == 1 {
				return nil, blockError(text, m[0], "{{else}} outside a {{#if}} block.")
			}
			if top.inElse {
				return nil, blockError(text, m[0], "A second {{else}} in one {{#if}} block.")
			}
			top.inElse = true
		case tag == "/if":
			if len(stack) == 1 {
				return nil, blockError(text, m[0], "{{/if}} without its {{#if}}.")
			}
			stack = stack[:len(stack)-1]
			add(top.node)
		case strings.HasPrefix(tag, "#if"):
			return nil, blockError(text, m[0], fmt.Sprintf("{{%s}} needs one variable name, as in {{#if seat}}.", tag))
		default:
			return nil, blockError(text, m[0], fmt.Sprintf("{{%s}} is not a block this template language knows; use {{#if name}}, {{else}} and {{/if}}.", tag))
		}
	}
	if len(stack) > 1 {
		open := stack[len(stack)-1]
		return nil, blockError(text, open.openPos, fmt.Sprintf("{{#if %s}} is not closed by {{/if}}.", open.node.cond))
	}
	if last < len(text) {
		add(blockNode{text: text[last:]})
	}
	return root.node.then, nil
}

// blockError places a message at a byte offset of text.
func blockError(text string, offset int, msg string) *BlockError {
	before := text[:offset]
	line := strings.Count(before, "\n") + 1
	col := len([]rune(before[strings.LastIndexByte(before, '\n')+1:])) + 1
	return &BlockError{Line: line, Column: col, Message: msg}
}

// ValidateBlocks checks the optional blocks of a template field and
// returns a field error naming the line and column of the first mistake.
func ValidateBlocks(field, text string) error {
	if _, err := parseBlocks(text); err != nil {
		return &Error{Code: EINVALID, Reason: "invalid_block", Field: field, Message: err.Error()}
	}
	return nil
}

// resolveBlocks returns text with its optional blocks decided by vars:
// each block replaced by the branch that shows. Text whose blocks do not
// parse comes back as it is (see the package comment above).
func resolveBlocks(text string, vars map[string]string) string {
	if !strings.Contains(text, "{{") || !blockTagPattern.MatchString(text) {
		return text
	}
	nodes, err := parseBlocks(text)
	if err != nil {
		return text
	}
	var b strings.Builder
	writeBlocks(&b, nodes, vars)
	return b.String()
}

func writeBlocks(b *strings.Builder, nodes []blockNode, vars map[string]string) {
	for _, n := range nodes {
		switch {
		case !n.isBlock:
			b.WriteString(n.text)
		case strings.TrimSpace(vars[n.cond]) != "":
			writeBlocks(b, n.then, vars)
		default:
			writeBlocks(b, n.otherwise, vars)
		}
	}
}

// blockConditions returns the variable names the blocks of text test.
func blockConditions(text string) []string {
	var out []string
	for _, m := range blockTagPattern.FindAllStringSubmatch(text, -1) {
		if c := ifTagPattern.FindStringSubmatch(strings.TrimSpace(m[1])); c != nil {
			out = append(out, strings.ToLower(c[1]))
		}
	}
	return out
}
