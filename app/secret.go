package app

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Sealer encrypts channel-account secrets with AES-256-GCM. The additional
// data binds each sealed blob to its tenant and account, so a blob copied to
// another account (or tenant) does not open. Keys carry ids so that a new key
// can seal while older ones still open what they sealed.
type Sealer struct {
	current string
	aeads   map[string]cipher.AEAD
}

// NewSealer returns a Sealer that seals with key currentID and opens with it
// or any key in older (id -> 32-byte key).
func NewSealer(currentID string, current []byte, older map[string][]byte) (*Sealer, error) {
	s := &Sealer{current: currentID, aeads: map[string]cipher.AEAD{}}
	keys := map[string][]byte{currentID: current}
	for id, k := range older {
		if id != currentID {
			keys[id] = k
		}
	}
	for id, k := range keys {
		if len(k) != 32 {
			return nil, fmt.Errorf("secret key %q must be 32 bytes, got %d", id, len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		s.aeads[id] = aead
	}
	return s, nil
}

func sealAD(tenantID, accountID uuid.UUID) []byte {
	return []byte("herald/channel_account/" + tenantID.String() + "/" + accountID.String())
}

// Seal encrypts secrets for the account and returns the blob and the id of
// the key that sealed it.
func (s *Sealer) Seal(tenantID, accountID uuid.UUID, secrets map[string]string) ([]byte, string, error) {
	plain, err := json.Marshal(secrets)
	if err != nil {
		return nil, "", err
	}
	aead := s.aeads[s.current]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, plain, sealAD(tenantID, accountID)), s.current, nil
}

// Open decrypts a blob sealed for the account.
func (s *Sealer) Open(tenantID, accountID uuid.UUID, keyID string, sealed []byte) (map[string]string, error) {
	if len(sealed) == 0 {
		return map[string]string{}, nil
	}
	aead, ok := s.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("secrets were sealed with key %q, which is not configured", keyID)
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("sealed secrets are truncated")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], sealAD(tenantID, accountID))
	if err != nil {
		return nil, errors.New("secrets do not open: wrong key, or not sealed for this account")
	}
	var m map[string]string
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// CurrentKeyID is the id new secrets are sealed with.
func (s *Sealer) CurrentKeyID() string { return s.current }
