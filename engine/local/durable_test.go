package local

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// envLaunchHome makes TestLaunchFilesDurable's traced child launch an app under it.
const envLaunchHome = "WICK_TEST_LAUNCH_HOME"

// TestLaunchFilesDurable: the launcher's first files are on disk in the order of two
// atomic saves, launch.json's then state.json's, in one journal commit less: both
// files are written and fsynced before either is renamed into place (their fsyncs at
// once), launch.json is renamed before state.json, and the app's directory is fsynced
// after both renames and before the supervisor is told to go. The launch runs in a
// child test process under strace (real system calls).
func TestLaunchFilesDurable(t *testing.T) {
	if home := os.Getenv(envLaunchHome); home != "" {
		s := testScheduler(t, false)
		s.cfg.StateDir = home
		s2, err := newScheduler(NameCwd, false, s.cfg)
		if err != nil {
			t.Fatal(err)
		}
		start(t, s2, appOf("durable", role("a", "sh", "-c", "true")), nil)
		return
	}
	st, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace")
	}
	home, trace := t.TempDir(), filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(st, "-f", "-y", "-q", "-o", trace, "-e", "trace=fsync,rename,renameat,renameat2,write",
		os.Args[0], "-test.run", "^TestLaunchFilesDurable$", "-test.count=1")
	cmd.Env = append(os.Environ(), envLaunchHome+"="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the traced launch: %v\n%s", err, out)
	}
	evs := readStrace(t, trace)
	first := func(what string, ok func(*straceEvent) bool) *straceEvent {
		t.Helper()
		for _, ev := range evs {
			if ok(ev) {
				return ev
			}
		}
		t.Fatalf("no %s in the trace:\n%s", what, dump(evs))
		return nil
	}
	syncOf := func(part string) func(*straceEvent) bool {
		return func(ev *straceEvent) bool { return ev.call == "fsync" && strings.Contains(ev.args, part) }
	}
	renameTo := func(name string) func(*straceEvent) bool {
		return func(ev *straceEvent) bool {
			return strings.HasPrefix(ev.call, "rename") && strings.Contains(ev.args, "/"+name+`"`)
		}
	}
	fl := first("fsync of launch.json's new file", syncOf("/."+launchFile+"."))
	fs := first("fsync of state.json's new file", syncOf("/."+stateFile+"."))
	rl := first("rename of launch.json", renameTo(launchFile))
	rs := first("rename of state.json", renameTo(stateFile))
	goByte := first("the supervisor's go", func(ev *straceEvent) bool {
		return ev.call == "write" && strings.Contains(ev.args, `pipe:[`) && strings.Contains(ev.args, `"\1", 1)`)
	})
	var apps string
	for _, ev := range evs {
		if i := strings.Index(ev.args, "/local/apps/"); i >= 0 && ev.call == "fsync" && strings.Contains(ev.args, "."+stateFile+".") {
			dir := ev.args[strings.Index(ev.args, "<")+1 : strings.LastIndex(ev.args, "/")]
			apps = dir
			break
		}
	}
	synced := first("fsync of the app's directory", func(ev *straceEvent) bool {
		return ev.call == "fsync" && strings.Contains(ev.args, "<"+apps+">") && ev.begin > rs.end
	})
	if fl.end > rl.begin || fs.end > rl.begin {
		t.Errorf("a file renamed before both were on disk: fsyncs end at lines %d and %d, launch.json renamed at %d:\n%s", fl.end, fs.end, rl.begin, dump(evs))
	}
	if rl.end > rs.begin {
		t.Errorf("state.json renamed (line %d) before launch.json (line %d)", rs.begin, rl.begin)
	}
	if synced.end > goByte.begin {
		t.Errorf("the supervisor told to go (line %d) before the directory's fsync returned (line %d)", goByte.begin, synced.end)
	}
}

