package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/pystack"
	"github.com/wick-dev/wick/internal/testkit"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/spec"
)

// failuresHarness copies the scripts of examples/failures (real training scripts that
// fail or hang, shaped like pytorch/examples' DDP scripts, without @record) into the
// harness's work directory, and puts a python that has torch (/usr/bin/python3) first
// on PATH, for utils.python.
func failuresHarness(t *testing.T) *harness {
	t.Helper()
	needTorch(t)
	h := newHarness(t)
	dir := filepath.Join("..", "..", "examples", "failures")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".py") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.work, e.Name()), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(h.work, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/python3", filepath.Join(bin, "python")); err != nil {
		t.Fatal(err)
	}
	h.cmdEnv = append(h.cmdEnv, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return h
}

// failureCase is a failing example and the one line a user sees of it.
type failureCase struct {
	name string
	args []string
	want string
	// where is the end of describe's "at:" line (the innermost frame), "" for none.
	where string
}

func failArgs(j, script string, extra ...string) []string {
	args := []string{"run", "-s", "local_cwd", "dist.ddp", "-j", j, "--tee", "1", "--env", "PET_REDIRECTS=1", "--script", script}
	if len(extra) > 0 {
		args = append(append(args, "--"), extra...)
	}
	return args
}

func pythonArgs(script string) []string {
	return []string{"run", "-s", "local_cwd", "utils.python", "--script", script}
}

// TestFailuresNamed runs each failing example of examples/failures for real (torch
// 1.13, gloo) and checks the one line a user sees of its failure, the first failure
// whatever its kind, in the attached run's last line, wick status (with the innermost
// frame), describe --json and wick list's ERROR column; a collective's timeout is named
// as such.
func TestFailuresNamed(t *testing.T) {
	t.Parallel()
	h := failuresHarness(t)
	for _, tc := range []failureCase{
		{"raise", pythonArgs("raise_plain.py"), "python/0: ValueError: boom at step 3", "raise_plain.py:20 in train_step"},
		{"loader_raise", pythonArgs("loader_raise.py"), "python/0: ValueError: corrupt sample 81 in shard 1", "loader_raise.py:24 in __getitem__"},
		{"loader_killed", pythonArgs("loader_killed.py"), "python/0: RuntimeError: DataLoader worker (pid ", "signal_handling.py:66 in handler"},
		{"segfault", pythonArgs("segfault.py"), "python/0: killed by SIGSEGV", ""},
		{"exit_rank", failArgs("1x2", "exit_rank.py", "--exit_rank", "1"), "rank 1: exit code 3", ""},
		{"segfault_rank", failArgs("1x2", "segfault.py", "--rank", "1"), "rank 1: killed by SIGSEGV", ""},
		// Rank 1 sleeps before all_reduce and the process group's timeout is 5 s: rank
		// 0's all_reduce raises gloo's "Timed out waiting 5000ms for recv operation to
		// complete" (gloo/transport/tcp/unbound_buffer.cc), on one node (torchrun then
		// stops rank 1 with SIGTERM) and on two (the scheduler stops node 1).
		{"gloo_timeout", failArgs("1x2", "hang.py", "--stuck_rank", "1", "--timeout", "5"), "rank 0: collective timeout (all_reduce after 5000 ms)", "distributed_c10d.py:1541 in all_reduce"},
		{"gloo_timeout_2x1", failArgs("2x1", "hang.py", "--stuck_rank", "1", "--timeout", "5"), "rank 0: collective timeout (all_reduce after 5000 ms)", "distributed_c10d.py:1541 in all_reduce"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := execLong(h, tc.args...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
			}
			if tc.name == "loader_killed" {
				tc = loaderKilledVariant(t, tc, r.stderr)
			}
			if got := lastLine(r.stderr); !strings.HasPrefix(got, "wick: "+tc.want) {
				t.Errorf("the attached run ends with %q, want %q; its stderr:\n%s", got, "wick: "+tc.want, r.stderr)
			}
			handle := failedHandle(t, h, r)
			checkFailure(t, h, handle, tc)
		})
	}
}

