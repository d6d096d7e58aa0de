package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestLogFilters runs an app writing to both streams at two moments and reads its logs
// back through every filter of wick log.
func TestLogFilters(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "sh", "-c", "echo out1; sleep 0.1; echo err1 >&2; sleep 0.3; echo out2; sleep 0.1; echo err2 >&2")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)

	all := h.exec("log", "--json", handle)
	var lines []sched.Line
	for _, s := range strings.Split(strings.TrimSpace(all.stdout), "\n") {
		var l sched.Line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("--json line %q: %v", s, err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got %+v", lines)
	}
	streams := map[string]sched.Stream{}
	for _, l := range lines {
		streams[l.Text] = l.Stream
		if l.Role != "sh" || l.Replica != 0 || l.Time.IsZero() {
			t.Errorf("line %+v lacks its role, replica or time", l)
		}
	}
	if streams["out1"] != sched.Stdout || streams["err2"] != sched.Stderr {
		t.Errorf("streams: %v", streams)
	}
	// Sleeps keep the lines apart in time: 100 ms within a half, 300 ms between halves.
	mid := lines[1].Time.Add(200 * time.Millisecond).Format(time.RFC3339Nano)

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"combined in order", nil, "sh/0 out1\nsh/0 err1\nsh/0 out2\nsh/0 err2\n"},
		{"stderr only", []string{"--streams", "stderr"}, "sh/0 err1\nsh/0 err2\n"},
		{"stdout only", []string{"--streams", "stdout"}, "sh/0 out1\nsh/0 out2\n"},
		{"regex", []string{"--regex", "^out"}, "sh/0 out1\nsh/0 out2\n"},
		{"since", []string{"--since", mid}, "sh/0 out2\nsh/0 err2\n"},
		{"until", []string{"--until", mid}, "sh/0 out1\nsh/0 err1\n"},
		{"last line", []string{"-n", "1"}, "sh/0 err2\n"},
		{"follow of an ended app ends", []string{"-t", "--no-prefix"}, "out1\nerr1\nout2\nerr2\n"},
		{"role and replica", []string{"--no-prefix"}, "out1\nerr1\nout2\nerr2\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := handle
			if c.name == "role and replica" {
				id += "/sh/0"
			}
			r := h.exec(append(append([]string{"log"}, c.args...), id)...)
			if r.code != 0 || r.stdout != c.want {
				t.Errorf("exit %d, stdout %q, want %q (stderr %s)", r.code, r.stdout, c.want, r.stderr)
			}
		})
	}
	ts := h.exec("log", "--timestamps", "--streams", "stdout", handle)
	first := strings.SplitN(ts.stdout, " ", 2)[0]
	if at, err := time.Parse(time.RFC3339Nano, first); err != nil || !at.Equal(lines[0].Time.Truncate(time.Millisecond)) {
		t.Errorf("--timestamps prefix %q (%v), want the time of the first line %v", first, err, lines[0].Time)
	}
	if r := h.exec("log", handle+"/nope"); r.code != 1 || !strings.Contains(r.stderr, `no role "nope"`) {
		t.Errorf("unknown role: %d %s", r.code, r.stderr)
	}
	if r := h.exec("log", handle+"/sh/3"); r.code != 1 || !strings.Contains(r.stderr, "no replica 3") {
		t.Errorf("unknown replica: %d %s", r.code, r.stderr)
	}
}

// TestLogRawCopyMatchesLines: printing a stored log as it is (no filter) gives exactly
// what printing it line by line gives, progress bars and a last line without newline
// included.
func TestLogRawCopyMatchesLines(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "sh", "-c", `printf 'step 1\n\r 10%%\r 50%%\r100%%\nwarn\n' ; printf 'no newline'`)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	raw := h.exec("log", handle)
	lines := h.exec("log", "--regex", "", "--streams", "combined", "--since", "2000-01-01T00:00:00Z", handle)
	want := "sh/0 step 1\nsh/0  10%\rsh/0  50%\rsh/0 100%\nsh/0 warn\nsh/0 no newline\n"
	if raw.stdout != want {
		t.Errorf("raw copy:\n%q\nwant\n%q", raw.stdout, want)
	}
	if lines.stdout != raw.stdout {
		t.Errorf("line by line:\n%q\nraw:\n%q", lines.stdout, raw.stdout)
	}
}

