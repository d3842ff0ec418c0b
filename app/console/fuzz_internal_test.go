package console

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// FuzzAccountSettings types anything into every setting of every provider's
// channel account form. What is accepted is one line (settings reach
// provider calls and e-mail headers), and checking it again keeps it as it is.
func FuzzAccountSettings(f *testing.F) {
	for _, seed := range []string{"1234567890", "+4915112345678", "eu-central-1", "https://hooks.example.com/herald", "Acme Tours <a@b.c>",
		"a@example.com, b@example.com", "ACMETOURS", "arn:aws:sns:eu-central-1:123456789012:ses-events", "Transactional", "Acme\r\nBcc: x@y.z", "ä"} {
		f.Add(uint8(0), seed)
	}
	var fields []struct {
		spec *ProviderSpec
		fd   ProviderField
	}
	for i := range ProviderSpecs {
		for _, fd := range ProviderSpecs[i].Fields {
			fields = append(fields, struct {
				spec *ProviderSpec
				fd   ProviderField
			}{&ProviderSpecs[i], fd})
		}
	}
	s := &Accounts{}
	f.Fuzz(func(t *testing.T, which uint8, v string) {
		x := fields[int(which)%len(fields)]
		got, err := checkSetting(s, x.spec, x.fd, v)
		if err != nil {
			return
		}
		require.False(t, strings.ContainsFunc(got, unicode.IsControl), "%s/%s accepted %q", x.spec.Name, x.fd.Key, got)
		again, err := checkSetting(s, x.spec, x.fd, got)
		require.NoError(t, err, "%s/%s: the stored value %q passes its own check", x.spec.Name, x.fd.Key, got)
		require.Equal(t, got, again)
	})
}