// loaderKilledVariant is the case of loader_killed for what torch printed this time.
// torch says the worker was killed from its SIGCHLD handler ("is killed by signal"),
// while the main process waits on the worker's queue; wick names that whatever the
// queue said first. When the signal comes late, the queue's own error is all there is,
// and the cause wick must name: its traceback ends with it ("Connection reset by peer"
// or multiprocessing's bare EOFError, in _recv), or, when the handler raised while
// Python printed it (under load, about 1 run in 2 through wick's pipes), CPython's
// dump of it ("object repr     : ...") and "lost sys.stderr", the frame the last one
// printed before the printing failed, if any. Any other output fails the test.
func loaderKilledVariant(t *testing.T, tc failureCase, stderr string) failureCase {
	t.Helper()
	const reset = "ConnectionResetError: [Errno 104] Connection reset by peer"
	var out []string // the replica's lines
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "python/0 "); ok {
			out = append(out, rest)
		}
	}
	switch {
	case strings.Contains(stderr, "is killed by signal"):
		return tc
	case len(out) > 0 && strings.HasPrefix(out[len(out)-1], "RuntimeError: DataLoader worker (pid(s) ") && strings.HasSuffix(out[len(out)-1], ") exited unexpectedly"):
		// The queue's read failed first (the worker's socket refused or reset), and
		// dataloader.py raised its own "exited unexpectedly" from it, before any
		// SIGCHLD handler spoke: that names the dead worker, so it is the cause.
		t.Logf("torch said the worker exited unexpectedly: that is the cause")
		tc.want, tc.where = "python/0: RuntimeError: DataLoader worker (pid(s) ", "dataloader.py:1133 in _try_get_data"
		return tc
	case len(out) > 0 && (out[len(out)-1] == reset || out[len(out)-1] == "EOFError"):
		t.Logf("torch never said the worker was killed: the queue's error is the cause")
		tc.want, tc.where = "python/0: "+out[len(out)-1], " in _recv"
		return tc
	case len(out) > 0 && out[len(out)-1] == "lost sys.stderr":
		dumped := map[string]string{
			"object repr     : ConnectionResetError(104, 'Connection reset by peer')": reset,
			"object repr     : EOFError()":                                            "EOFError",
		}
		want, where := "", ""
		for _, l := range out {
			if k := strings.Index(l, "object address  : "); k > 0 {
				l = l[:k] // the dump's first line, glued to the line the printing failed in
			}
			if what, ok := dumped[l]; ok {
				want = "python/0: " + what
			}
			// The innermost frame printed: its function ends the status's "at:" line.
			if m := frameLine.FindStringSubmatch(l); m != nil {
				where = " in " + m[1]
			}
		}
		if want != "" {
			t.Logf("Python lost sys.stderr printing the queue's error: the dumped error is the cause")
			tc.want, tc.where = want, where
			return tc
		}
	}
	t.Fatalf("loader_killed printed what this test does not know:\n%s", stderr)
	return tc
}

// frameLine is a frame line of a Python traceback; its group is the function.
var frameLine = regexp.MustCompile(`^  File "[^"]*", line \d+, in (\S+)$`)

// failedHandle is the handle an attached run printed ("wick: HANDLE FAILED").
func failedHandle(t *testing.T, h *harness, r result) string {
	t.Helper()
	for _, l := range strings.Split(r.stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "wick: "); ok && strings.HasSuffix(rest, " FAILED") && strings.Contains(rest, "://") {
			return strings.TrimSuffix(rest, " FAILED")
		}
	}
	t.Fatalf("no handle in:\n%s", r.stderr)
	return ""
}

