package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// TestUICPUProfile: WICK_CPUPROFILE makes `wick ui` write a CPU profile of its session
// (gzip'd, as go tool pprof reads it) when it quits; a path it cannot create is a
// failed exit, before the UI takes the terminal.
func TestUICPUProfile(t *testing.T) {
	h := newHarness(t)
	prof := filepath.Join(t.TempDir(), "ui.pprof")
	// The shell keeps the pane until the test has read it (or a minute has passed):
	// tmux replaces a dead pane's screen with "Pane is dead".
	read := filepath.Join(t.TempDir(), "read")
	start := func(path string) *testkit.Tmux {
		cmd := "cd " + h.work + " && env WICK_HOME=" + h.home + " HOME=" + h.user + " NO_COLOR=1 TERM=xterm-256color WICK_CPUPROFILE=" + path + " " + h.self + " ui; s=$?; " +
			"i=0; while [ ! -e " + read + " ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; exit $s"
		return testkit.StartTmux(t, 160, 20, cmd)
	}
	seen := func() {
		if err := os.WriteFile(read, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lt := start(prof)
	lt.WaitFor(30*time.Second, "? help")
	lt.Keys("q")
	seen()
	if st := lt.WaitExit(20 * time.Second); st != "0" {
		t.Fatalf("wick ui exited %q after q:\n%s", st, lt.Screen())
	}
	data, err := os.ReadFile(prof)
	if err != nil || !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		t.Fatalf("the profile: %v, %d bytes, want a gzip'd profile", err, len(data))
	}

	if err := os.Remove(read); err != nil {
		t.Fatal(err)
	}
	lt = start(filepath.Join(h.work, "no", "such", "dir", "ui.pprof"))
	lt.WaitFor(30*time.Second, "wick: WICK_CPUPROFILE: open "+filepath.Join(h.work, "no", "such", "dir", "ui.pprof")+": no such file or directory")
	seen()
	if st := lt.WaitExit(20 * time.Second); st == "0" {
		t.Errorf("wick ui with a profile it cannot write exited %q, want non-zero", st)
	}
}
