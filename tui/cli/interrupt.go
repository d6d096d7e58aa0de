package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// interrupted is the error of a command a signal ended after it caught the signal
// to finish what it was writing: Main then ends wick by the same signal, so that its
// exit status is the one the signal's default action gives (a shell's 130 for SIGINT).
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted by " + unix.SignalName(e.sig) }

// catchInterrupt returns a context that SIGINT or SIGTERM cancels, and stop, which
// ends the catching and returns the signal that came, or nil. A signal the command
// was started ignoring (a background job of a script) is left ignored, and a second
// one, once the first was caught, ends wick at once, as before it was caught.
func catchInterrupt(parent context.Context) (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	var wanted []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			wanted = append(wanted, s)
		}
	}
	if len(wanted) == 0 {
		return ctx, func() os.Signal { cancel(); return nil }
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, wanted...)
	var got os.Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case got = <-sigs:
			signal.Stop(sigs)
			cancel()
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	return ctx, func() os.Signal {
		once.Do(func() {
			cancel()
			<-done
			signal.Stop(sigs)
			if got == nil {
				select {
				case got = <-sigs: // came as the follow ended for another reason
				default:
				}
			}
		})
		return got
	}
}
