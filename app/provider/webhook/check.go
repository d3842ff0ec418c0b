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
