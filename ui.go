package main

import (
	"context"

	"github.com/wick-dev/wick/tui/cli"
)

// runUI starts the full-screen UI.
func runUI(ctx context.Context, opts cli.UIOptions) error {
	return nil
}
