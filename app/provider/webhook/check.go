package webhook

import (
	"errors"

	"github.com/heraldhq/herald/app/provider"
)

// CheckURL applies the rules Send applies to an account's URL before any
// network activity (https unless allowHTTP, a host, no credentials, no
// internal host names or non-public IP literals), so that a console can
// refuse a URL when it is entered rather than at the first delivery. The
// guard on every dial still decides at send time, where DNS answers count.
// The error's text is the reason a tenant reads.
func CheckURL(raw string, allowHTTP bool) error {
	p := &Provider{AllowHTTP: allowHTTP, guard: newGuard(Options{})}
	_, err := p.target(provider.Account{Config: map[string]string{ConfigURL: raw}})
	var pe *provider.Error
	if errors.As(err, &pe) {
		return errors.New(pe.Reason)
	}
	return err
}

// CheckURL checks a webhook URL as this provider's sends will: with
// AllowHTTP, plain http passes; with AllowPrivate (development), loopback
// and private receivers on any port pass too.
func (p *Provider) CheckURL(raw string) error {
	p.ready()
	_, err := p.target(provider.Account{Config: map[string]string{ConfigURL: raw}})
	var pe *provider.Error
	if errors.As(err, &pe) {
		return errors.New(pe.Reason)
	}
	return err
}

// Idempotent implements provider.Idempotent: every delivery of a message
// carries the same Herald-Message-Id, by which receivers recognise one
// they have had, so a delivery whose outcome Herald lost may be repeated.
func (p *Provider) Idempotent() bool { return true }
