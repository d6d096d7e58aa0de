package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// A replica that exits while the supervisor is still far behind in writing its
// output (a slow disk) loses nothing: its pipes are read to their end, however long
// that takes, and no line is torn.
func TestSlowDiskLosesNoOutputAfterExit(t *testing.T) {
	// Each write to a log file takes 600 ms: when the replica exits, a full pipe and
	// the runs queued for combined.log take well over drainWait to write.
	t.Setenv(envTestWriteDelay, "600ms")
	s := testScheduler(t, false)
	const n = 3000 // 150 KB
	id := start(t, s, appOf("slow", role("slow", os.Args[0], helperVerb, "lines", "3000")), nil)
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded || len(st.Warnings) > 0 {
		t.Errorf("app %s %q, warnings %q", st.State, st.Msg, st.Warnings)
	}
	dir := replicaLogDir(t, s, id, "slow", 0)
	var want strings.Builder
	writeLines(&want, n)
	for _, f := range []string{logs.StdoutFile, logs.CombinedFile} {
		if got := readFile(t, filepath.Join(dir, f)); got != want.String() {
			t.Errorf("%s: %d lines of %d (%d bytes of %d)", f, strings.Count(got, "\n"), n, len(got), want.Len())
		}
	}
	lines := logLines(t, s, id, "slow", 0, sched.LogOptions{})
	if len(lines) != n || lines[n-1].Partial {
		t.Errorf("iterated %d lines of %d", len(lines), n)
	}
}

// A process that escapes its replica (setsid) and keeps the replica's stdout open
// after the replica ended cannot hold the logs open: its pipe is closed once the
// replica's group is gone, and the app's status says that output was not recorded.
func TestEscapedWriterIsCutOffAndReported(t *testing.T) {
	s := testScheduler(t, false)
	// The replica ends once its escapee has left the group (it made the file up).
	up := filepath.Join(t.TempDir(), "up")
	esc := role("esc", "sh", "-c", `setsid sh -c 'trap "" TERM HUP PIPE; touch "$0"; while :; do echo esc; sleep 0.05; done' "$0" & while [ ! -e "$0" ]; do sleep 0.01; done; echo main`, up)
	other := role("other", "sleep", "3")
	id := start(t, s, appOf("esc", esc, other), nil)
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded {
		t.Errorf("app %s %q", st.State, st.Msg)
	}
	if len(st.Warnings) != 1 || !strings.HasPrefix(st.Warnings[0], "esc/0: output written after the replica ended was not recorded") {
		t.Errorf("warnings %q", st.Warnings)
	}
	if r := replicaOf(t, st, "esc", 0); r.State != spec.Succeeded {
		t.Errorf("esc/0 %s", r.State)
	}
}

// After kill -9 of the supervisor in the middle of writing (slow writes keep much
// in flight), the reaper reconciles the logs: plain, per-stream and tail reads all
// see the lines of stdout.log, and a torn last line once, as a partial line.
func TestKilledSupervisorLeavesConsistentLogs(t *testing.T) {
	t.Setenv(envTestWriteDelay, "20ms")
	s := testScheduler(t, false)
	id := start(t, s, appOf("torn", role("torn", os.Args[0], helperVerb, "lines", "400000")), nil)
	dir, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	logDir := replicaLogDir(t, s, id, "torn", 0)
	waitReaper(t, raw.Supervisor.PID)
	// Kill it once some output is recorded, with more in flight.
	for deadline := time.Now().Add(testkit.Scale(20 * time.Second)); ; time.Sleep(5 * time.Millisecond) {
		if st, err := os.Stat(filepath.Join(logDir, logs.CombinedFile)); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no output recorded")
		}
	}
	if err := unix.Kill(raw.Supervisor.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The reaper ends the logs, then writes its verdict.
	for deadline := time.Now().Add(testkit.Scale(20 * time.Second)); ; time.Sleep(5 * time.Millisecond) {
		if st, err := readState(dir); err == nil && st.State.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reaper wrote no verdict")
		}
	}
	stdout := readFile(t, filepath.Join(logDir, logs.StdoutFile))
	want := strings.Count(stdout, "\n")
	torn := !strings.HasSuffix(stdout, "\n")
	if torn {
		want++
	}
	comb := readFile(t, filepath.Join(logDir, logs.CombinedFile))
	if n := strings.Count(comb, "\n"); n != want {
		t.Errorf("combined.log has %d lines, stdout.log %d", n, want)
	}
	plain := logLines(t, s, id, "torn", 0, sched.LogOptions{})
	outOnly := logLines(t, s, id, "torn", 0, sched.LogOptions{Streams: sched.Stdout})
	if len(plain) != want || len(outOnly) != want {
		t.Errorf("lines: %d plain, %d stdout only; stdout.log has %d", len(plain), len(outOnly), want)
	}
	for i, l := range plain {
		if l.Partial != (torn && i == len(plain)-1) {
			t.Errorf("line %d of %d partial=%v: %.60q", i, len(plain), l.Partial, l.Text)
		}
	}
	if tail := logLines(t, s, id, "torn", 0, sched.LogOptions{Tail: 1}); len(tail) != 1 || len(plain) > 0 && tail[0].Text != plain[len(plain)-1].Text {
		t.Errorf("tail: %d lines", len(tail))
	}
}