// TestLogOfReplicasMergedByRunsMatchesLines: wick log of several replicas, printed a
// run of lines at a time, is what printing their merged lines one by one gives.
func TestLogOfReplicasMergedByRunsMatchesLines(t *testing.T) {
	h := newHarness(t)
	script := `for i in 1 2 3; do printf "out $WICK_REPLICA_ID.$i\n"; printf "err $WICK_REPLICA_ID.$i\n" >&2; sleep 0.05; done; ` +
		`printf '\r 10%%\r 50%%\r100%%\r\n'; seq 1 20000; head -c 300000 /dev/zero | tr '\0' x; printf '\nno newline'`
	r := h.exec("run", "utils.sh", "--num_replicas", "3", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	runs := h.exec("log", handle)
	lines := h.exec("log", "--since", "2000-01-01T00:00:00Z", handle)
	if runs.code != 0 || lines.code != 0 {
		t.Fatalf("log: %d %s; %d %s", runs.code, runs.stderr, lines.code, lines.stderr)
	}
	if runs.stdout != lines.stdout {
		a, b := strings.Split(runs.stdout, "\n"), strings.Split(lines.stdout, "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("line %d: by runs %q, line by line %q", i, a[i], b[i])
			}
		}
		t.Fatalf("by runs %d lines, line by line %d", len(a), len(b))
	}
	for _, want := range []string{"sh/0 out 0.1\n", "sh/2 err 2.3\n", "sh/1 20000\n", "sh/1 no newline\n", "sh/0  10%\rsh/0  50%\rsh/0 100%\n"} {
		if !strings.Contains(runs.stdout, want) {
			t.Errorf("no %q in the log", want)
		}
	}
}

// opens counts the files opened in a directory, by name, from the kernel's own
// account (inotify IN_OPEN), whatever process opens them.
type opens struct {
	t  *testing.T
	fd int
}

func watchOpens(t *testing.T, dir string) *opens {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	return &opens{t, fd}
}

// take returns the opens by file name since the last call. The events of a command
// that has exited are all queued.
func (o *opens) take() map[string]int {
	n := map[string]int{}
	buf := make([]byte, 64<<10)
	for {
		k, err := unix.Read(o.fd, buf)
		if err == unix.EAGAIN || k <= 0 {
			return n
		}
		if err != nil {
			o.t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			n[string(bytes.TrimRight(name, "\x00"))]++
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// TestLogReadsTheStateOnce: wick log reads the app's state.json and launch.json once
// each, whichever way it prints: the state it describes the app with also serves to
// open the logs.
func TestLogReadsTheStateOnce(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "--num_replicas", "2", "--", "sh", "-c", "echo out; echo err >&2")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	id, err := spec.ParseHandle(handle)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.home, "local", "apps", id.AppID)
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	o := watchOpens(t, dir)
	for _, args := range [][]string{
		{handle + "/sh/0"}, // one replica: the stored file, copied
		{handle},           // every replica, merged
		{"--json", handle}, // line by line
		{"-t", handle},     // followed (the app has ended)
		{"--regex", "out", handle + "/sh/1"},
	} {
		r := h.exec(append([]string{"log"}, args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "out") {
			t.Errorf("log %v: %d %q %s", args, r.code, r.stdout, r.stderr)
		}
		if n := o.take(); n["state.json"] != 1 || n["launch.json"] != 1 {
			t.Errorf("log %v opened state.json %d times and launch.json %d times, want once each", args, n["state.json"], n["launch.json"])
		}
	}
}
