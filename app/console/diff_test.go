package console_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/console"
)

// diffString writes a diff the way unified diffs mark lines.
func diffString(d []console.DiffLine) string {
	var b strings.Builder
	for _, l := range d {
		switch l.Op {
		case console.DiffSame:
			b.WriteString(" ")
		case console.DiffAdded:
			b.WriteString("+")
		case console.DiffRemoved:
			b.WriteString("-")
		}
		b.WriteString(l.Text + "\n")
	}
	return b.String()
}

func TestDiffLines(t *testing.T) {
	t.Parallel()

	t.Run("Equal", func(t *testing.T) {
		d := console.DiffLines("a\nb\n", "a\nb")
		require.Equal(t, " a\n b\n", diffString(d), "a final newline makes no extra line")
		require.False(t, console.DiffChanged(d))
	})

	t.Run("ChangedLineInTheMiddle", func(t *testing.T) {
		d := console.DiffLines("Hello\nold line\nBye", "Hello\nnew line\nBye")
		require.Equal(t, " Hello\n-old line\n+new line\n Bye\n", diffString(d))
		require.True(t, console.DiffChanged(d))
		require.Equal(t, console.DiffLine{Op: console.DiffRemoved, Text: "old line", Old: 2}, d[1])
		require.Equal(t, console.DiffLine{Op: console.DiffAdded, Text: "new line", New: 2}, d[2])
		require.Equal(t, console.DiffLine{Op: console.DiffSame, Text: "Bye", Old: 3, New: 3}, d[3])
	})

	t.Run("InsertionsAndDeletions", func(t *testing.T) {
		d := console.DiffLines("a\nb\nc\nd\ne", "a\nc\nx\nd\ne\nf")
		require.Equal(t, " a\n-b\n c\n+x\n d\n e\n+f\n", diffString(d))
		// Line numbers follow each side.
		require.Equal(t, console.DiffLine{Op: console.DiffSame, Text: "c", Old: 3, New: 2}, d[2])
		require.Equal(t, console.DiffLine{Op: console.DiffAdded, Text: "f", New: 6}, d[6])
	})

	t.Run("FromAndToEmpty", func(t *testing.T) {
		require.Equal(t, "+a\n+b\n", diffString(console.DiffLines("", "a\nb")))
		require.Equal(t, "-a\n", diffString(console.DiffLines("a", "")))
		require.Empty(t, console.DiffLines("", ""))
	})

	t.Run("CRLF", func(t *testing.T) {
		require.False(t, console.DiffChanged(console.DiffLines("a\r\nb", "a\nb")), "browsers post CRLF; stored text may have LF")
	})

	t.Run("Minimal", func(t *testing.T) {
		// The longest common subsequence keeps b, c and d rather than a.
		d := console.DiffLines("a\nb\nc\nd", "b\nc\nd\na")
		require.Equal(t, "-a\n b\n c\n d\n+a\n", diffString(d))
	})
}