// checkFailure checks what status, describe --json and list show of a failed app.
func checkFailure(t *testing.T, h *harness, handle string, tc failureCase) {
	t.Helper()
	st := h.exec("status", handle)
	if !strings.Contains(st.stdout, "error:    "+tc.want) {
		t.Errorf("wick status:\n%s", st.stdout)
	}
	if tc.where != "" && !strings.Contains(st.stdout, tc.where+"\n") {
		t.Errorf("wick status has no %q:\n%s", tc.where, st.stdout)
	}
	var js struct {
		Status spec.AppStatus `json:"status"`
	}
	dj := h.exec("describe", "--json", handle)
	if err := json.Unmarshal([]byte(dj.stdout), &js); err != nil || !strings.HasPrefix(spec.ErrorMessage(js.Status.StructuredError), tc.want) || !strings.HasPrefix(js.Status.Msg, tc.want) {
		t.Errorf("describe --json: %v %q %q", err, spec.ErrorMessage(js.Status.StructuredError), js.Status.Msg)
	}
	if l := h.exec("list"); !strings.Contains(l.stdout, "  "+tc.want) {
		t.Errorf("wick list's ERROR column:\n%s", l.stdout)
	}
	if tc.where != "" && !strings.HasSuffix(ranks.Where(js.Status.StructuredError), tc.where) {
		t.Errorf("describe --json's where: %q", ranks.Where(js.Status.StructuredError))
	}
}

// TestNodeFailureEndsTheApp: node 1 of a 2x1 dist.ddp job fails to import a module
// (its worker raises ModuleNotFoundError), while node 0's worker waits for it in
// init_process_group. torch's agent on node 1 then waits in its exit barrier (300 s)
// before it says anything more; wick fails the app at once, with node 1's cause, and
// stops node 0: node 1's torchrun never got to print its failure summary.
func TestNodeFailureEndsTheApp(t *testing.T) {
	t.Parallel()
	h := failuresHarness(t)
	tc := failureCase{"import_error", failArgs("2x1", "import_error.py"), "rank 1: ModuleNotFoundError: No module named 'apex_fused_adam_missing'", "import_error.py:18 in <module>"}
	r := execLong(h, tc.args...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if got := lastLine(r.stderr); got != "wick: "+tc.want {
		t.Errorf("the attached run ends with %q, want %q", got, "wick: "+tc.want)
	}
	if strings.Contains(r.stderr, "Root Cause (first observed failure)") {
		t.Errorf("a node's torchrun got past its exit barrier: wick waited for it\n%s", r.stderr)
	}
	handle := failedHandle(t, h, r)
	checkFailure(t, h, handle, tc)
	// The node of rank 1 is FAILED with the cause, the other CANCELLED.
	states := map[spec.AppState]int{}
	for _, rep := range h.status(handle).Roles[0].Replicas {
		states[rep.State]++
		if rep.State == spec.Failed && spec.ErrorMessage(rep.StructuredError) != tc.want {
			t.Errorf("the failed node's error: %q", rep.StructuredError)
		}
	}
	if states[spec.Failed] != 1 || states[spec.Cancelled] != 1 {
		t.Errorf("replica states %v, want one FAILED, one CANCELLED", states)
	}
}

// BenchmarkNodeFailureToFailed measures, on dist.ddp -j 2x1 with node 1's worker
// failing to import a module (examples/failures/import_error.py), the time from the
// worker's exception (the time its line was read) to the app's end as FAILED: the
// figure of "a node that failed ends the app now" (torch's agent alone would wait in
// its exit barrier, 300 s, before it exits):
//
//	go test ./tui/cli -run '^$' -bench NodeFailureToFailed -benchtime 3x
func BenchmarkNodeFailureToFailed(b *testing.B) {
	if exec.Command("/usr/bin/python3", "-c", "import torch.distributed").Run() != nil {
		b.Skip("no torch for /usr/bin/python3")
	}
	dir := b.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "failures", "import_error.py"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "import_error.py"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
	wick := func(args ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(ddpTimeout))
		defer cancel()
		cmd := exec.CommandContext(ctx, builtWick, args...)
		cmd.Dir, cmd.Env = dir, env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return out.String(), errb.String()
	}
	var fromLine, fromNode time.Duration
	seen := 0
	for range b.N {
		_, stderr := wick(failArgs("2x1", "import_error.py")...)
		handle := ""
		for _, l := range strings.Split(stderr, "\n") {
			if rest, ok := strings.CutPrefix(l, "wick: "); ok && strings.HasSuffix(rest, " FAILED") {
				handle = strings.TrimSuffix(rest, " FAILED")
			}
		}
		if handle == "" {
			b.Fatalf("no failure:\n%s", stderr)
		}
		out, _ := wick("status", "--json", handle)
		var st spec.AppStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			b.Fatal(err)
		}
		logs, _ := wick("log", "--json", handle+"/import_error")
		var failedAt time.Time
		for _, l := range strings.Split(logs, "\n") {
			var line struct {
				Time time.Time `json:"time"`
				Text string    `json:"text"`
			}
			if json.Unmarshal([]byte(l), &line) == nil && strings.HasPrefix(line.Text, "ModuleNotFoundError: ") && (failedAt.IsZero() || line.Time.Before(failedAt)) {
				failedAt = line.Time
			}
		}
		if failedAt.IsZero() || st.Ended.IsZero() {
			b.Fatalf("no failure line or end:\n%s", logs)
		}
		fromLine += st.Ended.Sub(failedAt)
		// When the supervisor saw the node fail (its worker's exit), from its log.
		slog, _ := os.ReadFile(filepath.Join(dir, "state", "local", "apps", handle[strings.LastIndexByte(handle, '/')+1:], "supervisor.log"))
		for _, l := range strings.Split(string(slog), "\n") {
			if ts, _, ok := strings.Cut(l, " "); ok && strings.Contains(l, "its workers failed") {
				if at, err := time.Parse(time.RFC3339Nano, ts); err == nil {
					fromNode += st.Ended.Sub(at)
					seen++
				}
			}
		}
	}
	b.ReportMetric(float64(fromLine.Milliseconds())/float64(b.N), "ms-exception-to-FAILED")
	if seen > 0 {
		b.ReportMetric(float64(fromNode.Milliseconds())/float64(seen), "ms-node-failed-to-FAILED")
	}
}

