package ranks

import (
	"strings"
	"testing"
	"time"
)

// plainNode is a plain replica python/0 that exited with code (signal sig) at t and
// whose stderr is the fixture name ("" for none).
func plainNode(t *testing.T, name string, code, sig int, at time.Time) NodeReport {
	t.Helper()
	n := NodeReport{Role: "python", Replica: 0, GroupRank: -1, Plain: true, Exit: &Exit{Code: code, Signal: sig, Time: at, Exact: true}}
	if name != "" {
		n.Failures = feedFile(t, name, at.Add(-time.Second))
	}
	return n
}

// Real stderr of the scripts in examples/failures run by python3 (torch 1.13, Python
// 3.11) as utils.python runs them: a plain replica's error is its exception, named
// after the replica, with the innermost frame of the original exception.
func TestPlainReplicaTraceback(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 40, 0, 0, time.UTC)
	for _, tc := range []struct{ file, want, where string }{
		// A script that raises.
		{"plain_raise.stderr", "python/0: ValueError: boom at step 3", "/work/examples/failures/raise_plain.py:20 in train_step"},
		// A DataLoader worker that raises: torch re-raises it as "Caught ValueError in
		// DataLoader worker process 0." with the worker's "Original Traceback" in its
		// message (torch/_utils.py, ExceptionWrapper.reraise); the original is the one.
		{"loader_raise.stderr", "python/0: ValueError: corrupt sample 81 in shard 1", "/work/examples/failures/loader_raise.py:24 in __getitem__"},
		// A DataLoader worker killed (SIGKILL): torch raises "DataLoader worker ... is
		// killed by signal", then, chained to it ("The above exception was the direct
		// cause"), "exited unexpectedly": the first of the chain is the original.
		{"loader_killed.stderr", "python/0: RuntimeError: DataLoader worker (pid 20709) is killed by signal: Killed.",
			"/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py:66 in handler"},
		// The same, where the main process first failed to read the dead worker's
		// queue ("Connection reset by peer", a consequence) and the "killed by
		// signal" came while handling that ("During handling of the above exception").
		{"loader_killed_reset.stderr", "python/0: RuntimeError: DataLoader worker (pid 32580) is killed by signal: Killed.",
			"/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py:66 in handler"},
	} {
		c, ok := RootCause([]NodeReport{plainNode(t, tc.file, 1, 0, at)})
		if !ok || c.String() != tc.want || c.Where != tc.where {
			t.Errorf("%s: %v %q at %q, want %q at %q", tc.file, ok, c.String(), c.Where, tc.want, tc.where)
		}
		if !c.Plain || c.Role != "python" || len(c.Traceback) == 0 || c.Traceback[0] != tracebackHead {
			t.Errorf("%s: cause %+v", tc.file, c)
		}
		if Where(c.JSON()) != tc.where {
			t.Errorf("%s: the JSON's where is %q", tc.file, Where(c.JSON()))
		}
	}
}

// A plain replica without a traceback: its exit code, or the signal that killed it
// (the OOM killer named where the scheduler says so).
func TestPlainReplicaEnd(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 40, 0, 0, time.UTC)
	for _, tc := range []struct {
		code, sig int
		oom       bool
		want      string
	}{
		{3, 0, false, "python/0: exit code 3"},
		{139, 11, false, "python/0: killed by SIGSEGV"},
		{137, 9, true, "python/0: killed by the kernel's OOM killer (SIGKILL)"},
	} {
		n := plainNode(t, "", tc.code, tc.sig, at)
		n.Exit.OOM = tc.oom
		if c, ok := RootCause([]NodeReport{n}); !ok || c.String() != tc.want {
			t.Errorf("exit %d signal %d: %v %q, want %q", tc.code, tc.sig, ok, c.String(), tc.want)
		}
	}
	// A replica that exited with a code of its own after printing a traceback it
	// handled: the code, not the traceback, ended it.
	n := plainNode(t, "plain_raise.stderr", 2, 0, at)
	if c, _ := RootCause([]NodeReport{n}); c.String() != "python/0: exit code 2" {
		t.Errorf("exit 2 after a traceback: %q", c.String())
	}
}

// A real torchrun node (torch 1.13, --tee 1, 1x2) of examples/failures/exit_rank.py:
// rank 1 calls sys.exit(3), and rank 0's all_reduce then fails in gloo ("Connection
// closed by peer"); torchrun's summary gives both one time and puts rank 0 under
// "Root Cause". The cause is rank 1's exit, whether the scheduler saw the workers
// exit (a local supervisor) or not (Slurm, Docker).
func TestExitCodeBeforeAPeersFailure(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 3, 40, 5, 0, time.Local)
	f := feedFile(t, "exitrank_node0.stderr", t0)
	if len(f.Summary) != 2 {
		t.Fatalf("summary %+v", f.Summary)
	}
	n := NodeReport{Role: "exit_rank", Replica: 0, NProc: 2, GroupRank: 0, Failures: f}
	if c, ok := RootCause([]NodeReport{n}); !ok || c.String() != "rank 1: exit code 3" {
		t.Errorf("without exit times: %v %q", ok, c.String())
	}
	// The supervisor saw rank 1 (pid 1259) exit first, rank 0 (pid 1258) after.
	n.Exits = map[int]time.Time{1259: t0, 1258: t0.Add(40 * time.Millisecond)}
	if c, ok := RootCause([]NodeReport{n}); !ok || c.String() != "rank 1: exit code 3" || !c.Time.Equal(t0) {
		t.Errorf("with exit times: %v %q at %v", ok, c.String(), c.Time)
	}
}

// The first failure wins, whatever its kind and its replica: a plain replica that
// exited before a torchrun rank raised is the cause, and the other way round; a peer's
// consequence on a plain replica is never the cause while another failure is known.
func TestFirstFailureOfAnyKind(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 3, 40, 0, 0, time.UTC)
	lines := strings.Join(traceback("RuntimeError: loss diverged"), "\n")
	rank := NodeReport{Role: "trainer", Replica: 0, NProc: 1, GroupRank: 0, Failures: feedText(lines, t0.Add(time.Second))}
	early := NodeReport{Role: "reader", Replica: 1, GroupRank: -1, Plain: true, Exit: &Exit{Code: 4, Time: t0, Exact: true}}
	if c, _ := RootCause([]NodeReport{rank, early}); c.String() != "reader/1: exit code 4" || c.Role != "reader" || c.Replica != 1 {
		t.Errorf("plain exit first: %q (%s/%d)", c.String(), c.Role, c.Replica)
	}
	late := early
	late.Exit = &Exit{Code: 4, Time: t0.Add(2 * time.Second), Exact: true}
	if c, _ := RootCause([]NodeReport{late, rank}); c.String() != "rank 0: RuntimeError: loss diverged" || c.Where != "/w/train.py:65 in _run_batch" {
		t.Errorf("traceback first: %q at %q", c.String(), c.Where)
	}
	peer := NodeReport{Role: "worker", Replica: 0, GroupRank: -1, Plain: true, Exit: &Exit{Code: 1, Time: t0, Exact: true},
		Failures: feedText(strings.Join(traceback("RuntimeError: [../gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:1234"), "\n"), t0.Add(-time.Second))}
	if c, _ := RootCause([]NodeReport{peer, late}); c.String() != "reader/1: exit code 4" {
		t.Errorf("a peer's consequence first: %q", c.String())
	}
	if c, _ := RootCause([]NodeReport{peer}); !strings.Contains(c.String(), "Connection closed by peer") {
		t.Errorf("the consequence alone: %q", c.String())
	}
}
