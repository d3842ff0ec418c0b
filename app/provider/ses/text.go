package ses

import (
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// PlainText renders an HTML e-mail body as the text/plain alternative:
// tags are dropped, paragraphs and headings become blank-line separated
// blocks, <br> a line break, list items "- " lines, links "text (url)",
// entities are decoded, and whitespace collapses as a browser would
// collapse it (except inside <pre>). Script, style and head contents are
// dropped; an image reads as its alt text. Mail clients that show only text, and spam filters, read this
// part, so it must carry the whole message.
func PlainText(body string) string {
	w := &textWriter{}
	z := html.NewTokenizer(strings.NewReader(body))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			// io.EOF, or input the tokenizer gave up on: keep what we have.
			return w.String()
		case html.TextToken:
			if w.hidden == 0 {
				// Text() has decoded the entities, so "&lt;b&gt;" stays text.
				w.text(string(z.Text()))
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			var attrs map[string]string
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if attrs == nil {
					attrs = make(map[string]string)
				}
				attrs[string(k)] = string(v)
			}
			w.start(string(name), attrs, tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			name, _ := z.TagName()
			w.end(string(name))
		}
	}
}

// textWriter accumulates the text of PlainText.
type textWriter struct {
	b      strings.Builder
	hidden int // depth inside elements whose content is not shown
	pre    int // depth inside <pre>
	lists  []int
	links  []link
}

// link is an open <a>: where its text starts and where it points.
type link struct {
	start int
	href  string
}

// hiddenTags hold no visible text.
var hiddenTags = map[string]bool{"head": true, "title": true, "script": true, "style": true, "template": true, "noscript": true}

// blockTags separate their content from what surrounds it by a line break
// (1) or a blank line (2).
var blockTags = map[string]int{
	"p": 2, "h1": 2, "h2": 2, "h3": 2, "h4": 2, "h5": 2, "h6": 2,
	"ul": 2, "ol": 2, "table": 2, "blockquote": 2, "pre": 2, "hr": 2,
	"div": 1, "li": 1, "tr": 1, "section": 1, "article": 1, "header": 1,
	"footer": 1, "address": 1, "center": 1, "dl": 1, "dt": 1, "dd": 1,
	"body": 1, "html": 1,
}

func (w *textWriter) start(name string, attrs map[string]string, selfClosing bool) {
	if hiddenTags[name] {
		if !selfClosing {
			w.hidden++
		}
		return
	}
	if name == "body" {
		// A browser closes an unclosed <head> here.
		w.hidden = 0
	}
	if w.hidden > 0 {
		return
	}
	switch name {
	case "br":
		w.trimSpace()
		w.b.WriteByte('\n')
		return
	case "td", "th":
		w.space()
		return
	case "img":
		// A text client shows an image's alternative text, as a browser
		// does with images off: a logo stands for the sender's name.
		if alt := strings.TrimSpace(attrs["alt"]); alt != "" {
			w.text(alt)
		}
		return
	case "a":
		if !selfClosing {
			w.links = append(w.links, link{start: w.b.Len(), href: strings.TrimSpace(attrs["href"])})
		}
		return
	}
	n, block := blockTags[name]
	if !block {
		return
	}
	w.newlines(n)
	switch name {
	case "ul":
		w.lists = append(w.lists, 0)
	case "ol":
		w.lists = append(w.lists, 1)
	case "pre":
		w.pre++
	case "li":
		marker := "- "
		if l := len(w.lists); l > 0 && w.lists[l-1] > 0 {
			marker = strconv.Itoa(w.lists[l-1]) + ". "
			w.lists[l-1]++
		}
		w.b.WriteString(marker)
	}
}

func (w *textWriter) end(name string) {
	if hiddenTags[name] {
		if w.hidden > 0 {
			w.hidden--
		}
		return
	}
	if w.hidden > 0 {
		return
	}
	switch name {
	case "a":
		if l := len(w.links); l > 0 {
			lk := w.links[l-1]
			w.links = w.links[:l-1]
			w.linkTarget(lk)
		}
		return
	case "td", "th":
		w.space()
		return
	}
	n, block := blockTags[name]
	if !block {
		return
	}
	switch name {
	case "ul", "ol":
		if l := len(w.lists); l > 0 {
			w.lists = w.lists[:l-1]
		}
	case "pre":
		if w.pre > 0 {
			w.pre--
		}
	}
	w.newlines(n)
}

// linkTarget appends a web link's address after its text, unless the text
// already shows it.
func (w *textWriter) linkTarget(lk link) {
	href := lk.href
	if !strings.HasPrefix(href, "https://") && !strings.HasPrefix(href, "http://") {
		return // mailto:, tel:, anchors: the text says enough
	}
	if lk.start > w.b.Len() {
		return
	}
	shown := strings.TrimSpace(w.b.String()[lk.start:])
	bare := strings.TrimPrefix(strings.TrimPrefix(href, "https://"), "http://")
	switch {
	case shown == "":
		// An image or an empty link: the address is all there is to show.
		w.text(href)
	case strings.Contains(shown, bare):
		// The text already shows the address.
	default:
		w.text(" (" + href + ")")
	}
}

// text writes character data, collapsing whitespace outside <pre>.
func (w *textWriter) text(s string) {
	if w.pre > 0 {
		w.b.WriteString(strings.ReplaceAll(s, "\u00a0", " "))
		return
	}
	var prevSpace bool
	for _, r := range s {
		switch r {
		case ' ', '\t', '\n', '\r', '\f':
			prevSpace = true
			continue
		}
		if prevSpace {
			w.space()
			prevSpace = false
		}
		if r == '\u00a0' {
			// A non-breaking space is kept, as a plain space, even where
			// collapsing would drop it.
			r = ' '
		}
		w.b.WriteRune(r)
	}
	if prevSpace {
		w.space()
	}
}

// space writes one space unless the text is at the start of a line or
// already ends in whitespace.
func (w *textWriter) space() {
	if s := w.b.String(); s != "" && !strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\n") {
		w.b.WriteByte(' ')
	}
}

// newlines ends the current line and makes sure at least n-1 empty lines
// follow the text so far.
func (w *textWriter) newlines(n int) {
	w.trimSpace()
	s := w.b.String()
	if s == "" {
		return
	}
	have := len(s) - len(strings.TrimRight(s, "\n"))
	for ; have < n; have++ {
		w.b.WriteByte('\n')
	}
}

// trimSpace drops trailing spaces of the current line.
func (w *textWriter) trimSpace() {
	s := w.b.String()
	if t := strings.TrimRight(s, " "); len(t) != len(s) {
		w.b.Reset()
		w.b.WriteString(t)
	}
}

// String returns the text with trailing spaces removed from every line, at
// most one empty line in a row and no blank lines at either end.
func (w *textWriter) String() string {
	lines := strings.Split(w.b.String(), "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.Trim(strings.Join(out, "\n"), "\n")
}