// TestStackOfAHang: rank 1 of a 1x2 DDP job sleeps for ever before its all_reduce
// (examples/failures/hang.py), rank 0 waits in it. wick stack names where each is.
func TestStackOfAHang(t *testing.T) {
	t.Parallel()
	h := failuresHarness(t)
	tool, err := pystack.Find()
	if err != nil {
		t.Skip(err)
	}
	if tool.Name == "gdb" {
		if _, err := os.Stat("/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py"); err != nil {
			t.Skip("gdb without CPython's extension (apt-get install python3-dbg)")
		}
	}
	r := h.exec(append([]string{"run", "--detach"}, failArgs("1x2", "hang.py")[1:]...)...)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := handleOf(t, r)
	defer h.exec("cancel", handle)
	// Rank 0 prints its steps until it waits for rank 1, which stops at step 3
	// without printing it: rank 0's "step 3" is printed once rank 1 has left step
	// 2's all_reduce for its last sleep (0.2 s) before slow_io. (At "step 2" both
	// were still stepping: three quick looks all found them in that sleep.)
	deadline := time.Now().Add(testkit.Scale(ddpTimeout))
	for !strings.Contains(h.exec("log", handle+"/hang").stdout, "step 3 loss") {
		if time.Now().After(deadline) {
			t.Fatal("the job never got to step 3")
		}
		time.Sleep(500 * time.Millisecond)
	}
	var out string
	// A sample may come while rank 0 is between its step's print and its
	// all_reduce, or rank 1 still in its sleep, or time out on a loaded machine:
	// up to three looks, a second apart.
	for try := range 3 {
		if try > 0 {
			time.Sleep(time.Second)
		}
		out = execLong(h, "stack", handle).stdout
		if strings.Contains(out, "rank 1: slow_io in hang.py:") && strings.Contains(out, "rank 0: all_reduce in distributed_c10d.py:") {
			return
		}
	}
	t.Errorf("wick stack:\n%s", out)
}
