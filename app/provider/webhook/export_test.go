package webhook

// WithConnectHook returns opts with a hook that runs after the SSRF guard
// let a dial through and immediately before connect(2). Tests use it to
// prove that refused destinations never get that far, and make it return an
// error so that no packet leaves even if the guard regressed.
func WithConnectHook(opts Options, hook func(network, address string) error) Options {
	opts.connectHook = hook
	return opts
}