// TestEndDurable: the end's order on disk, from a strace of a real supervisor. Every
// log file's last fsync returns before the final state is renamed over state.json
// (every line the app wrote is on disk before its end is); the app's directory is
// fsynced after that rename and before the launcher is told of the end (the ready
// pipe, its bell, closed); SUCCESS is renamed into place only after that fsync (no
// crash leaves a summary of an end that state.json does not hold), and its file was
// fsynced before (never torn). SUCCESS's directory is not fsynced on the way to the
// final state: that fsync cost every attached run a round of device flush of its own,
// between the logs' and the final state's.
func TestEndDurable(t *testing.T) {
	st, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace")
	}
	s := testScheduler(t, false)
	trace := filepath.Join(t.TempDir(), "trace")
	// As in TestRunningStateDurable: the supervisor alone under strace, its reaper
	// traced by -f.
	s.cfg.Self = []string{"sh", "-c", `[ -n "$` + envReaper + `" ] && exec "$0" "$@"; exec '` + st + `' -f -y -q -o '` + trace + `' -e trace=execve,fsync,rename,renameat,renameat2,write,close "$0" "$@"`, os.Args[0]}
	id := start(t, s, appOf("durable", role("a", "sh", "-c", "echo hi; echo err >&2")), nil)
	if got := waitApp(t, s, id); got.State != spec.Succeeded {
		t.Fatalf("state %s", got.State)
	}
	dir, _ := s.appDir(id)
	l, err := readLaunch(dir)
	if err != nil {
		t.Fatal(err)
	}
	logDir := l.Request.LogDir
	waitTraced(t, trace)
	evs := readStrace(t, trace)
	var final *straceEvent // the last rename over state.json: the final state
	for _, ev := range evs {
		if strings.HasPrefix(ev.call, "rename") && strings.Contains(ev.args, `"`+filepath.Join(dir, stateFile)+`"`) {
			final = ev
		}
	}
	if final == nil {
		t.Fatalf("no save of the state in the trace:\n%s", dump(evs))
	}
	var synced *straceEvent // the app directory's first fsync after that rename
	for _, ev := range evs {
		if ev.call == "fsync" && strings.Contains(ev.args, "<"+dir+">") && ev.begin > final.end {
			synced = ev
			break
		}
	}
	if synced == nil {
		t.Fatalf("the final state's rename (line %d) is followed by no fsync of %s:\n%s", final.begin, dir, dump(evs))
	}
	lastSync := map[string]*straceEvent{} // by log file
	for _, ev := range evs {
		if ev.call != "fsync" || !strings.Contains(ev.args, "<"+logDir+"/") || strings.Contains(ev.args, successFile) {
			continue
		}
		_, path, _ := strings.Cut(ev.args, "<")
		path, _, _ = strings.Cut(path, ">")
		lastSync[path] = ev
	}
	for _, name := range []string{"combined.log", "stdout.log", "stderr.log"} {
		ev := lastSync[filepath.Join(logDir, "a", "0", name)]
		switch {
		case ev == nil:
			t.Errorf("no fsync of %s in the trace:\n%s", name, dump(evs))
		case ev.end > final.begin:
			t.Errorf("%s's last fsync returned at line %d, after the final state's rename (line %d)", name, ev.end, final.begin)
		}
	}
	for _, ev := range evs {
		if ev.call == "fsync" && strings.Contains(ev.args, "<"+logDir+">") && ev.begin < synced.end {
			t.Errorf("the log directory fsynced (line %d) on the way to the final state (durable at line %d)", ev.begin, synced.end)
		}
	}
	var successSync, successPut *straceEvent
	for _, ev := range evs {
		switch {
		case ev.call == "fsync" && strings.Contains(ev.args, "/."+successFile+"."):
			successSync = ev
		case strings.HasPrefix(ev.call, "rename") && strings.Contains(ev.args, `"`+filepath.Join(logDir, successFile)+`"`):
			successPut = ev
		}
	}
	switch {
	case successSync == nil || successPut == nil:
		t.Errorf("SUCCESS's fsync or rename missing from the trace:\n%s", dump(evs))
	case successSync.end > successPut.begin:
		t.Errorf("SUCCESS renamed (line %d) before its file's fsync returned (line %d)", successPut.begin, successSync.end)
	case successPut.begin < synced.end:
		t.Errorf("SUCCESS renamed (line %d) before the final state was durable (line %d)", successPut.begin, synced.end)
	}
	told := -1 // the supervisor's close of the ready pipe, its bell: the end told
	for _, ev := range evs {
		if ev.call == "close" && strings.HasPrefix(ev.args, "3<pipe:") && ev.begin > final.end {
			told = ev.begin
			break
		}
	}
	if told < 0 {
		t.Errorf("no close of the ready pipe after the final state's rename:\n%s", dump(evs))
	} else if told < synced.end {
		t.Errorf("the launcher told of the end (line %d) before the final state was durable (line %d)", told, synced.end)
	}
	// What a reader finds once the app has ended.
	var success map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(logDir, successFile))), &success); err != nil || success["final_state"] != "SUCCEEDED" {
		t.Errorf("SUCCESS: %v %v", success, err)
	}
}

