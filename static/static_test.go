package static

import (
	"strings"
	"testing"
)

// Every block of the stylesheet is closed where it should be: one brace too
// few nests every later rule inside the block before it (a media query for
// phones, say), and the browser then drops them on other screens without a
// word.
func TestStylesheetBlocksClose(t *testing.T) {
	css, err := FS.ReadFile("herald.css")
	if err != nil {
		t.Fatal(err)
	}
	depth, line := 0, 1
	inComment, inString := false, rune(0)
	s := string(css)
	for i, r := range s {
		switch {
		case r == '\n':
			line++
		case inComment:
			if r == '/' && i > 0 && s[i-1] == '*' {
				inComment = false
			}
		case inString != 0:
			if r == inString && s[i-1] != '\\' {
				inString = 0
			}
		case r == '/' && strings.HasPrefix(s[i:], "/*"):
			inComment = true
		case r == '"' || r == '\'':
			inString = r
		case r == '{':
			depth++
		case r == '}':
			depth--
			if depth < 0 {
				t.Fatalf("herald.css line %d closes a block that was never opened", line)
			}
		case r == '@' && depth != 0 && strings.HasPrefix(s[i:], "@media"):
			t.Fatalf("herald.css line %d: a media query inside another block; the block before it is not closed", line)
		}
	}
	if depth != 0 {
		t.Fatalf("herald.css ends with %d blocks open", depth)
	}
}
