package local

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// envTestWriteDelay makes the supervisors a test starts write their logs slowly, as on
// a slow disk (see testWriteDelay).
const envTestWriteDelay = "WICK_TEST_WRITE_DELAY"

// envTestHandoverDelay makes supervisors pause right after they take an app over (see
// testHandoverDelay).
const envTestHandoverDelay = "WICK_TEST_HANDOVER_DELAY"

// envTestTakeoverDelay makes supervisors pause before they take an app over (see
// testTakeoverDelay).
const envTestTakeoverDelay = "WICK_TEST_TAKEOVER_DELAY"

// helperVerb makes the test binary act as a replica program (see helper).
const helperVerb = "__helper"

// TestMain doubles the test binary as wick: `BINARY __supervise DIR` runs the
// supervisor (or the reaper), as `wick __supervise DIR` does, and `BINARY __helper
// ...` runs one of the replica programs the tests need.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == SuperviseVerb {
		if d, err := time.ParseDuration(os.Getenv(envTestWriteDelay)); err == nil {
			testWriteDelay = d
		}
		if d, err := time.ParseDuration(os.Getenv(envTestHandoverDelay)); err == nil {
			testHandoverDelay = d
		}
		if d, err := time.ParseDuration(os.Getenv(envTestTakeoverDelay)); err == nil {
			testTakeoverDelay = d
		}
		if err := supervise(context.Background(), os.Args[2], swapHook(os.Getenv(envSwap))); err != nil {
			fmt.Fprintln(os.Stderr, "wick:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 2 && os.Args[1] == helperVerb {
		os.Exit(helper(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// helper runs a replica program:
//
//	lines N       N lines of 50 bytes on stdout, as fast as possible
//	bigline       a 10 MB line, binary garbage, and a last line without newline
//	ticks N MS    N lines "tick <unix nanos>", one every MS milliseconds
//	burn MB       hold MB MiB of touched memory and keep a core busy, for 2 minutes
//	counted FILE  seq's lines (1, 2, ...) in 4 KiB writes, as fast as possible, until
//	              killed; after each write returns, the number of its last whole line
//	              is stored in FILE (8 bytes, shared memory: it survives a SIGKILL)
func helper(name string, args []string) int {
	switch name {
	case "counted":
		return counted(args[0])
	case "lines":
		n, _ := strconv.Atoi(args[0])
		w := bufio.NewWriterSize(os.Stdout, 256<<10)
		writeLines(w, n)
		w.Flush()
	case "bigline":
		os.Stdout.Write(bigOutput())
	case "ticks":
		n, _ := strconv.Atoi(args[0])
		ms, _ := strconv.Atoi(args[1])
		for range n {
			time.Sleep(time.Duration(ms) * time.Millisecond)
			fmt.Printf("tick %d\n", time.Now().UnixNano())
		}
	case "burn":
		burn(args)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", name)
		return 2
	}
	return 0
}

// counted is the helper "counted".
func counted(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil || f.Truncate(8) != nil {
		return 1
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return 1
	}
	buf := make([]byte, 0, 4096+32)
	next, whole := 1, 0
	for {
		for len(buf) < 4096 {
			buf = strconv.AppendInt(buf, int64(next), 10)
			buf = append(buf, '\n')
			next++
		}
		// A write of one page to a pipe is whole or nothing.
		if _, err := os.Stdout.Write(buf[:4096]); err != nil {
			return 1
		}
		whole += bytes.Count(buf[:4096], []byte{'\n'})
		binary.LittleEndian.PutUint64(mem, uint64(whole))
		buf = append(buf[:0], buf[4096:]...)
	}
}

// writeLines writes n lines of exactly 50 bytes.
func writeLines(w io.Writer, n int) {
	line := []byte("line 0000000 ......................................\n")[:50]
	line[49] = '\n'
	for i := range n {
		v := i
		for j := 11; j >= 5; j-- {
			line[j] = byte('0' + v%10)
			v /= 10
		}
		w.Write(line)
	}
}

// bigOutput is a 10 MB line, 1 MB of random bytes, and a line without a newline.
func bigOutput() []byte {
	var b []byte
	b = append(b, "first\n"...)
	for len(b) < 10<<20 {
		b = append(b, "0123456789abcdef"...)
	}
	b = append(b, '\n')
	garbage := make([]byte, 1<<20)
	rand.Read(garbage)
	// Fixed seed would be nicer, but any bytes must do.
	b = append(b, garbage...)
	b = append(b, "\nlast line, no newline"...)
	return b
}

// testScheduler returns a local_cwd (or local_dir) scheduler with its own state
// directory, whose supervisor is this test binary.
func testScheduler(t testing.TB, dir bool) *Scheduler {
	t.Helper()
	cfg := sched.Config{Session: "test", StateDir: t.TempDir(), Self: []string{os.Args[0]}}
	s, err := newScheduler(NameCwd, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Before the temporary directory goes (cleanups run last first): an ended app's
	// supervisor still puts SUCCESS in place and ends the logs after the final state
	// that Wait returned on, as `wick delete` knows (it waits for the supervisor).
	t.Cleanup(func() { awaitEndedSupervisors(t, cfg.StateDir) })
	if dir {
		s.name = NameDir
	}
	return s
}

// awaitEndedSupervisors waits, for a while, for the supervisor of every app under
// stateDir whose state is final to exit. Supervisors of apps still running are the
// test's to stop.
func awaitEndedSupervisors(t testing.TB, stateDir string) {
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	_ = filepath.WalkDir(stateDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != stateFile {
			return nil
		}
		st, err := readState(filepath.Dir(path))
		if err != nil || !st.State.Terminal() {
			return nil
		}
		for st.Supervisor.Alive() {
			if time.Now().After(deadline) {
				t.Logf("%s: its supervisor (pid %d) has not exited", filepath.Dir(path), st.Supervisor.PID)
				return filepath.SkipAll
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	})
}

func role(name, entry string, args ...string) spec.Role {
	return spec.NewRole(name, "unused", entry, args...)
}

func appOf(name string, roles ...spec.Role) *spec.AppDef {
	return &spec.AppDef{Name: name, Roles: roles}
}

// start dry-runs and schedules app, returning its id.
func start(t testing.TB, s *Scheduler, app *spec.AppDef, cfg spec.Cfg) string {
	t.Helper()
	info := dryRun(t, s, app, cfg)
	if err := s.Schedule(context.Background(), info, nil); err != nil {
		t.Fatal(err)
	}
	return info.AppID
}

func dryRun(t testing.TB, s *Scheduler, app *spec.AppDef, cfg spec.Cfg) *sched.DryRunInfo {
	t.Helper()
	resolved, err := s.RunOpts().Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sub := sched.Submission{AppID: spec.MakeAppID(app.Name), Session: s.cfg.Session, App: app, Cfg: resolved}
	req, err := s.DryRun(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	return &sched.DryRunInfo{Scheduler: s.name, Submission: sub, Request: req}
}

func waitApp(t testing.TB, s *Scheduler, id string) *spec.AppStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	st, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait %s: %v", id, err)
	}
	return st
}

// waitState waits until the app's state satisfies cond.
func waitState(t testing.TB, s *Scheduler, id string, cond func(*spec.AppStatus) bool) *spec.AppStatus {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(20 * time.Second))
	for {
		d, err := s.Describe(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(&d.Status) {
			return &d.Status
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out; state %s %+v", d.Status.State, d.Status.Roles)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func allRunning(st *spec.AppStatus) bool {
	running, total := st.Replicas()
	return st.State == spec.Running && running == total
}

func replicaOf(t testing.TB, st *spec.AppStatus, role string, k int) spec.ReplicaStatus {
	t.Helper()
	for _, r := range st.Roles {
		if r.Role == role && k < len(r.Replicas) {
			return r.Replicas[k]
		}
	}
	t.Fatalf("no replica %s/%d in %+v", role, k, st.Roles)
	return spec.ReplicaStatus{}
}

// logLines reads every line of a replica (following until it ends).
// logLines reads the lines of a replica; a line too long to be yielded whole (cut)
// is read whole through its Full reader, as the raw views print it.
func logLines(t testing.TB, s *Scheduler, id, role string, k int, opts sched.LogOptions) []sched.Line {
	t.Helper()
	it, err := s.Logs(context.Background(), id, role, k, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	var out []sched.Line
	for {
		l, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Full != nil {
			b, err := io.ReadAll(l.Full)
			if err != nil {
				t.Fatal(err)
			}
			l.Text, l.Full = string(b), nil
		}
		out = append(out, l)
	}
}

func lineTexts(lines []sched.Line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func replicaLogDir(t testing.TB, s *Scheduler, id, role string, k int) string {
	t.Helper()
	l, err := readLaunch(filepath.Join(s.appsDir(), id))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Request.Roles {
		if r.Name == role {
			return r.Replicas[k].LogDir
		}
	}
	t.Fatalf("no role %s", role)
	return ""
}
