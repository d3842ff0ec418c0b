package main

import (
	"io"
	"log/slog"
)

// discardLogger keeps River's own logs of the baseline off the report.
func discardLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
