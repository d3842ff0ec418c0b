package app_test

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func key() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

func TestSealer(t *testing.T) {
	t.Parallel()
	k1, k2 := key(), key()
	s1, err := app.NewSealer("k1", k1, nil)
	require.NoError(t, err)
	tenant, account := uuid.New(), uuid.New()
	secrets := map[string]string{"access_token": "EAAG-very-secret", "app_secret": "shh"}

	sealed, keyID, err := s1.Seal(tenant, account, secrets)
	require.NoError(t, err)
	require.Equal(t, "k1", keyID)
	require.False(t, bytes.Contains(sealed, []byte("very-secret")), "the blob does not contain the plaintext")

	got, err := s1.Open(tenant, account, keyID, sealed)
	require.NoError(t, err)
	require.Equal(t, secrets, got)

	t.Run("BoundToAccountAndTenant", func(t *testing.T) {
		_, err := s1.Open(tenant, uuid.New(), keyID, sealed)
		require.Error(t, err)
		_, err = s1.Open(uuid.New(), account, keyID, sealed)
		require.Error(t, err)
	})

	t.Run("Tampered", func(t *testing.T) {
		bad := bytes.Clone(sealed)
		bad[len(bad)-1] ^= 1
		_, err := s1.Open(tenant, account, keyID, bad)
		require.Error(t, err)
	})

	t.Run("RotationOpensOldSealsWithNewKey", func(t *testing.T) {
		s2, err := app.NewSealer("k2", k2, map[string][]byte{"k1": k1})
		require.NoError(t, err)
		got, err := s2.Open(tenant, account, "k1", sealed)
		require.NoError(t, err)
		require.Equal(t, secrets, got)
		_, id, err := s2.Seal(tenant, account, secrets)
		require.NoError(t, err)
		require.Equal(t, "k2", id)
	})

	t.Run("UnknownKeyID", func(t *testing.T) {
		_, err := s1.Open(tenant, account, "k9", sealed)
		require.ErrorContains(t, err, "k9")
	})

	t.Run("BadKeyLength", func(t *testing.T) {
		_, err := app.NewSealer("k1", []byte("short"), nil)
		require.Error(t, err)
	})
}
