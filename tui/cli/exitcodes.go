package cli

import (
	"errors"
	"os"
	"syscall"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
)

// exitCodeOf is the exit code of a verb that failed with err: bad input (a usage
// error, an app, sweep or component that does not exist, a malformed handle) is
// ExitUsage, a scheduler that cannot be reached ExitUnreachable, the rest
// ExitFailure.
func exitCodeOf(err error) int {
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, sched.ErrUnreachable):
		return ExitUnreachable
	case errors.Is(err, sched.ErrNotFound), errors.Is(err, sweep.ErrNoSweep),
		errors.Is(err, components.ErrNoSuchComponent), errors.Is(err, spec.ErrMalformedHandle),
		errors.Is(err, sched.ErrUnknownScheduler), errors.Is(err, sched.ErrNoReplica), errors.Is(err, sched.ErrNoRole):
		return ExitUsage
	}
	return ExitFailure
}

// exitCodeOfState is the exit code of an attached run whose app ended in st.
func exitCodeOfState(st spec.AppState) int {
	switch st {
	case spec.Succeeded:
		return ExitOK
	case spec.Cancelled:
		return ExitCancelled
	}
	return ExitFailure
}

// interruptedBy is the error that ends wick by sig (see Main), or exit 1 for a signal
// that is not a syscall.Signal (none on Linux).
func interruptedBy(sig os.Signal) error {
	if s, ok := sig.(syscall.Signal); ok {
		return interrupted{s}
	}
	return exitError{code: ExitFailure}
}
