package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// An error that crossed the pipe still answers what callers ask of it: errors.Is
// against the sentinels wick decides exit codes and messages on, == for io.EOF and the
// context's errors, errors.As for a launch's rollback that left something, and the
// message word for word.
func TestErrorsCrossTheWire(t *testing.T) {
	left := &sched.LeftBehindError{Err: fmt.Errorf("creating Job x: %w", context.Canceled), Left: errors.New("Job x in namespace ns: kubectl delete job x")}
	for _, tc := range []struct {
		err  error
		is   []error
		same bool // the sentinel itself comes back
	}{
		{fmt.Errorf("app x: %w", sched.ErrNotFound), []error{sched.ErrNotFound}, false},
		{sched.Unreachable("the Kubernetes API server does not answer at https://h:6443"), []error{sched.ErrUnreachable}, false},
		{fmt.Errorf("%w namespace=%q: not a namespace name", spec.ErrInvalidRunOpt, "Bad"), []error{spec.ErrInvalidRunOpt}, false},
		{io.EOF, []error{io.EOF}, true},
		{context.Canceled, []error{context.Canceled}, true},
		{errors.New("plain"), nil, false},
	} {
		got := fromWire(toWire(tc.err))
		if got.Error() != tc.err.Error() {
			t.Errorf("%q came back as %q", tc.err, got)
		}
		for _, target := range tc.is {
			if !errors.Is(got, target) {
				t.Errorf("%q lost errors.Is %v", tc.err, target)
			}
		}
		if tc.same && got != tc.err {
			t.Errorf("%q came back as another error (%T)", tc.err, got)
		}
		if errors.Is(got, sched.ErrRunning) {
			t.Errorf("%q matches ErrRunning, which it did not", tc.err)
		}
	}
	got := fromWire(toWire(left))
	var lb *sched.LeftBehindError
	if !errors.As(got, &lb) || got.Error() != left.Error() || !errors.Is(got, context.Canceled) {
		t.Errorf("a rollback that left something came back as %q (%T), want %q", got, got, left)
	}
	if fromWire(toWire(nil)) != nil {
		t.Error("no error came back as one")
	}
}
