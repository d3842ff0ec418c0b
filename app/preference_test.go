package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestParseKeyword(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{"STOP": true, " stop\n": true, "Stopp": true, "abmelden": true, "\tSTART ": false, "Anmelden": false} {
		k, ok := app.ParseKeyword(body)
		require.True(t, ok, body)
		require.Equal(t, want, k.OptOut, body)
	}
	for _, body := range []string{"", "stop please", "STOP!", "S TOP", "unsubscribe", "ja"} {
		_, ok := app.ParseKeyword(body)
		require.False(t, ok, body)
	}
}

func TestApplyPreference(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2027, 4, 1, 10, 0, 0, 0, time.UTC)
	c := &app.Contact{ID: uuid.New(), OptedOut: app.StringList{}}
	stop := app.PreferenceChange{Channels: []app.Channel{app.SMS}, OptOut: true, At: t0.Add(time.Minute), IfNewer: true, Source: app.ChangeSourceSMSKeyword}
	ch, decided := app.ApplyPreference(c, stop)
	require.True(t, decided)
	require.Equal(t, "SMS", *ch.NewValue)
	// An older START, delivered later, decides nothing.
	ch, decided = app.ApplyPreference(c, app.PreferenceChange{Channels: []app.Channel{app.SMS}, At: t0, IfNewer: true})
	require.False(t, decided)
	require.Nil(t, ch)
	require.Equal(t, app.StringList{"SMS"}, c.OptedOut)
	// The same STOP again decides, but changes nothing to record.
	ch, decided = app.ApplyPreference(c, stop)
	require.True(t, decided)
	require.Nil(t, ch)
}

func TestUnsubscribeLinks(t *testing.T) {
	t.Parallel()
	l := app.NewUnsubscribeLinks("https://herald.example/", []byte("0123456789abcdef0123456789abcdef"))
	target := app.UnsubscribeTarget{TenantID: uuid.New(), ContactID: uuid.New(), MessageID: uuid.New()}
	token := l.Token(target)
	require.Equal(t, "https://herald.example/unsubscribe/"+token, l.URL(target))
	got, err := l.Parse(token)
	require.NoError(t, err)
	require.Equal(t, target, got)
	for i := range token {
		b := []byte(token)
		b[i] ^= 1
		_, err := l.Parse(string(b))
		require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err), "byte %d changed", i)
	}
	other := app.NewUnsubscribeLinks("https://herald.example", []byte("another key, another deployment!"))
	_, err = other.Parse(token)
	require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err))
}
