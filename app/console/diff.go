package console

import "strings"

// DiffOp says what happened to one line between two texts.
type DiffOp string

// Diff operations: a line kept, added in the newer text, or removed from the
// older one.
const (
	DiffSame    DiffOp = "same"
	DiffAdded   DiffOp = "added"
	DiffRemoved DiffOp = "removed"
)

// DiffLine is one line of a line diff. Old and New are its 1-based line
// numbers in the older and newer text (0 where it has none).
type DiffLine struct {
	Op   DiffOp
	Text string
	Old  int
	New  int
}

// maxDiffCells bounds the longest-common-subsequence table; past it, the
// differing middle is shown as removed then added, which is still correct,
// only less minimal. Template bodies (at most 20,000 characters) stay far
// below it in practice.
const maxDiffCells = 4_000_000

// DiffLines compares two texts line by line (a longest common subsequence
// of lines) and returns every line of both, in order, marked same, removed
// or added. Equal texts give only DiffSame lines.
func DiffLines(older, newer string) []DiffLine {
	a, b := splitLines(older), splitLines(newer)

	// The common head and tail need no table.
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	midA, midB := a[head:len(a)-tail], b[head:len(b)-tail]

	out := make([]DiffLine, 0, len(a)+len(b))
	for i := 0; i < head; i++ {
		out = append(out, DiffLine{Op: DiffSame, Text: a[i], Old: i + 1, New: i + 1})
	}
	out = append(out, diffMiddle(midA, midB, head, head)...)
	for i := 0; i < tail; i++ {
		ia, ib := len(a)-tail+i, len(b)-tail+i
		out = append(out, DiffLine{Op: DiffSame, Text: a[ia], Old: ia + 1, New: ib + 1})
	}
	return out
}

// diffMiddle diffs the parts between the common head and tail; offA and
// offB are their positions in the whole texts.
func diffMiddle(a, b []string, offA, offB int) []DiffLine {
	var out []DiffLine
	removed := func(i int) { out = append(out, DiffLine{Op: DiffRemoved, Text: a[i], Old: offA + i + 1}) }
	added := func(j int) { out = append(out, DiffLine{Op: DiffAdded, Text: b[j], New: offB + j + 1}) }
	if len(a)*len(b) > maxDiffCells {
		for i := range a {
			removed(i)
		}
		for j := range b {
			added(j)
		}
		return out
	}

	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, DiffLine{Op: DiffSame, Text: a[i], Old: offA + i + 1, New: offB + j + 1})
			i++
			j++
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			// Removals before additions, as readers of diffs expect.
			removed(i)
			i++
		default:
			added(j)
			j++
		}
	}
	for ; i < len(a); i++ {
		removed(i)
	}
	for ; j < len(b); j++ {
		added(j)
	}
	return out
}

// splitLines splits text into lines without their endings; an empty text
// has no lines, and a final newline does not make an empty last line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// DiffChanged reports whether a diff has any added or removed line.
func DiffChanged(d []DiffLine) bool {
	for _, l := range d {
		if l.Op != DiffSame {
			return true
		}
	}
	return false
}
