package tui_test

import (
	"os"
	"path/filepath"
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
	buildErr = testkit.BuildWick(wickBin, "..")
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

// e2eTimeout bounds each wait for the screen on a quiet machine (testkit scales it
// with the load).
const e2eTimeout = 30 * time.Second

// startTmux starts `wick ui` in a w x h window of a private tmux server.
func startTmux(t testing.TB, w, h int) *testkit.Tmux {
	t.Helper()
	testkit.NeedTmux(t)
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
	return testkit.StartTmux(t, w, h, "cd "+work+" && exec env "+strings.Join(env, " ")+" "+bin+" ui")
}

// launchEcho drives the UI through the whole path: the picker, the form, the preview,
// the launch and the app list. resize, when set, runs while the form is open.
func launchEcho(t *testing.T, s *testkit.Tmux, resize func()) {
	s.WaitFor(e2eTimeout, "Apps  ")
	s.Keys("n")
	s.WaitFor(e2eTimeout, "type to filter components", "utils.echo")
	s.Text("utils.echo")
	s.WaitFor(e2eTimeout, "▸ utils.echo")
	s.Keys("Enter")
	s.WaitFor(e2eTimeout, "Arguments", "msg", "Run options")
	if resize != nil {
		resize()
	}
	s.Keys("C-u")
	s.Text("hi from tmux")
	s.WaitFor(e2eTimeout, "hi from tmux")
	s.Keys("Enter")
	s.WaitFor(e2eTimeout, "=== APPLICATION ===", "=== SCHEDULER REQUEST (local_cwd) ===")
	s.Keys("Enter")
	// The new app is selected in the list (other apps, e.g. containers of other
	// tests on the Docker Engine, may be listed too).
	s.WaitScreen(e2eTimeout, "the launched app selected, SUCCEEDED", func(scr string) bool {
		for _, l := range strings.Split(scr, "\n") {
			if strings.HasPrefix(l, "▸ local_cwd://wick/echo-") && strings.Contains(l, "SUCCEEDED") {
				return true
			}
		}
		return false
	})
}

func TestE2ELaunchEcho(t *testing.T) {
	s := startTmux(t, 160, 48)
	launchEcho(t, s, nil)
	time.Sleep(2 * time.Second) // idle a little: ticks, listings
	t.Logf("idle RSS with one app listed: %d kB", s.RSSKB())
	s.Keys("l")
	s.WaitFor(e2eTimeout, "hi from tmux", "end of logs")
	s.Keys("Escape") // alone: an Escape followed at once by q reads as alt+q
	s.WaitFor(e2eTimeout, "Apps", "sorted by")
	s.Keys("q")
	if st := s.WaitExit(e2eTimeout); st != "0" {
		t.Errorf("wick quit on q with status %s, want 0", st)
	}
}

func TestE2EResizeMidway(t *testing.T) {
	s := startTmux(t, 160, 48)
	launchEcho(t, s, func() {
		s.Resize(50, 10)
		s.WaitFor(e2eTimeout, "wick needs a bigger terminal")
		s.Resize(100, 30)
		scr := s.WaitFor(e2eTimeout, "Arguments", "msg")
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
				var s *testkit.Tmux
				if c.name == "wick" {
					s = startTmux(b, 160, 48)
				} else {
					testkit.NeedTmux(b)
					s = testkit.StartTmux(b, 160, 48, "echo ready; exec cat")
				}
				for !strings.Contains(s.Screen(), c.marker) {
					if time.Since(s.Started) > e2eTimeout {
						s.WaitFor(e2eTimeout, c.marker) // fails with the screen
					}
					time.Sleep(2 * time.Millisecond)
				}
				first += time.Since(s.Started)
				if c.name == "wick" {
					s.WaitFor(e2eTimeout, "Apps  ")
				}
				time.Sleep(3 * time.Second) // idle: ticks and listings come and go
				kb += s.RSSKB()
				s.Kill()
			}
			// ns/op is the time to the first frame, not the loop's (which idles).
			b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(float64(kb)/float64(b.N), "idle-RSS-kB")
		})
	}
}
