package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tmux is one program running in a window of a private tmux server (a socket of its
// own under the test's temporary directory, never the user's server), read as a user
// sees it: the end-to-end tests type into it and read its screen with capture-pane.
type Tmux struct {
	t    testing.TB
	sock string
	// Started is when the session was created: benchmarks time the first frame from it.
	Started time.Time
}

// window is the name of the one session of each server.
const window = "w"

// NeedTmux skips t when the end-to-end tests cannot run (-short, or no tmux), or
// fails it under CI=true without tmux (make setup installs it).
func NeedTmux(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		Missing(t, "tmux is not installed (make setup installs it)")
	}
}

// StartTmux runs the shell command line cmdline in a w x h window (NeedTmux first);
// the server and what runs in it are killed when t ends. The pane stays after the
// program exits (remain-on-exit), so that its last screen and exit status can be read.
func StartTmux(t testing.TB, w, h int, cmdline string) *Tmux {
	t.Helper()
	NeedTmux(t)
	s := &Tmux{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock"), Started: time.Now()}
	// One invocation: a server without sessions exits, forgetting its options.
	s.Run("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", window, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), cmdline)
	t.Cleanup(s.Kill)
	return s
}

// Run runs a tmux command on the server (the window is "w") and returns its output;
// a failing command fails the test.
func (s *Tmux) Run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Kill ends the server and what runs in it.
func (s *Tmux) Kill() { _ = exec.Command("tmux", "-S", s.sock, "kill-server").Run() }

// Screen is what the window shows now, as text.
func (s *Tmux) Screen() string { return s.Run("capture-pane", "-p", "-t", window) }

// Keys types tmux key names ("Enter", "Escape", "C-u", "q").
func (s *Tmux) Keys(names ...string) { s.Run(append([]string{"send-keys", "-t", window}, names...)...) }

// Text types text literally.
func (s *Tmux) Text(text string) { s.Run("send-keys", "-t", window, "-l", text) }

// Resize makes the window w x h.
func (s *Tmux) Resize(w, h int) {
	s.Run("resize-window", "-t", window, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h))
}

// Dead reports whether the program has exited.
func (s *Tmux) Dead() bool {
	return strings.TrimSpace(s.Run("display-message", "-p", "-t", window, "#{pane_dead}")) == "1"
}

// PID is the program's process id.
func (s *Tmux) PID() string {
	return strings.TrimSpace(s.Run("display-message", "-p", "-t", window, "#{pane_pid}"))
}

// RSSKB is the program's resident memory in kB, or -1 once it is gone.
func (s *Tmux) RSSKB() int {
	data, err := os.ReadFile("/proc/" + s.PID() + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	return -1
}

// ExitStatus is the program's exit status as tmux reports it ("0", "130") once it has
// ended, or ok false while it runs.
//
// Debian's tmux is built with libutempter, whose own SIGCHLD handler is in place while
// tmux removes the pane's utmp record on the pty's EOF: a child that exits in that
// window is never reaped, and the pane stays dead without a status (tmux/tmux#311).
// The documented cure is another SIGCHLD to the server, sent here once the pane is dead.
func (s *Tmux) ExitStatus() (status string, ok bool) {
	s.t.Helper()
	f := strings.Fields(s.Run("display-message", "-p", "-t", window, "#{pid} #{pane_dead} #{pane_dead_status}"))
	if len(f) == 3 && f[1] == "1" {
		return f[2], true
	}
	if len(f) == 2 && f[1] == "1" {
		_ = exec.Command("kill", "-CHLD", f[0]).Run()
	}
	return "", false
}

// WaitExit waits, within (scaled by Factor) at most, for the program to end and
// returns its exit status.
func (s *Tmux) WaitExit(within time.Duration) string {
	s.t.Helper()
	var status string
	Wait(s.t, within, "the program in tmux exits", func() (bool, string) {
		st, ok := s.ExitStatus()
		status = st
		return ok, "\n" + s.Screen()
	})
	return status
}

// WaitFor waits, within (scaled by Factor) at most, until the screen shows every one
// of want, and returns that screen. A program that exits first fails the test at once.
func (s *Tmux) WaitFor(within time.Duration, want ...string) string {
	s.t.Helper()
	return s.WaitScreen(within, strconv.Quote(strings.Join(want, `", "`)), func(scr string) bool {
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return false
			}
		}
		return true
	})
}

// WaitMatch is WaitFor for a regular expression.
func (s *Tmux) WaitMatch(within time.Duration, re *regexp.Regexp) string {
	s.t.Helper()
	return s.WaitScreen(within, re.String(), re.MatchString)
}

// WaitScreen waits, within (scaled by Factor) at most, until ok says yes to the
// screen, and returns that screen; what names the wait in the failure.
func (s *Tmux) WaitScreen(within time.Duration, what string, ok func(screen string) bool) string {
	s.t.Helper()
	var scr string
	Wait(s.t, within, "the screen shows "+what, func() (bool, string) {
		scr = s.Screen()
		if ok(scr) {
			return true, ""
		}
		if s.Dead() {
			if scr = s.Screen(); ok(scr) { // its last words, printed as it exited
				return true, ""
			}
			s.t.Fatalf("the program exited before the screen showed %s:\n%s", what, scr)
		}
		return false, "\n" + scr
	})
	return scr
}
