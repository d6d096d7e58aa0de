package tui_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// The end-to-end tests run the real wick binary in tmux, as a user would: they type,
// and read the screen with capture-pane. They need tmux (make setup installs it) and
// `wick ui` (tui/cli) wired to tui.Run.

var (
	wickBin  string
	buildErr error
	buildDir string
)

// buildWick builds the wick binary, once per test run (TestMain calls it), or takes
// $WICK_TEST_BIN (a binary built beforehand, e.g. bin/wick).
func buildWick() {
	if bin := os.Getenv("WICK_TEST_BIN"); bin != "" {
		wickBin, buildErr = filepath.Abs(bin)
		return
	}
	buildDir, buildErr = os.MkdirTemp("", "wick-e2e-")
	if buildErr != nil {
		return
	}
	wickBin = filepath.Join(buildDir, "wick")
	cmd := exec.Command("go", "build", "-o", wickBin, ".")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		buildErr = fmt.Errorf("go build: %v\n%s", err, out)
	}
}

// wickBinary returns the wick binary TestMain built; a tree that does not build fails
// the test.
func wickBinary(t testing.TB) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return wickBin
}

// tmuxSession is wick running in a detached tmux session on a private server.
type tmuxSession struct {
	t       testing.TB
	socket  string
	name    string
	started time.Time
}

// e2eTimeout bounds each wait for the screen.
const e2eTimeout = 30 * time.Second

// needTmux skips t without tmux, or fails it under CI=true (CI installs tmux).
func needTmux(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but tmux is not installed (make setup installs it)")
		}
		t.Skip("tmux is not installed (make setup installs it)")
	}
}

