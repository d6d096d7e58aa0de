package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// straceEvent is one system call of a strace -f -y log: where it began and where it
// returned (the same line, or a "resumed" one when another thread's call came between).
type straceEvent struct {
	call, args string
	begin, end int
}

// readStrace parses a strace -f -y log of fsync, rename* and write calls.
func readStrace(t *testing.T, path string) []*straceEvent {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`^(\d+)\s+(\w+)\((.*)$`)
	resumed := regexp.MustCompile(`^(\d+)\s+<\.\.\. (\w+) resumed>`)
	var out []*straceEvent
	pending := map[string]*straceEvent{} // by pid
	for i, line := range strings.Split(string(b), "\n") {
		if m := resumed.FindStringSubmatch(line); m != nil {
			if ev := pending[m[1]]; ev != nil {
				ev.end = i
				delete(pending, m[1])
			}
			continue
		}
		m := call.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ev := &straceEvent{call: m[2], args: m[3], begin: i, end: i}
		if strings.HasSuffix(line, "<unfinished ...>") {
			pending[m[1]] = ev
		}
		out = append(out, ev)
	}
	return out
}

// TestRunningStateDurable: every state the supervisor saves is followed by a fsync of
// the app's directory (the rename on disk) before it reports the app started to its
// launcher, and after it until the end: the takeover and the replicas' starts are
// not left to a later save. The supervisor runs under strace (real system calls).
func TestRunningStateDurable(t *testing.T) {
	st, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace")
	}
	s := testScheduler(t, false)
	trace := filepath.Join(t.TempDir(), "trace")
	// Only the supervisor starts under strace: the reaper (the same command, when
	// the app outlives its delay) runs the test binary itself, traced as the
	// supervisor's child by -f. A second strace would fail under the first and
	// truncate its log (CI: the trace began mid-run, with no ready write in it).
	s.cfg.Self = []string{"sh", "-c", `[ -n "$` + envReaper + `" ] && exec "$0" "$@"; exec '` + st + `' -f -y -q -o '` + trace + `' -e trace=execve,fsync,rename,renameat,renameat2,write "$0" "$@"`, os.Args[0]}
	id := start(t, s, appOf("durable", role("a", "sh", "-c", "echo hi")), nil)
	if got := waitApp(t, s, id); got.State != spec.Succeeded {
		t.Fatalf("state %s", got.State)
	}
	dir, _ := s.appDir(id)
	waitTraced(t, trace)
	evs := readStrace(t, trace)
	// The ready channel's "ok": the supervisor's only write of it (the replica
	// writes "hi").
	ready := -1
	for _, ev := range evs {
		if ev.call == "write" && strings.Contains(ev.args, `"ok\n", 3`) {
			ready = ev.begin
			break
		}
	}
	if ready < 0 {
		t.Fatalf("no ready write in the trace:\n%s", dump(evs))
	}
	saves := 0
	for i, ev := range evs {
		if !strings.HasPrefix(ev.call, "rename") || !strings.Contains(ev.args, `"`+filepath.Join(dir, stateFile)+`"`) {
			continue
		}
		saves++
		synced := -1 // where the first fsync of dir begun after the rename returned
		for _, f := range evs[i+1:] {
			if f.call == "fsync" && strings.Contains(f.args, "<"+dir+">") && f.begin > ev.end {
				synced = f.end
				break
			}
		}
		if synced < 0 {
			t.Errorf("the save at line %d is followed by no fsync of %s:\n%s", ev.begin, dir, dump(evs))
		} else if ev.begin < ready && synced > ready {
			t.Errorf("the save at line %d was made durable (line %d) only after the launcher was told (line %d)", ev.begin, synced, ready)
		}
	}
	if saves < 3 { // the takeover, running, the end
		t.Errorf("%d saves of the state traced, want at least 3:\n%s", saves, dump(evs))
	}
}

// waitTraced waits until the first process strace traced (the supervisor: its
// execve is the log's first line, where the first line of another call can be a
// thread's that ends before it) has exited: every call it made is in the log.
func waitTraced(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	for {
		b, _ := os.ReadFile(path)
		first, _, _ := strings.Cut(string(b), " ")
		if first != "" && regexp.MustCompile(`(?m)^`+first+` +\+\+\+ (exited|killed)`).Match(b) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor did not exit; its trace:\n%s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dump(evs []*straceEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.call + "(" + ev.args + "\n")
	}
	return b.String()
}