// TestLaunchForksOnlyTheSupervisor: the launcher's only child is its supervisor, an
// exec of the supervisor's command. os/exec's first start in a process first forks a
// child that exits at once, to check that pidfds work (os.checkPidfd): a process more
// to schedule on the way to every launch from a one-shot wick. The launch runs in a
// child test process under strace -f (real system calls), as TestLaunchFilesDurable's.
func TestLaunchForksOnlyTheSupervisor(t *testing.T) {
	st, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace")
	}
	home, trace := t.TempDir(), filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(st, "-f", "-q", "-o", trace, "-e", "trace=clone,clone3,fork,vfork,execve",
		os.Args[0], "-test.run", "^TestLaunchFilesDurable$", "-test.count=1")
	cmd.Env = append(os.Environ(), envLaunchHome+"="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the traced launch: %v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`^(\d+)\s+(clone3?|v?fork)\((.*)$`)
	resumed := regexp.MustCompile(`^(\d+)\s+<\.\.\. (clone3?|v?fork) resumed>.*= (\d+)`)
	returned := regexp.MustCompile(`= (\d+)$`)
	execd := map[string]bool{}
	launcher := map[string]bool{} // the launcher's threads: its first pid, and those it cloned as threads
	var forked []string           // the processes the launcher forked
	flags := map[string]string{}  // a pending clone's arguments, by the calling thread
	child := func(parent, args, pid string) {
		switch {
		case !launcher[parent]:
		case strings.Contains(args, "CLONE_THREAD"):
			launcher[pid] = true
		default:
			forked = append(forked, pid)
		}
	}
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if i == 0 {
			launcher[f[0]] = true
		}
		if strings.HasPrefix(f[1], "execve(") && strings.HasSuffix(line, "= 0") || strings.HasPrefix(f[1], "<...") && strings.Contains(line, "execve resumed>") && strings.HasSuffix(line, "= 0") {
			execd[f[0]] = true
			continue
		}
		if m := call.FindStringSubmatch(line); m != nil {
			if r := returned.FindStringSubmatch(line); r != nil {
				child(m[1], m[3], r[1])
			} else {
				flags[m[1]] = m[3]
			}
			continue
		}
		if m := resumed.FindStringSubmatch(line); m != nil {
			child(m[1], flags[m[1]], m[3])
		}
	}
	if len(forked) == 0 {
		t.Fatalf("the launcher forked nothing:\n%s", b)
	}
	for _, pid := range forked {
		if !execd[pid] {
			t.Errorf("the launcher forked process %d, which never executed a program:\n%s", atoi(pid), b)
		}
	}
	if len(forked) != 1 {
		t.Errorf("the launcher forked %d processes, want 1 (its supervisor):\n%s", len(forked), b)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
