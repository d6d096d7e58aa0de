package local

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/spec"
)

const (
	// maxOnEnd bounds the on_end run option's command.
	maxOnEnd = 4096
	// onEndTimeout bounds the on_end command: the supervisor, and with it the app's
	// reservations, waits for it; a command still running then is killed.
	onEndTimeout = 60 * time.Second
	// onEndWaitDelay is how long its output pipes are waited for once it is killed.
	onEndWaitDelay = 5 * time.Second
	// onEndLog is the file in the app's state directory that gets the on_end
	// command's output (truncated to maxOnEndLog).
	onEndLog    = "on_end.log"
	maxOnEndLog = 64 << 10
)

// runOnEnd runs the app's on_end command, if it has one, once its final state is
// written: through sh -c, in its own process group, with the app in WICK_* variables
// (WICK_HANDLE, WICK_APP_ID, WICK_SCHEDULER, WICK_SESSION, WICK_STATE, WICK_ERROR,
// WICK_LOG_DIR), its output in on_end.log. It fires whether a UI is open or not. A
// failure is logged; the app's state is already final and stays as it is.
func (sv *supervisor) runOnEnd() {
	if sv.req.OnEnd == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), onEndTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", sv.req.OnEnd)
	cmd.Dir = sv.dir
	sched := sv.l.Scheduler
	handle := spec.Handle{Scheduler: sched, Session: sv.req.Session, AppID: sv.req.AppID}
	cmd.Env = append(os.Environ(),
		"WICK_HANDLE="+handle.String(), "WICK_APP_ID="+sv.req.AppID, "WICK_SCHEDULER="+sched,
		"WICK_SESSION="+sv.req.Session, "WICK_STATE="+sv.st.State.String(),
		"WICK_ERROR="+firstLine(spec.ErrorMessage(sv.st.StructuredError)), "WICK_LOG_DIR="+sv.req.LogDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = onEndWaitDelay
	out := &headWriter{max: maxOnEndLog}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	if werr := safefs.WriteFileAtomic(sv.dir, onEndLog, out.b); werr != nil {
		sv.logf("on_end: %v", werr)
	}
	if err != nil {
		sv.logf("on_end %q: %v", sv.req.OnEnd, err)
	}
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	b   []byte
	max int
}

func (h *headWriter) Write(p []byte) (int, error) {
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
