package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// c10dApp describes a -j 2x2 c10d app whose status gives the group ranks in groups
// (nil: not known yet).
func c10dApp(groups ...*int) *sched.Description {
	d := &sched.Description{App: &spec.AppDef{Name: "ddp", Roles: []spec.Role{
		{Name: "train", Entrypoint: "bash", Args: []string{"-c", "torchrun --rdzv_backend c10d --nnodes 2 --nproc_per_node=2 train.py"}, NumReplicas: 2},
	}}}
	d.Status.State = spec.Running
	rs := spec.RoleStatus{Role: "train"}
	for k, g := range groups {
		rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{ID: k, Role: "train", GroupRank: g})
	}
	d.Status.Roles = []spec.RoleStatus{rs}
	return d
}

// `wick log --rank N` does not guess the ranks of a c10d node whose group rank is not
// known yet (node k need not be group rank k): its workers' lines wait until a newer
// status tells, then pass as that rank's; those still unknown at the end are printed
// named by their node, not lost, and a warning says how many of which node.
func TestRankFilterWaitsForTheGroupRank(t *testing.T) {
	fresh := make(chan *sched.Description, 1)
	var got []string
	emit := func(l sched.Line) error {
		got = append(got, "train/"+strconv.Itoa(l.Replica)+" "+l.Text)
		return nil
	}
	named := func(name string, l sched.Line) error {
		got = append(got, name+" "+l.Text)
		return nil
	}
	rf := newRankFilter(c10dApp(nil, nil), []int{0}, fresh, emit, named)
	feed := func(k int, text string) {
		t.Helper()
		if err := rf.line(sched.Line{Role: "train", Replica: k, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	feed(0, "[0]:epoch 0 loss 2.5") // rank 2: node 0 is group rank 1
	feed(1, "[0]:epoch 0 loss 0.5") // rank 0
	if len(got) != 0 {
		t.Fatalf("passed before the group ranks were known: %q", got)
	}
	fresh <- c10dApp(spec.IntPtr(1), nil) // node 0 learned; node 1 not yet
	feed(0, "[0]:epoch 1 loss 2.4")
	if len(got) != 0 {
		t.Fatalf("node 0 is rank 2 and 3, yet %q passed", got)
	}
	fresh <- c10dApp(spec.IntPtr(1), spec.IntPtr(0))
	if err := rf.idle(func() error { return nil })(); err != nil {
		t.Fatal(err)
	}
	feed(1, "[0]:epoch 1 loss 0.4")
	if want := []string{"train/1 [0]:epoch 0 loss 0.5", "train/1 [0]:epoch 1 loss 0.4"}; !slices.Equal(got, want) {
		t.Errorf("--rank 0 printed %q, want %q", got, want)
	}

	// Still unknown at the end: printed by node, and said in one line.
	got = nil
	rf = newRankFilter(c10dApp(nil, nil), []int{0}, nil, emit, named)
	feed(1, "[0]:epoch 0 loss 0.5")
	feed(0, "[1]:epoch 0 loss 3.5")
	feed(1, "[1]:epoch 0 loss 1.5")
	var warn strings.Builder
	if err := rf.finish(c10dApp(nil, nil), &warn, spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "ddp-1"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"train/1:0 [0]:epoch 0 loss 0.5", "train/0:1 [1]:epoch 0 loss 3.5", "train/1:1 [1]:epoch 0 loss 1.5"}; !slices.Equal(got, want) {
		t.Errorf("held lines at the end: %q, want %q", got, want)
	}
	if w := warn.String(); strings.Count(w, "\n") != 1 ||
		!strings.Contains(w, "1 lines of local_cwd://wick/ddp-1/train/0, 2 lines of local_cwd://wick/ddp-1/train/1 printed named by node") ||
		!strings.Contains(w, "group rank was not known yet") {
		t.Errorf("warned %q", w)
	}

	// A description the refresh handed over but nobody took yet still counts at
	// the end (an interrupted follow asks for none).
	got = nil
	fresh = make(chan *sched.Description, 1)
	rf = newRankFilter(c10dApp(nil, nil), []int{0}, fresh, emit, named)
	feed(1, "[0]:epoch 0 loss 0.5")
	fresh <- c10dApp(spec.IntPtr(1), spec.IntPtr(0))
	warn.Reset()
	if err := rf.finish(nil, &warn, spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "ddp-1"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"train/1 [0]:epoch 0 loss 0.5"}; !slices.Equal(got, want) || warn.Len() != 0 {
		t.Errorf("with the ranks handed over: %q, warned %q", got, warn.String())
	}
}

// TestRankFilterHeldBound: the lines held for their node's rank take at most the
// filter's bound, many short lines as well as long ones; past it the oldest go out
// at once, named by their node, in order, and none is lost.
func TestRankFilterHeldBound(t *testing.T) {
	var out []string
	rf := newRankFilter(c10dApp(nil, nil), []int{0}, nil, func(l sched.Line) error {
		t.Errorf("%q passed as a rank's: no rank is known", l.Text)
		return nil
	}, func(name string, l sched.Line) error {
		out = append(out, l.Text)
		return nil
	})
	rf.limit = 64 << 10
	const n = 20000 // short lines: 20000 Lines are far over 64 KiB
	for i := range n {
		if err := rf.line(sched.Line{Role: "train", Replica: i % 2, Text: "[0]:" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		if rf.heldBytes > rf.limit {
			t.Fatalf("after %d lines %d bytes held, bound %d", i+1, rf.heldBytes, rf.limit)
		}
	}
	if len(rf.held) == 0 || len(out) == 0 {
		t.Fatalf("held %d, out early %d: the bound was not reached", len(rf.held), len(out))
	}
	var warn strings.Builder
	if err := rf.finish(nil, &warn, spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "ddp-1"}); err != nil {
		t.Fatal(err)
	}
	if len(out) != n {
		t.Fatalf("%d of %d lines printed", len(out), n)
	}
	for i, text := range out {
		if text != "[0]:"+strconv.Itoa(i) {
			t.Fatalf("line %d is %q: out of order", i, text)
		}
	}
	if !strings.Contains(warn.String(), "10000 lines of local_cwd://wick/ddp-1/train/0, 10000 lines of local_cwd://wick/ddp-1/train/1 printed named by node") {
		t.Errorf("warned %q", warn.String())
	}
}

// pendingTorchrun stands for torchrun on a c10d node of a -j 2x2 app: node 1 prints
// its rendezvous (group rank 0, ranks 0 and 1), waits for the file $GO, then prints a
// line of rank 0; node 0 prints a line of each of its workers and never says its
// group rank (no rendezvous block, no worker with GROUP_RANK for the supervisor to
// read), so that its lines stay held by a rank filter.
const pendingTorchrun = `#!/bin/sh
case "$TORCHELASTIC_ERROR_FILE" in
*/0/error.json)
	echo "[0]:held line of node 0 worker 0"
	echo "[1]:held line of node 0 worker 1"
	;;
*)
	printf 'INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:\n  restart_count=0\n  group_rank=0\n  group_world_size=2\n  local_ranks=[0, 1]\n  global_ranks=[0, 1]\n\n' >&2
	while [ ! -e "$GO" ]; do sleep 0.05; done
	echo "[0]:rank 0 once known"
	;;
esac
exec sleep 300
`

// TestLogRankFollowInterruptedKeepsHeldLines: Ctrl-C (or SIGTERM) of `wick log --rank
// 0 -f` while it holds lines of a node whose group rank is not known yet prints them
// before wick ends, named by node as `wick metrics` names it (train/0:1), with one
// line on stderr saying their rank was not known; wick still ends by the signal, as
// an interrupted follow always did. Before, they were dropped without a word.
func TestLogRankFollowInterruptedKeepsHeldLines(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			h := newHarness(t)
			if err := os.WriteFile(filepath.Join(h.work, "torchrun"), []byte(pendingTorchrun), 0o755); err != nil {
				t.Fatal(err)
			}
			goFile := filepath.Join(h.work, "go")
			r := h.exec("run", "--detach", "-s", "local_cwd", "-cfg", "prepend_cwd=true", "dist.ddp", "-j", "2x2",
				"--env", "GO="+goFile, "--script", "train.py")
			if r.code != 0 {
				t.Fatalf("run: exit %d: %s", r.code, r.stderr)
			}
			handle := strings.TrimSpace(r.stdout)
			t.Cleanup(func() { h.exec("cancel", handle) })
			// Node 0's lines are in its log before the follower starts: it reads
			// them first (the merge gives lines in time order).
			waitLog(t, h, handle+"/train/0", "[1]:held line of node 0 worker 1")

			ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
			defer cancel()
			cmd := h.wickCmd(ctx, "log", handle+"/train", "--rank", "0", "-f")
			var out syncBuffer
			var errb syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(goFile, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			// Rank 0's line, later than node 0's, is printed: node 0's are held.
			testkit.Wait(t, 30*time.Second, "the follower printing rank 0's line", func() (bool, string) {
				return strings.Contains(out.String(), "rank 0 once known"), fmt.Sprintf("%q %q", out.String(), errb.String())
			})
			if strings.Contains(out.String(), "held line") {
				t.Fatalf("a held line was printed before the interrupt:\n%s", out.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			ee, ok := err.(*exec.ExitError)
			if ws, wsOK := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !wsOK || !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("wick log -f ended with %v (%v), want killed by %v as before", err, ee, sig)
			}
			want := "train/1 [0]:rank 0 once known\n" +
				"train/0:0 held line of node 0 worker 0\n" +
				"train/0:1 held line of node 0 worker 1\n"
			if got := out.String(); got != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
			}
			if e := errb.String(); strings.Count(e, "\n") != 1 || !strings.Contains(e, "2 lines of "+handle+"/train/0 printed named by node") ||
				!strings.Contains(e, "group rank was not known yet") {
				t.Errorf("stderr %q, want one line saying node 0's 2 lines are named by node", e)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BenchmarkRankFilterPastBound: a line of a node whose rank is not known, taken past
// the 8 MiB bound (each pushes the oldest out, named by node), beside the baseline of
// a line of a node whose rank is known, which only passes.
func BenchmarkRankFilterPastBound(b *testing.B) {
	discard := func(string, sched.Line) error { return nil }
	for _, c := range []struct {
		name string
		d    *sched.Description
	}{{"held", c10dApp(nil, nil)}, {"known baseline", c10dApp(spec.IntPtr(0), spec.IntPtr(1))}} {
		b.Run(c.name, func(b *testing.B) {
			rf := newRankFilter(c.d, []int{0}, nil, func(sched.Line) error { return nil }, discard)
			l := sched.Line{Role: "train", Replica: 0, Text: "[0]:epoch 3 step 120 loss 0.4321"}
			for range maxHeld / 100 { // fill to the bound first
				if err := rf.line(l); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := rf.line(l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLogRankFollowInterruptedWithoutPrefixes: Ctrl-C of `wick log --rank 0 -f` of an
// app whose lines carry no torchrun prefix, which printed nothing because no line
// could be a rank's, says so in one stderr line, as the log of an ended app does; it
// ended in silence. wick still ends by the signal.
func TestLogRankFollowInterruptedWithoutPrefixes(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "-s", "local_cwd", "utils.sh", "--", "sh", "-c", "echo no prefix; exec sleep 100")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", handle) })
	waitLog(t, h, handle, "no prefix")
	appID := handle[strings.LastIndex(handle, "/")+1:]

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	cmd := h.wickCmd(ctx, "log", handle, "--rank", "0", "-f")
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once it has the replica's log open it follows, its interrupt caught (the
	// catch comes first).
	fdDir := fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)
	testkit.Wait(t, 30*time.Second, "the follower opening the app's log", func() (bool, string) {
		ents, _ := os.ReadDir(fdDir)
		var links []string
		for _, e := range ents {
			l, _ := os.Readlink(filepath.Join(fdDir, e.Name()))
			if strings.Contains(l, "/"+appID+"/") && (strings.HasSuffix(l, "/lines.idx") || strings.HasSuffix(l, ".log")) {
				return true, ""
			}
			links = append(links, l)
		}
		return false, fmt.Sprint(links, " ", errb.String())
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("wick log -f ended with %v, want killed by SIGINT as before", err)
	}
	if got := out.String(); got != "" {
		t.Errorf("stdout %q, want nothing", got)
	}
	want := "wick: warning: no line of " + handle + " carries torchrun's rank prefix \"[N]:\" (run dist.ddp with --tee 1 to tell ranks apart)\n"
	if e := errb.String(); e != want {
		t.Errorf("stderr %q, want %q", e, want)
	}
}
