// Package static holds the console's stylesheet, icons and the one small
// JavaScript library (htmx from the npm package htmx.org, vendored with its
// version in the file name) and herald.js, embedded into the binary.
package static

import "embed"

// FS is the static files, served under /static/.
//
//go:embed *.css *.svg *.js
var FS embed.FS
