package app

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
)

// FileLinkTTL is how long a file's short link works: a passenger opens
// an SMS's ticket link on the day of travel, often weeks after booking.
const FileLinkTTL = 30 * 24 * time.Hour

// FileLinks makes and checks the signed, expiring short links that serve a
// message's file (BaseURL/f/{token}) on channels that carry links rather
// than files (SMS), and that WhatsApp fetches a document from. A token
// (linkToken) names the tenant, the file and the expiry; its MAC (under a
// key derived from the deployment's secret key for file links alone) also
// covers the file's random nonce (attachments.token_nonce), which only the
// database knows: a link is unguessable even to whoever knows the ids, and
// it works for no other row than the one it was made for.
type FileLinks struct {
	// BaseURL is the deployment's public URL.
	BaseURL string
	key     []byte
}

// NewFileLinks derives the links' signing key from the deployment's secret
// key.
func NewFileLinks(baseURL string, secretKey []byte) *FileLinks {
	return &FileLinks{BaseURL: strings.TrimRight(baseURL, "/"), key: linkKey(secretKey, "herald file links v1")}
}

// FileLink is what a file token names.
type FileLink struct {
	TenantID uuid.UUID
	FileID   uuid.UUID
	Expires  time.Time
	token    linkToken
}

// Token signs a link to f that works until expires.
func (l *FileLinks) Token(f *Attachment, expires time.Time) string {
	return linkToken{TenantID: f.TenantID, ID: f.ID, Expires: expires}.seal(l.key, f.TokenNonce)
}

// URL is f's short link made at now: BaseURL/f/{token}, for FileLinkTTL.
func (l *FileLinks) URL(f *Attachment, now time.Time) string {
	return l.BaseURL + "/f/" + l.Token(f, now.Add(FileLinkTTL))
}

// Parse reads a token's tenant, file and expiry. It checks the form only:
// Verify checks the MAC against the file's nonce once the file is loaded.
func (l *FileLinks) Parse(token string) (FileLink, bool) {
	t, ok := openLinkToken(token)
	return FileLink{TenantID: t.TenantID, FileID: t.ID, Expires: t.Expires, token: t}, ok
}

// Verify reports whether fl was signed by this deployment for f (the same
// tenant, id and nonce), comparing in constant time.
func (l *FileLinks) Verify(fl FileLink, f *Attachment) bool {
	return f.TenantID == fl.TenantID && f.ID == fl.FileID && fl.token.signedBy(l.key, f.TokenNonce)
}

// FileServeTx lists the statements serving a file link runs.
type FileServeTx interface {
	Tx
	// FileByID returns one of the tenant's files with its bytes.
	FileByID(ctx context.Context, tenantID, id uuid.UUID) (*Attachment, error)
	// RecordFileFetch is FileTx's.
	RecordFileFetch(ctx context.Context, tenantID, id uuid.UUID, content []byte, fetchErr string, at time.Time) (stored bool, err error)
}

// FileServer serves the files behind short links, without a login.
type FileServer struct {
	Store Store[FileServeTx]
	Links *FileLinks
	// Fetcher fetches a file known only by its URL (a link made before
	// any send fetched it), as dispatch does; nil: such a file is not
	// served.
	Fetcher FileFetcher
	Now     Clock
	// Limits throttles each file's link across every client once its
	// token checks out; nil: unlimited.
	Limits *PublicLimits
}

// errFileLink is the one answer to every link that serves nothing: a
// forged, altered, expired or foreign token, or a file retention deleted.
// It says no more, so that a token cannot be probed.
var errFileLink = &Error{Code: ENOTFOUND, Reason: "file_not_found",
	Message: "This file link is not valid or has expired. Ask the sender for the file again."}

// Open checks a token and returns its file with the bytes. A file given by
// URL that no send fetched yet is fetched now, through the same guarded
// fetcher and checks as a send, and stored for everyone after.
func (s *FileServer) Open(ctx context.Context, token string) (*Attachment, error) {
	fl, ok := s.Links.Parse(token)
	if !ok || !s.Now().Before(fl.Expires) {
		return nil, errFileLink
	}
	var f *Attachment
	load := func() error {
		return s.Store.InTenant(ctx, fl.TenantID, func(tx FileServeTx) (err error) {
			f, err = tx.FileByID(ctx, fl.TenantID, fl.FileID)
			return err
		})
	}
	switch err := load(); {
	case ErrorCode(err) == ENOTFOUND:
		return nil, errFileLink
	case err != nil:
		return nil, err
	}
	if !s.Links.Verify(fl, f) {
		return nil, errFileLink
	}
	if err := s.Limits.TakeFile(ctx, f); err != nil {
		return nil, err
	}
	if f.Ready() {
		return f, nil
	}
	if f.FetchError != nil || f.SourceURL == nil || s.Fetcher == nil {
		return nil, errFileLink
	}
	data, err := s.Fetcher.Fetch(ctx, *f.SourceURL, MaxAttachmentBytes)
	if err != nil {
		// Not recorded: a send records why a file failed, with its retries.
		return nil, Errorf(EUNAVAILABLE, "The file could not be fetched right now; try again in a moment.")
	}
	if e := CheckFileBytes(f.Filename, f.ContentType, deref(f.DeclaredSHA256), data); e != nil {
		return nil, errFileLink
	}
	err = s.Store.InTenant(ctx, fl.TenantID, func(tx FileServeTx) error {
		_, err := tx.RecordFileFetch(ctx, fl.TenantID, f.ID, data, "", s.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	// The first stored copy wins: read back what every send will carry.
	if err := load(); err != nil {
		return nil, err
	}
	if !f.Ready() {
		return nil, errFileLink
	}
	return f, nil
}
