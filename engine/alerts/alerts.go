// Package alerts runs the user's own commands when an app ends or raises an alarm,
// with no UI open: the on_end and on_alarm run options (config.toml's [alerts] gives
// their defaults).
//
// The local schedulers' supervisor runs on_end itself, once the app's final state is
// written. Every other command is run by a watcher: `wick __alerts DIR`, which the
// Runner starts beside an app that has one, detached in its own session on the
// machine that launched the app (where the user's desktop, notify-send or a webhook's
// credentials are). It describes the app every few seconds, judges its hang alarm
// (engine/hang) and reads its metric alarms (metrics.Book) as the views do, runs
// on_alarm when an alarm rises, runs on_end once the app has ended, and exits. Its
// files are in $WICK_HOME/alerts/SCHEDULER/SESSION/APP_ID: job.json (what to run),
// watch.log (its own messages), on_end.log and on_alarm.log (the commands' output).
package alerts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// The run options.
const (
	OptOnEnd   = "on_end"
	OptOnAlarm = "on_alarm"
)

// Bounds of a command.
const (
	// MaxCommand bounds a command's text.
	MaxCommand = 4096
	// Timeout bounds a command's run: one still running then is killed with its
	// process group.
	Timeout = 60 * time.Second
	// WaitDelay is how long a killed command's output pipes are waited for.
	WaitDelay = 5 * time.Second
	// MaxLog bounds what is kept of a command's output.
	MaxLog = 64 << 10
)

// Files of a command's output: the app's state directory (local) or the watcher's.
const (
	EndLog   = "on_end.log"
	AlarmLog = "on_alarm.log"
)

// OnEndHelp is the help of the on_end run option.
const OnEndHelp = `a shell command run (sh -c) when the app ends, UI or not, with WICK_HANDLE, WICK_APP_ID, WICK_STATE, WICK_ERROR and WICK_LOG_DIR set (e.g. notify-send "$WICK_APP_ID $WICK_STATE"); at most 60 s, its output in on_end.log`

// OnAlarmHelp is the help of the on_alarm run option.
const OnAlarmHelp = `a shell command run (sh -c) on the launching machine each time the app raises an alarm (a hang, a metric's NaN or divergence), UI or not, with WICK_ALARM (what it says) and WICK_ALARM_KIND (hang or metric) beside on_end's variables; at most 60 s, its output in on_alarm.log`

// RunOpts are the run options of a scheduler that has no supervisor of its own to run
// on_end: both commands, run by the watcher.
func RunOpts() spec.RunOpts {
	return spec.RunOpts{
		{Name: OptOnEnd, Type: spec.OptString, Help: `a shell command run (sh -c) on the launching machine when the app ends, UI or not, with WICK_HANDLE, WICK_APP_ID, WICK_STATE and WICK_ERROR set (e.g. notify-send "$WICK_APP_ID $WICK_STATE"); at most 60 s, its output in on_end.log (see docs/configuration.md)`},
		{Name: OptOnAlarm, Type: spec.OptString, Help: OnAlarmHelp},
	}
}

// CheckCfg refuses a command over MaxCommand bytes or holding a NUL, naming the run
// option.
func CheckCfg(cfg spec.Cfg) error {
	for _, k := range []string{OptOnEnd, OptOnAlarm} {
		if v := cfg.String(k); len(v) > MaxCommand || strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: %s is over %d bytes or holds a NUL", spec.ErrInvalidRunOpt, k, MaxCommand)
		}
	}
	return nil
}

// Vars are the variables of an app that every command gets: WICK_HANDLE, WICK_APP_ID,
// WICK_SCHEDULER, WICK_SESSION, WICK_STATE, WICK_ERROR (its first line) and
// WICK_LOG_DIR ("" where the scheduler keeps no log directory).
func Vars(h spec.Handle, state spec.AppState, errMsg, logDir string) []string {
	if i := strings.IndexByte(errMsg, '\n'); i >= 0 {
		errMsg = errMsg[:i]
	}
	return []string{
		"WICK_HANDLE=" + h.String(), "WICK_APP_ID=" + h.AppID, "WICK_SCHEDULER=" + h.Scheduler,
		"WICK_SESSION=" + h.Session, "WICK_STATE=" + state.String(), "WICK_ERROR=" + errMsg,
		"WICK_LOG_DIR=" + logDir,
	}
}

// Run runs shell through sh -c in dir, in its own process group, with vars added to
// this process's environment, for at most Timeout (then the group is killed). It
// returns the first MaxLog bytes of its output (stdout and stderr as they came) and
// the error of its run.
func Run(shell, dir string, vars []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", shell)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), vars...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = WaitDelay
	out := &headWriter{max: MaxLog}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("killed after %s: %w", Timeout, err)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		err = fmt.Errorf("exit code %d", exit.ExitCode())
	}
	return out.b, err
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
