package cli

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// killedBy reports whether a command's Wait error says it ended by sig.
func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// TestCtrlCCancelsWhateverThePipe: an attached `wick run ... 2>&1 | head -1` (or
// `| tee log`, whose tee the same Ctrl-C kills) still cancels its app on Ctrl-C. The
// reader of wick's output goes away, and wick's next writes meet a closed pipe: before,
// the Go runtime ended wick by SIGPIPE there, and the app ran on to its end with
// nobody told. Now wick drops the output, keeps following, cancels on SIGINT and
// ends by it.
func TestCtrlCCancelsWhateverThePipe(t *testing.T) {
	for _, when := range []string{"closed-before", "closed-with-the-signal"} {
		t.Run(when, func(t *testing.T) {
			h := newHarness(t)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd := h.wickCmd(context.Background(), "run", "utils.sh", "sh", "-c",
				`i=0; while :; do echo "line $i"; i=$((i+1)); sleep 0.02; done`)
			cmd.Stdout, cmd.Stderr = w, w // 2>&1 | head -1
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			// ended is closed once wick has exited (waitErr then holds how): the test reads
			// it and so does the cleanup, which must not wait for a second send.
			ended := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(ended) }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				select {
				case <-ended:
				case <-time.After(testkit.Scale(10 * time.Second)):
				}
			})
			handle, err := bufio.NewReader(r).ReadString('\n') // head -1
			if err != nil {
				t.Fatalf("reading the handle: %v", err)
			}
			handle = strings.TrimSpace(handle)
			t.Cleanup(func() { h.exec("delete", "--force", handle) })
			h.waitState(handle, spec.Running)
			if when == "closed-before" {
				r.Close()
				// The replica writes on; wick, following it, writes each line to the
				// closed pipe. Wait for many lines past the close, then look: wick is
				// still there.
				testkit.Wait(t, 30*time.Second, "50 lines logged after the pipe closed", func() (bool, string) {
					out := h.exec("log", "--no-prefix", "-n", "1", handle).stdout
					return strings.Contains(out, "line ") && lineNumber(out) >= 50, out
				})
				select {
				case <-ended:
					t.Fatalf("wick ended when its output's reader went away (%v), before any Ctrl-C: the app is left running", waitErr)
				default:
				}
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if when == "closed-with-the-signal" {
				r.Close()
			}
			select {
			case <-ended:
				if !killedBy(waitErr, syscall.SIGINT) {
					t.Errorf("wick ended with %v, want ended by SIGINT once the app is cancelled", waitErr)
				}
			case <-time.After(testkit.Scale(60 * time.Second)):
				t.Fatal("wick did not end after SIGINT")
			}
			if st := h.status(handle); st.State != spec.Cancelled {
				t.Errorf("after Ctrl-C the app is %s, want CANCELLED", st.State)
			}
		})
	}
}

// lineNumber reads N of the last "line N" in out.
func lineNumber(out string) int {
	i := strings.LastIndex(out, "line ")
	n := 0
	for _, c := range out[i+len("line "):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