// startTmux starts `wick ui` in a w x h tmux session.
func startTmux(t testing.TB, w, h int) *tmuxSession {
	t.Helper()
	needTmux(t)
	bin := wickBinary(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	work := filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("WICK_HOME", filepath.Join(dir, "state"))
	env := []string{
		"WICK_HOME=" + filepath.Join(dir, "state"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"TERM=xterm-256color",
	}
	return startTmuxCmd(t, w, h, "cd "+work+" && exec env "+strings.Join(env, " ")+" "+bin+" ui")
}

// startTmuxCmd runs the shell command line cmdline in a w x h session of a private
// tmux server, killed when t ends.
func startTmuxCmd(t testing.TB, w, h int, cmdline string) *tmuxSession {
	t.Helper()
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock"), name: "wick"}
	// remain-on-exit is set before the session starts, so that a wick that exits at
	// once leaves its last screen to read (one invocation: a server without sessions
	// exits, forgetting its options).
	s.started = time.Now()
	s.tmux("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", s.name, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), cmdline)
	t.Cleanup(s.kill)
	return s
}

// kill ends the session's tmux server and what runs in it.
func (s *tmuxSession) kill() { _ = exec.Command("tmux", "-S", s.socket, "kill-server").Run() }

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", s.name) }

// send types keys: tmux key names ("Enter", "Escape", "C-u") or, with literal, text.
func (s *tmuxSession) keys(names ...string) {
	s.tmux(append([]string{"send-keys", "-t", s.name}, names...)...)
}

func (s *tmuxSession) text(text string) { s.tmux("send-keys", "-t", s.name, "-l", text) }

// dead reports whether wick has exited.
func (s *tmuxSession) dead() bool {
	return strings.TrimSpace(s.tmux("display-message", "-p", "-t", s.name, "#{pane_dead}")) == "1"
}

// waitFor waits until the screen shows every want.
func (s *tmuxSession) waitFor(want ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(testkit.Scale(e2eTimeout))
	for {
		scr := s.screen()
		missing := ""
		for _, w := range want {
			if !strings.Contains(scr, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return scr
		}
		if s.dead() {
			s.t.Fatalf("wick exited before the screen showed %q:\n%s", missing, scr)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen never showed %q:\n%s", missing, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rssKB is the resident memory of wick, the pane's process.
func (s *tmuxSession) rssKB() int {
	pid := strings.TrimSpace(s.tmux("display-message", "-p", "-t", s.name, "#{pane_pid}"))
	data, err := os.ReadFile("/proc/" + pid + "/status")
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

// launchEcho drives the UI through the whole path: the picker, the form, the preview,
// the launch and the app list. resize, when set, runs while the form is open.
func launchEcho(t *testing.T, s *tmuxSession, resize func()) {
	s.waitFor("Apps  ")
	s.keys("n")
	s.waitFor("type to filter components", "utils.echo")
	s.text("utils.echo")
	s.waitFor("▸ utils.echo")
	s.keys("Enter")
	s.waitFor("Arguments", "msg", "Run options")
	if resize != nil {
		resize()
	}
	s.keys("C-u")
	s.text("hi from tmux")
	s.waitFor("hi from tmux")
	s.keys("Enter")
	s.waitFor("=== APPLICATION ===", "=== SCHEDULER REQUEST (local_cwd) ===")
	s.keys("Enter")
	// The new app is selected in the list (other apps, e.g. containers of other
	// tests on the Docker Engine, may be listed too).
	deadline := time.Now().Add(testkit.Scale(e2eTimeout))
	for {
		scr := s.screen()
		for _, l := range strings.Split(scr, "\n") {
			if strings.HasPrefix(l, "▸ local_cwd://wick/echo-") && strings.Contains(l, "SUCCEEDED") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the launched app never showed SUCCEEDED, selected:\n%s", scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestE2ELaunchEcho(t *testing.T) {
	s := startTmux(t, 160, 48)
	launchEcho(t, s, nil)
	time.Sleep(2 * time.Second) // idle a little: ticks, listings
	t.Logf("idle RSS with one app listed: %d kB", s.rssKB())
	s.keys("l")
	s.waitFor("hi from tmux", "end of logs")
	s.keys("Escape") // alone: an Escape followed at once by q reads as alt+q
	s.waitFor("Apps", "sorted by")
	s.keys("q")
	deadline := time.Now().Add(testkit.Scale(e2eTimeout))
	for !s.dead() {
		if time.Now().After(deadline) {
			t.Fatalf("wick did not quit on q:\n%s", s.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestE2EResizeMidway(t *testing.T) {
	s := startTmux(t, 160, 48)
	launchEcho(t, s, func() {
		s.tmux("resize-window", "-t", s.name, "-x", "50", "-y", "10")
		s.waitFor("wick needs a bigger terminal")
		s.tmux("resize-window", "-t", s.name, "-x", "100", "-y", "30")
		scr := s.waitFor("Arguments", "msg")
		for i, line := range strings.Split(scr, "\n") {
			if w := len([]rune(line)); w > 100 {
				t.Fatalf("line %d is %d wide after the resize to 100:\n%s", i, w, scr)
			}
		}
	})
}

// BenchmarkE2EIdle measures, in tmux, the time from starting the process to its first
// frame (polled every few milliseconds) and the resident memory of the idle app list,
// beside cat: the same pane running a program that prints one line and waits.
func BenchmarkE2EIdle(b *testing.B) {
	for _, c := range []struct{ name, marker string }{{"wick", "wick › apps"}, {"cat", "ready"}} {
		b.Run(c.name, func(b *testing.B) {
			var first time.Duration
			var kb int
			for range b.N {
				var s *tmuxSession
				if c.name == "wick" {
					s = startTmux(b, 160, 48)
				} else {
					needTmux(b)
					s = startTmuxCmd(b, 160, 48, "echo ready; exec cat")
				}
				for !strings.Contains(s.screen(), c.marker) {
					if time.Since(s.started) > e2eTimeout {
						s.waitFor(c.marker) // fails with the screen
					}
					time.Sleep(2 * time.Millisecond)
				}
				first += time.Since(s.started)
				if c.name == "wick" {
					s.waitFor("Apps  ")
				}
				time.Sleep(3 * time.Second) // idle: ticks and listings come and go
				kb += s.rssKB()
				s.kill()
			}
			// ns/op is the time to the first frame, not the loop's (which idles).
			b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(float64(kb)/float64(b.N), "idle-RSS-kB")
		})
	}
}
