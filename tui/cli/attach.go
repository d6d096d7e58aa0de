package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// interruptedLaunch reports a launch stopped by sig: rolled back by the scheduler
// (err), or ended by it with the app kept, or, when the launch completed all the same,
// the app cancelled. wick then ends by sig, as an interrupted command does, except when
// the rollback left something behind (exit 1: there is something to clean up).
func (a *app) interruptedLaunch(sig os.Signal, h spec.Handle, err error) error {
	var left *sched.LeftBehindError
	switch {
	case errors.As(err, &left):
		fmt.Fprintf(a.env.Stderr, "wick: %s during the launch: the launch was stopped, but its rollback left some of it: %s\n", sig, render.Escape(oneLine(left.Left.Error())))
		return exitError{code: ExitFailure}
	case err != nil:
		// A local scheduler keeps the app it had begun, CANCELLED, so that its logs
		// can be read: say so, not that nothing is left.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, serr := a.runner().Status(ctx, h); serr == nil {
			st, werr := a.runner().Wait(ctx, h, 10*time.Millisecond)
			if werr != nil {
				fmt.Fprintf(a.env.Stderr, "wick: %s during the launch: the launch was stopped; %s is being cancelled (wick status %[2]s)\n", sig, h)
				return interruptedBy(sig)
			}
			fmt.Fprintf(a.env.Stderr, "wick: %s during the launch: the launch was stopped: %s %s (wick delete removes it)\n", sig, h, a.errs().State(st.State, st.State.String()))
			return interruptedBy(sig)
		}
		fmt.Fprintf(a.env.Stderr, "wick: %s during the launch: the launch was stopped and rolled back (%s)\n", sig, render.Escape(oneLine(err.Error())))
		return interruptedBy(sig)
	}
	fmt.Fprintf(a.env.Stderr, "wick: %s during the launch: cancelling %s\n", sig, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.runner().Cancel(ctx, h); err != nil {
		return fmt.Errorf("cancel %s: %w", h, err)
	}
	st, err := a.runner().Wait(ctx, h, 10*time.Millisecond)
	if err != nil {
		return fmt.Errorf("cancel %s: %w (wick status %s)", h, err, h)
	}
	fmt.Fprintf(a.env.Stderr, "wick: %s %s\n", h, a.errs().State(st.State, st.State.String()))
	return interruptedBy(sig)
}

// quietStart is how long a launch may take before a log (not a terminal) hears of its
// steps: a local start is over long before, and scripts need no chatter.
const quietStart = 500 * time.Millisecond

// progress reports long work on stderr: on a terminal one line rewritten in place (done
// clears it); elsewhere a line per step once the work has taken longer than quietStart.
func (a *app) progress() (p sched.Progress, done func()) {
	if !a.env.StderrTTY {
		start := time.Now()
		return func(step string) {
			if time.Since(start) >= quietStart {
				fmt.Fprintf(a.env.Stderr, "wick: %s\n", step)
			}
		}, func() {}
	}
	shown := false
	return func(step string) {
			shown = true
			fmt.Fprintf(a.env.Stderr, "\r\x1b[2K%s", a.errs().Dim(step))
		}, func() {
			if shown {
				fmt.Fprint(a.env.Stderr, "\r\x1b[2K")
			}
		}
}

