package app

import (
	"bytes"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// BodyFormat is how an e-mail template's body is written.
type BodyFormat string

// Body formats. HTML is what every body written before Markdown existed
// is, and what a body without a format is.
const (
	BodyHTML     BodyFormat = "html"
	BodyMarkdown BodyFormat = "markdown"
)

// ParseBodyFormat reads a body format; empty means HTML, for callers that
// predate the choice.
func ParseBodyFormat(s string) (BodyFormat, error) {
	switch BodyFormat(strings.ToLower(strings.TrimSpace(s))) {
	case "", BodyHTML:
		return BodyHTML, nil
	case BodyMarkdown:
		return BodyMarkdown, nil
	}
	return "", FieldErrorf("body_format", "The body format must be html or markdown.")
}

// RenderEmailBody renders an e-mail template's body with vars into the
// HTML of the message's content: an HTML body as it always rendered
// (values HTML-escaped, the template's markup kept), a Markdown body with
// the values Markdown-escaped first, so that no value can add a link, a
// heading or markup, and then turned into HTML by EmailMarkdown. It
// returns the missing variables, as Render does. Routing, the console's
// preview and its test send all render through here.
func RenderEmailBody(body string, format BodyFormat, vars map[string]string) (string, []string) {
	if format != BodyMarkdown {
		return Render(body, vars, true)
	}
	md, missing := RenderEscaped(body, vars, escapeMarkdown)
	return EmailMarkdown(md), missing
}

// escapeMarkdown makes a value literal text to Markdown: every ASCII
// punctuation character gets a backslash (CommonMark §2.4 makes any of
// them literal so), and line breaks become spaces, so a value cannot start
// a block of its own (a heading, a list, an inset).
func escapeMarkdown(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '\r' || r == '\n':
			b.WriteByte(' ')
		case r < 128 && strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markdown is the e-mail Markdown: headings, paragraphs, lists, links,
// emphasis and block quotes (shown as inset text), nothing else. Raw
// HTML is neither parsed (no HTML block or inline parser) nor rendered
// (goldmark's renderer is safe by default: no WithUnsafe), so "<b>" stays
// text. Code blocks are parsed only to become plain paragraphs (without
// their parser an indented line would vanish); rules and code spans are
// not parsed.
var markdown = goldmark.New(goldmark.WithParser(parser.NewParser(
	parser.WithBlockParsers(
		util.Prioritized(parser.NewSetextHeadingParser(), 100),
		util.Prioritized(parser.NewListParser(), 300),
		util.Prioritized(parser.NewListItemParser(), 400),
		util.Prioritized(parser.NewCodeBlockParser(), 500),
		util.Prioritized(parser.NewATXHeadingParser(), 600),
		util.Prioritized(parser.NewFencedCodeBlockParser(), 700),
		util.Prioritized(parser.NewBlockquoteParser(), 800),
		util.Prioritized(parser.NewParagraphParser(), 1000),
	),
	parser.WithInlineParsers(
		util.Prioritized(parser.NewLinkParser(), 200),
		util.Prioritized(parser.NewEmphasisParser(), 500),
	),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	parser.WithASTTransformers(util.Prioritized(linkFilter{}, 100)),
)))

// linkFilter keeps links to http, https and mailto only, and no images: any
// other link (javascript:, data:, a relative path an e-mail has no base
// for) and every image becomes its text. Code blocks become paragraphs of
// their lines, as text.
type linkFilter struct{}

// Transform implements parser.ASTTransformer.
func (linkFilter) Transform(doc *ast.Document, src text.Reader, _ parser.Context) {
	var drop, codes []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.CodeBlock, *ast.FencedCodeBlock:
			codes = append(codes, x)
		case *ast.Image:
			drop = append(drop, x)
		case *ast.Link:
			// The destination is as written, escapes included; the
			// renderer unescapes it, so the check does too.
			if !allowedLink(string(util.UnescapePunctuations(x.Destination))) {
				drop = append(drop, x)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range drop {
		parent := n.Parent()
		for c := n.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, n, c)
			c = next
		}
		parent.RemoveChild(parent, n)
	}
	for _, n := range codes {
		p := ast.NewParagraph()
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			t := ast.NewTextSegment(seg.TrimRightSpace(src.Source()))
			t.SetSoftLineBreak(i < lines.Len()-1)
			p.AppendChild(p, t)
		}
		n.Parent().ReplaceChild(n.Parent(), n, p)
	}
}

// allowedLink says whether an e-mail may link to dest.
func allowedLink(dest string) bool {
	d := strings.ToLower(strings.TrimSpace(dest))
	for _, scheme := range []string{"https://", "http://", "mailto:"} {
		if strings.HasPrefix(d, scheme) && len(d) > len(scheme) {
			return true
		}
	}
	return false
}

// insetStyle is GOV.UK inset text (a grey bar at the left of indented
// text), inline so that clients that drop <style> show it too.
const insetStyle = `margin:24px 0;padding:12px 16px;border-left:8px solid #b1b4b6;`

// EmailMarkdown turns e-mail Markdown into HTML (see markdown). Its output
// holds no markup but what the renderer made, so giving block quotes their
// style is a plain replacement: a "<blockquote>" typed in the text is
// escaped to "&lt;blockquote&gt;" by then.
func EmailMarkdown(src string) string {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		// Convert fails only when its writer does; a bytes.Buffer does not.
		return "<p>" + html.EscapeString(src) + "</p>"
	}
	return strings.ReplaceAll(b.String(), "<blockquote>", `<blockquote style="`+insetStyle+`">`)
}
