package app_test

import (
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestCountSMS(t *testing.T) {
	t.Parallel()
	emoji := "😀" // outside the BMP: a surrogate pair in UTF-16
	tests := []struct {
		name                   string
		text                   string
		encoding               string
		characters, units, pts int
	}{
		{"Empty", "", app.EncodingGSM7, 0, 0, 0},
		{"GSM7_160_OnePart", strings.Repeat("a", 160), app.EncodingGSM7, 160, 160, 1},
		{"GSM7_161_TwoParts", strings.Repeat("a", 161), app.EncodingGSM7, 161, 161, 2},
		{"GSM7_153x2_TwoParts", strings.Repeat("a", 306), app.EncodingGSM7, 306, 306, 2},
		{"GSM7_153x2Plus1_ThreeParts", strings.Repeat("a", 307), app.EncodingGSM7, 307, 307, 3},
		{"GSM7_WholeBasicAlphabet", "@£$¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ!\"#¤%&'()*+,-./:;<=>?¡ÄÖÑÜ§¿äöñüà", app.EncodingGSM7, 62, 62, 1},
		{"GSM7_ExtensionCountsTwo", "€[]{}~^\\|", app.EncodingGSM7, 9, 18, 1},
		{"GSM7_EuroAt160CrossesIntoTwoParts", strings.Repeat("a", 159) + "€", app.EncodingGSM7, 160, 161, 2},
		{"GSM7_EuroAt158FitsOnePart", strings.Repeat("a", 158) + "€", app.EncodingGSM7, 159, 160, 1},
		// 152 septets then €: the escape pair does not fit in the first
		// part's last septet and moves whole into the second; 153 + 153
		// septets would be two parts if it could be split.
		{"GSM7_EscapePairNotSplit", strings.Repeat("a", 152) + "€" + strings.Repeat("a", 152), app.EncodingGSM7, 305, 306, 3},
		{"GSM7_EscapePairAtBoundaryFits", strings.Repeat("a", 151) + "€" + strings.Repeat("a", 153), app.EncodingGSM7, 305, 306, 2},
		{"UCS2_70_OnePart", strings.Repeat("ł", 70), app.EncodingUCS2, 70, 70, 1},
		{"UCS2_71_TwoParts", strings.Repeat("ł", 71), app.EncodingUCS2, 71, 71, 2},
		{"UCS2_67x2_TwoParts", strings.Repeat("ł", 134), app.EncodingUCS2, 134, 134, 2},
		{"UCS2_67x2Plus1_ThreeParts", strings.Repeat("ł", 135), app.EncodingUCS2, 135, 135, 3},
		{"UCS2_EmojiCountsTwo", "Hi " + emoji, app.EncodingUCS2, 4, 5, 1},
		{"UCS2_EmojiAt70CrossesIntoTwoParts", strings.Repeat("a", 69) + emoji, app.EncodingUCS2, 70, 71, 2},
		// 66 units then a surrogate pair: it moves whole into the second
		// part, which 67 more units then overflow.
		{"UCS2_SurrogatePairNotSplit", strings.Repeat("a", 66) + emoji + strings.Repeat("a", 66), app.EncodingUCS2, 133, 134, 3},
		{"UCS2_SurrogatePairAtBoundaryFits", strings.Repeat("a", 65) + emoji + strings.Repeat("a", 67), app.EncodingUCS2, 133, 134, 2},
		{"UCS2_OneCharacterMakesAllUCS2", "Hallo Łukasz, Ihre Buchung ist bestätigt.", app.EncodingUCS2, 41, 41, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := app.CountSMS(tt.text)
			require.Equal(t, tt.encoding, c.Encoding)
			require.Equal(t, tt.characters, c.Characters)
			require.Equal(t, tt.units, c.Units)
			require.Equal(t, tt.pts, c.Parts)
			if c.Encoding == app.EncodingUCS2 {
				require.Equal(t, len(utf16.Encode([]rune(tt.text))), c.Units)
			}
		})
	}
}

func TestPrepareSMS(t *testing.T) {
	t.Parallel()
	confirmation := "Hallo Anna, Ihre Buchung BK-1 ist bestätigt. Anzahlung: 150,00\u00a0€. Gute Reise!"
	tests := []struct {
		name      string
		in, out   string
		encoding  string
		parts     int
		replaced  int
		unchanged bool
	}{
		{name: "PlainGSM7Untouched", in: "Ihre Buchung ist bestätigt.", out: "Ihre Buchung ist bestätigt.", encoding: app.EncodingGSM7, parts: 1},
		{name: "NBSPInPriceKeepsOnePart", in: confirmation, out: strings.Replace(confirmation, "\u00a0", " ", 1), encoding: app.EncodingGSM7, parts: 1, replaced: 1},
		{name: "TypographicQuotesAndDashes", in: "„Gardasee“ – ‘Tour’ — 9–12 Uhr…", out: `"Gardasee" - 'Tour' - 9-12 Uhr...`, encoding: app.EncodingGSM7, parts: 1, replaced: 8},
		{name: "SpecialSpaces", in: "150\u202f€ 1\u2009000 1\u2007000\tx", out: "150 € 1 000 1 000 x", encoding: app.EncodingGSM7, parts: 1, replaced: 4},
		{name: "ZeroWidthDropped", in: "Bu\u00adchung\u200b ok\u2060\ufeff", out: "Buchung ok", encoding: app.EncodingGSM7, parts: 1, replaced: 4},
		{name: "NameWithoutGSM7FormKeepsUCS2AsWritten", in: "Hallo Łukasz, 150,00\u00a0€ – „bestätigt“", out: "Hallo Łukasz, 150,00\u00a0€ – „bestätigt“", encoding: app.EncodingUCS2, parts: 1},
		{name: "EmojiKeepsUCS2AsWritten", in: "Gute Reise 👨\u200d👩\u200d👧 …", out: "Gute Reise 👨\u200d👩\u200d👧 …", encoding: app.EncodingUCS2, parts: 1},
		{name: "ReplacementCanShrinkParts", in: strings.Repeat("a", 150) + "…", out: strings.Repeat("a", 150) + "...", encoding: app.EncodingGSM7, parts: 1, replaced: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, c := app.PrepareSMS(tt.in)
			require.Equal(t, tt.out, out)
			require.Equal(t, tt.encoding, c.Encoding)
			require.Equal(t, tt.parts, c.Parts)
			require.Equal(t, tt.replaced, c.Replaced)
			// Preparing twice changes nothing, and the count is the
			// count of the text sent.
			again, c2 := app.PrepareSMS(out)
			require.Equal(t, out, again)
			require.Equal(t, 0, c2.Replaced)
			require.Equal(t, app.CountSMS(out).Parts, c.Parts)
		})
	}

	t.Run("NBSPWouldCostASecondPart", func(t *testing.T) {
		t.Parallel()
		// As written, the no-break space makes the confirmation UCS-2:
		// two parts. Prepared it is GSM-7, one.
		require.Equal(t, 2, app.CountSMS(confirmation).Parts)
		require.Equal(t, app.EncodingUCS2, app.CountSMS(confirmation).Encoding)
		_, c := app.PrepareSMS(confirmation)
		require.Equal(t, 1, c.Parts)
	})
}

func TestSMSCount_String(t *testing.T) {
	t.Parallel()
	_, c := app.PrepareSMS(strings.Repeat("a", 211) + "\u2019")
	require.Equal(t, "212 characters, 2 parts, GSM-7 (1 character replaced)", c.String())
	require.Equal(t, "1 character, 1 part, UCS-2", app.CountSMS("ł").String())
}
