package ses_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider/ses"
)

func TestPlainText(t *testing.T) {
	t.Parallel()

	t.Run("BookingConfirmed", func(t *testing.T) {
		t.Parallel()
		in, err := os.ReadFile("testdata/booking_confirmed.html")
		require.NoError(t, err)
		want, err := os.ReadFile("testdata/booking_confirmed.txt")
		require.NoError(t, err)
		require.Equal(t, strings.TrimRight(string(want), "\n"), ses.PlainText(string(in)))
	})

	tests := []struct {
		name, in, want string
	}{
		{"Empty", "", ""},
		{"PlainTextPassesThrough", "Hello Ada", "Hello Ada"},
		{"ParagraphsBecomeBlankLineSeparated", "<p>One</p><p>Two</p>", "One\n\nTwo"},
		{"BreakVariants", "a<br>b<br/>c<BR />d", "a\nb\nc\nd"},
		{"DoubleBreakKeepsOneEmptyLine", "a<br><br><br><br>b", "a\n\nb"},
		{"SpacesAroundBreaksTrimmed", "a   <br>   b", "a\nb"},
		{"SourceWhitespaceCollapses", "<p>Tour:\n\t  Gardasee\n</p>", "Tour: Gardasee"},
		{"InlineTagsDropped", "<p>Ref <strong>BF-1</strong>, <em>paid</em>.</p>", "Ref BF-1, paid."},
		{"NamedAndNumericEntities", "M&uuml;ller &amp; S&ouml;hne &#8364;5 &#x2713; &quot;ok&quot; &apos;x&apos;", "Müller & Söhne €5 ✓ \"ok\" 'x'"},
		{"NonBreakingSpacesKept", "150,00&nbsp;€ a&nbsp;&nbsp;b", "150,00 € a  b"},
		{"EscapedMarkupStaysText", "&lt;b&gt;not bold&lt;/b&gt; a &lt; b", "<b>not bold</b> a < b"},
		{"LiteralLessThan", "1 < 2 and 3 > 2", "1 < 2 and 3 > 2"},
		{"ScriptStyleHeadDropped", "<head><title>T</title><style>p{}</style></head><script>alert(1)</script><p>Body</p>", "Body"},
		{"UnclosedHeadEndsAtBody", "<head><title>T</title><body><p>Body</p>", "Body"},
		{"CommentsDropped", "a<!-- <p>hidden</p> -->b", "ab"},
		{"QuotedGreaterThanInAttribute", `<a title="a>b" href="https://x.example/p">Pay now</a>`, "Pay now (https://x.example/p)"},
		{"LinkShowingItsAddress", `<a href="https://x.example/p">x.example/p</a>`, "x.example/p"},
		{"ImageOnlyLink", `<a href="https://x.example/pay"><img src="btn.png" alt="Pay"></a>`, "Pay (https://x.example/pay)"},
		{"ImageWithoutAltLink", `<a href="https://x.example/pay"><img src="btn.png"></a>`, "https://x.example/pay"},
		{"ImageAltText", `<p><img src="logo.png" alt=" Alpen &amp; Co "> writes</p>`, "Alpen & Co writes"},
		{"MailtoLinkKeepsText", `<a href="mailto:team@x.example">Write to us</a>`, "Write to us"},
		{"UnorderedList", "<p>Items:</p><ul><li>One</li><li>Two</li></ul><p>End</p>", "Items:\n\n- One\n- Two\n\nEnd"},
		{"OrderedList", "<ol><li>First</li><li>Second</li></ol>", "1. First\n2. Second"},
		{"Headings", "<h1>Title</h1>Text", "Title\n\nText"},
		{"TableCells", "<table><tr><td>Tour</td><td>Gardasee</td></tr><tr><td>Seats</td><td>2</td></tr></table>", "Tour Gardasee\nSeats 2"},
		{"PreKeepsWhitespace", "<pre>a  b\n  c</pre>", "a  b\n  c"},
		{"UppercaseTags", "<P>One</P><P>Two</P>", "One\n\nTwo"},
		{"UnclosedParagraph", "<p>One<p>Two", "One\n\nTwo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ses.PlainText(tt.in))
		})
	}
}
