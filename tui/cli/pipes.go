package cli

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// surviveClosedOutput keeps wick alive when what reads its stdout or stderr goes
// away (`wick run ... | head -1`, or `| tee log` killed by the same Ctrl-C): a
// launched app must still be cancelled by Ctrl-C, and wick must still end with the
// app's result. Without it the Go runtime ends wick by SIGPIPE at its next write to a
// closed pipe on fd 1 or 2, before it could cancel. With SIGPIPE caught, such a write
// fails with EPIPE instead, and the stream is dropped from then on: what would have
// gone to it has no reader. Catching (not ignoring) SIGPIPE leaves the default to the
// processes wick starts: a caught signal is reset by exec, an ignored one is not.
// The catch lasts until wick exits: its last words (the app's result) may still meet
// the closed pipe.
func (a *app) surviveClosedOutput() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	a.env.Stdout = &pipeSafe{w: a.env.Stdout}
	a.env.Stderr = &pipeSafe{w: a.env.Stderr}
}

// pipeSafe is a writer that drops what is written once its reader has gone (EPIPE).
type pipeSafe struct {
	w      io.Writer
	closed atomic.Bool
}

func (p *pipeSafe) Write(b []byte) (int, error) {
	if p.closed.Load() {
		return len(b), nil
	}
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.closed.Store(true)
		return len(b), nil
	}
	return n, err
}
