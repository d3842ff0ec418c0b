// Package static holds the console's stylesheet, icons and the one small
// JavaScript library, embedded into the binary.
package static

import "embed"

// FS is the static files, served under /static/.
//
//go:embed *.css *.svg
var FS embed.FS