// attach streams the app's logs to stderr until it ends and returns its result as the
// exit code. The first SIGINT or SIGTERM cancels the app and keeps streaming until it
// has stopped; a second one detaches at once.
// sigs delivers SIGINT, SIGTERM and SIGHUP; SIGHUP ends wick at once and leaves the
// app running.
func (a *app) attach(h spec.Handle, appDef *spec.AppDef, asJSON bool, sigs <-chan os.Signal) error {
	a.follow(true)
	ctx, stop := context.WithCancel(a.ctx)
	defer stop()
	// got is the first signal, once its work (the cancel) is done: wick then ends by
	// it (130 for Ctrl-C), not by the app's result.
	var got atomic.Value
	cancelled := make(chan struct{}) // closed once the first signal's cancel returned
	var once sync.Once
	cancelDone := func() { once.Do(func() { close(cancelled) }) }
	go func() {
		defer cancelDone()
		select {
		case sig := <-sigs:
			got.Store(sig)
			if sig == syscall.SIGHUP {
				// As under nohup... but without a terminal to write to: the app
				// keeps running, and wick ends.
				stop()
				return
			}
		case <-ctx.Done():
			return
		}
		// On a terminal a progress bar may be drawn on the last row: clear it first.
		clear := ""
		if a.env.StderrTTY {
			clear = eraseLine
		}
		fmt.Fprintf(a.env.Stderr, "%swick: cancelling %s (again to detach)\n", clear, h)
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := a.runner().Cancel(cctx, h); err != nil {
			fmt.Fprintf(a.env.Stderr, "wick: cancel: %s\n", render.Escape(oneLine(err.Error())))
		}
		cancel()
		cancelDone()
		select {
		case sig := <-sigs:
			if sig != syscall.SIGHUP {
				fmt.Fprintf(a.env.Stderr, "wick: detached; the app is stopping: wick status %s\n", h)
			}
			stop()
		case <-ctx.Done():
		}
	}()

	var refs []replicaRef
	for _, role := range appDef.Roles {
		for k := range role.NumReplicas {
			refs = append(refs, replicaRef{role.Name, k})
		}
	}
	w := bufio.NewWriterSize(a.env.Stderr, 32<<10)
	p := linePrinter{w: w, st: a.errs(), prefix: true, index: prefixIndex(refs)}
	opts := sched.LogOptions{Follow: true}
	emit, idle, finish := p.print, w.Flush, w.Flush
	var lp *livePrinter
	if a.env.StderrTTY {
		// Progress bars live on a terminal; a pipe gets committed lines only.
		lp = newLivePrinter(&p, w, a.env.Stderr)
		opts.Pending = true
		emit, idle, finish = lp.emit, lp.idle, lp.finish
	}
	emit, idle, finish, say := withNotices(emit, idle, finish, w, lp)
	stopHang := a.watchHang(ctx, h, say) // the hang alarm, as a line among the logs
	err := a.streamLogs(ctx, h, refs, opts, emit, idle)
	stopHang()
	finish()
	// A signal came: its cancel finishes before wick ends, whatever the output
	// became meanwhile (a closed pipe), and wick ends by the signal.
	bySignal := func() error {
		sig, ok := got.Load().(os.Signal)
		if !ok {
			return nil
		}
		<-cancelled
		return interruptedBy(sig)
	}
	if ctx.Err() != nil {
		if e := bySignal(); e != nil {
			return e
		}
		return exitError{code: ExitFailure}
	}
	if err != nil {
		if e := bySignal(); e != nil {
			return e
		}
		return err
	}
	st, err := a.runner().Wait(ctx, h, 10*time.Millisecond)
	if err != nil {
		if e := bySignal(); e != nil {
			return e
		}
		if ctx.Err() != nil {
			return exitError{code: ExitFailure}
		}
		return err
	}
	if asJSON {
		if err := writeJSON(a.env.Stdout, st); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.env.Stderr, "wick: %s %s\n", h, a.errs().State(st.State, st.State.String()))
		if st.State == spec.Failed && st.StructuredError != "" {
			fmt.Fprintf(a.env.Stderr, "wick: %s\n", render.Escape(render.FirstLine(spec.ErrorMessage(st.StructuredError))))
		}
		if st.State == spec.UnknownState && st.Msg != "" {
			// The scheduler lost the app (Slurm purged a job it kept no account of): say why.
			fmt.Fprintf(a.env.Stderr, "wick: %s\n", render.Escape(render.FirstLine(st.Msg)))
		}
		a.hint(st)
		for _, w := range st.Warnings {
			fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", render.Escape(w))
		}
	}
	if e := bySignal(); e != nil {
		return e
	}
	if code := exitCodeOfState(st.State); code != ExitOK {
		return exitError{code: code}
	}
	return nil
}

// hint prints, on stderr, the workaround for a failure wick recognizes (torchrun
// crashing on --tee 3), after the app's error.
func (a *app) hint(st *spec.AppStatus) {
	if st == nil || st.State != spec.Failed {
		return
	}
	if h := ranks.Hint(st.StructuredError); h != "" {
		fmt.Fprintf(a.env.Stderr, "wick: hint: %s\n", h)
	}
}
