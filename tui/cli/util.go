package cli

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// contextWithTimeout is context.WithTimeout, where a zero or negative d means no limit.
func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// writeJSON writes v as indented JSON, the shape of every --json output.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// handleHelp says what a HANDLE argument may be (see resolveHandle), for the help of
// every verb that takes one.
const handleHelp = `HANDLE is the app's handle, SCHEDULER://SESSION/APP_ID as wick run and wick list
print it; or its app id alone (train-kf2vb0x9qwm3); or the start of an app id that
only one app's id starts with (train-kf2). An app id given whole wins over the ids it
starts; a start that several ids share is an error that lists them.`

// usageTimeout bounds reading what a running app's replicas use: the Docker Engine
// answers a stats request at its collector's next tick, within a second.
const usageTimeout = 3 * time.Second
