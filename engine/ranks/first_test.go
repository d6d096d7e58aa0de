package ranks

import (
	"os"
	"path/filepath"
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
		// The same, where the queue's read ended with multiprocessing's bare
		// "EOFError" (the worker's end of the connection closed), also a consequence.
		{"loader_killed_eof.stderr", "python/0: RuntimeError: DataLoader worker (pid 25127) is killed by signal: Killed.",
			"/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py:66 in handler"},
		// The same, where torch's SIGCHLD handler raised while os.getenv("TMP")
		// handled its KeyError (tempfile, called by the DataLoader after the reset):
		// the chain is reset, then KeyError: b'TMP', then (during handling) the
		// "killed by signal"; the KeyError was in flight by chance (CI, 2026-12-07).
		{"loader_killed_keyerror.stderr", "python/0: RuntimeError: DataLoader worker (pid 26700) is killed by signal: Killed.",
			"/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py:66 in handler"},
		// torch's SIGCHLD handler raised while Python printed the "Connection reset
		// by peer" (under wick, 12 runs in 25 at load 20): CPython could not print it,
		// dumped the exception ("object repr     : ConnectionResetError(104, ...)")
		// and said "lost sys.stderr"; the handler's "killed by signal" is never
		// printed. The dumped exception is the cause, at the innermost frame printed
		// before the printing failed, if any.
		{"loader_killed_lost.stderr", "python/0: ConnectionResetError: [Errno 104] Connection reset by peer",
			"/usr/lib/python3.11/multiprocessing/connection.py:413 in _recv_bytes"},
		{"loader_killed_lost_head.stderr", "python/0: ConnectionResetError: [Errno 104] Connection reset by peer", ""},
		{"loader_killed_lost_nohead.stderr", "python/0: ConnectionResetError: [Errno 104] Connection reset by peer", ""},
	} {
		c, ok := RootCause([]NodeReport{plainNode(t, tc.file, 1, 0, at)})
		if !ok || c.String() != tc.want || c.Where != tc.where {
			t.Errorf("%s: %v %q at %q, want %q at %q", tc.file, ok, c.String(), c.Where, tc.want, tc.where)
		}
		head := tracebackHead
		if strings.HasSuffix(tc.file, "_nohead.stderr") {
			head = "object type name: ConnectionResetError" // the dump is all it printed
		}
		if !c.Plain || c.Role != "python" || len(c.Traceback) == 0 || c.Traceback[0] != head || c.Traceback[len(c.Traceback)-1] != lostStderr && strings.Contains(tc.file, "_lost") {
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

// Node 1 of a real 2x2 run of examples/ddp/multinode.py without @record (torch 1.13,
// --tee 1, PET_REDIRECTS=1): rank 3 (local rank 1) raised, then rank 2's all_reduce
// failed in gloo when rank 3's finalizing closed its sockets; both tracebacks went to
// the node's stderr unprefixed. Here both exited with code 1 within one second, so
// torchrun's summary puts rank 2, the lower local rank, under "Root Cause", and rank
// 2 exited first (rank 3 finalized for seconds: the order seen in a CI run). What
// tells the ranks' tracebacks apart is when each worker began to end (its threads
// went, after its traceback): rank 3 first.
func TestRaisingRankFinalizesLast(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 21, 5, 0, 0, time.Local)
	b, err := os.ReadFile(filepath.Join("testdata", "norecord_node1.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	workers, _, ok := strings.Cut(string(b), "ERROR:torch.distributed.elastic")
	if !ok {
		t.Fatal("no agent's line in the fixture")
	}
	const r2, r3 = 27177, 27178
	at := "2026-11-25_21:05:05"
	sum := summaryOf(Failure{Rank: 2, Local: 0, ExitCode: 1, PID: r2, Time: at, Traceback: "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"},
		Failure{Rank: 3, Local: 1, ExitCode: 1, PID: r3, Time: at, Traceback: "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"})
	f := feedText(workers+sum, t0)
	if len(f.Summary) != 2 || len(f.WorkerTracebacks()) != 2 {
		t.Fatalf("summary %+v, tracebacks %q", f.Summary, exceptions(f.WorkerTracebacks()))
	}
	// The lines came 1 ms apart: rank 3's traceback from t0+4ms, rank 2's from t0+17ms.
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	n := NodeReport{Role: "multinode", Replica: 1, NProc: 2, GroupRank: 1, Failures: f,
		Exits: map[int]time.Time{r2: ms(300), r3: ms(900)}}
	const want = "rank 3: RuntimeError: loss diverged on rank 3 at step 3"
	for _, tc := range []struct {
		name  string
		downs map[int]time.Time
		want  string
	}{
		{"threads went, rank 3's first", map[int]time.Time{r3: ms(40), r2: ms(120)}, want},
		// A thread of rank 2's work that ended before any traceback is not its end:
		// its exit is.
		{"rank 2's thread ended while it worked", map[int]time.Time{r3: ms(40), r2: ms(1)}, want},
		// Without them, the exits put rank 3's traceback on rank 2 (the defect).
		{"exits alone", nil, "rank 2: RuntimeError: loss diverged on rank 3 at step 3"},
		{"seen at one moment", map[int]time.Time{r3: ms(40), r2: ms(40)}, "rank 2 or 3: RuntimeError: loss diverged on rank 3 at step 3"},
	} {
		n.Downs = tc.downs
		if c, ok := RootCause([]NodeReport{n}); !ok || c.String() != tc.want {
			t.Errorf("%s: %v %q, want %q", tc.name, ok, c.String(), tc.want)
		}
	}
}

// The exception line of CPython's dump of an exception it could not print, from its
// type's name and repr, as Python would have printed it.
func TestDumpedException(t *testing.T) {
	for _, tc := range []struct{ name, repr, want string }{
		{"ConnectionResetError", "ConnectionResetError(104, 'Connection reset by peer')", "ConnectionResetError: [Errno 104] Connection reset by peer"},
		{"ValueError", "ValueError('boom at step 3')", "ValueError: boom at step 3"},
		{"ValueError", `ValueError("it's \\ \x41\u00e9\nsecond line")`, `ValueError: it's \ Aé`},
		{"KeyError", "KeyError('lr')", "KeyError: 'lr'"},
		{"StopIteration", "StopIteration()", "StopIteration"},
		{"EOFError", "EOFError()", "EOFError"},
		{"ValueError", "ValueError(3, 'x')", "ValueError: ValueError(3, 'x')"},
		{"ValueError", "ValueError('cut", "ValueError: ValueError('cut"},
		{"torch.distributed.DistBackendError", "DistBackendError('NCCL error')", "torch.distributed.DistBackendError: NCCL error"},
		{"Weird", "<Weird object at 0x7f>", "Weird: <Weird object at 0x7f>"},
	} {
		if got := dumpedException(tc.name, tc.repr); got != tc.want {
			t.Errorf("dumpedException(%q, %q) = %q, want %q", tc.name, tc.repr, got, tc.want)
		}
	}
}

// Node 1 of a real 2x2 run where rank 3 (local rank 1) raised and rank 2 failed in
// gloo after it (norecord_node1.stderr, unprefixed tracebacks), as torchrun's poll
// may see it: rank 2 exited first and is all its summary lists, rank 3, still
// finalizing, was stopped with SIGTERM. A scheduler that watched every worker
// (Workers: Slurm's wrapper samples them) puts the first traceback on the worker seen
// to begin to end first, only when the samples order the workers apart; else the
// cause is a tie, never the other rank.
func TestWatchedWorkersNameTheRaisingRank(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC)
	// Samples one second apart (a loaded machine's sampler): s(i).
	s := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	probe := feedFile(t, "norecord_node1.stderr", t0)
	second := probe.WorkerTracebacks()[1].Start
	// rank 3's traceback seen in the file at sample 1, rank 2's (and the rest) at 3.
	b, err := os.ReadFile(filepath.Join("testdata", "norecord_node1.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	f := &Failures{}
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		at := s(1)
		if i >= second {
			at = s(3)
		}
		f.Feed(l, at)
	}
	tbs := f.WorkerTracebacks()
	if len(tbs) != 2 || tbs[1].Secondary() == tbs[0].Secondary() {
		t.Fatalf("tracebacks %+v", tbs)
	}
	f.Summary = []Failure{{Rank: 2, Local: 0, ExitCode: 1, PID: 27176, Time: "2026-11-25_21:05:05"}}
	n := NodeReport{Role: "ddp", Replica: 1, NProc: 2, GroupRank: 1, Failures: f}
	const want = "rank 3: RuntimeError: loss diverged on rank 3 at step 3"
	const tie = "rank 2 or 3: RuntimeError: loss diverged on rank 3 at step 3"
	if c, _ := RootCause([]NodeReport{n}); c.String() == want {
		t.Fatalf("the summary alone named rank 3: the case is not the one to test")
	}
	for _, tc := range []struct {
		name   string
		r2, r3 Watched
		want   string
	}{
		{
			name: "rank 3's threads fell at sample 2, rank 2's at 4",
			r3:   Watched{Rank: 3, DownPrev: s(1), Down: s(2), Settled: s(2), GonePrev: s(6), Gone: s(7)},
			r2:   Watched{Rank: 2, DownPrev: s(3), Down: s(4), Settled: s(4), GonePrev: s(4), Gone: s(5)},
			want: want,
		},
		{
			// Both fell between two samples: no order.
			name: "seen at one sample",
			r3:   Watched{Rank: 3, DownPrev: s(3), Down: s(4), Settled: s(4), GonePrev: s(6), Gone: s(7)},
			r2:   Watched{Rank: 2, DownPrev: s(3), Down: s(4), Settled: s(4), GonePrev: s(4), Gone: s(5)},
			want: tie,
		},
		{
			// Rank 3's fall ran over two samples, the second after rank 2's began.
			name: "falls that overlap",
			r3:   Watched{Rank: 3, DownPrev: s(1), Down: s(2), Settled: s(5), GonePrev: s(6), Gone: s(7)},
			r2:   Watched{Rank: 2, DownPrev: s(3), Down: s(4), Settled: s(4), GonePrev: s(4), Gone: s(5)},
			want: tie,
		},
		{
			// Rank 3's fall was seen before its traceback was in the file (its stderr
			// reaches the file through slurmstepd, late on a loaded machine): it
			// began to end by when it was gone, after rank 2 began to. Taken as
			// rank 3's end, the gone time would put rank 2's traceback first.
			name: "a fall seen before the first traceback",
			r3:   Watched{Rank: 3, DownPrev: s(-1), Down: s(0), Settled: s(0), GonePrev: s(6), Gone: s(7)},
			r2:   Watched{Rank: 2, DownPrev: s(3), Down: s(4), Settled: s(4), GonePrev: s(4), Gone: s(5)},
			want: tie,
		},
		{
			// Rank 2 fell (at 2) before its traceback was in the file (3): it did not
			// write the first traceback's successor, or the order is not the one.
			name: "a writer ended before its traceback",
			r3:   Watched{Rank: 3, DownPrev: s(0), Down: s(1), Settled: s(1), GonePrev: s(6), Gone: s(7)},
			r2:   Watched{Rank: 2, DownPrev: s(1), Down: s(2), Settled: s(2), GonePrev: s(4), Gone: s(5)},
			want: tie,
		},
		{
			// Rank 3's threads fell at 2 and a thread started after (Down forgotten);
			// it was gone last. Ordered by its going, rank 2 would be named.
			name: "rank 3's fall undone by a rise",
			r3:   Watched{Rank: 3, FellPrev: s(1), Fell: s(2), GonePrev: s(6), Gone: s(7)},
			r2:   Watched{Rank: 2, DownPrev: s(3), Down: s(4), Settled: s(4), FellPrev: s(3), Fell: s(4), GonePrev: s(4), Gone: s(5)},
			want: tie,
		},
		{
			name: "rank 3 fell, rose, and fell again after rank 2 began to end",
			r3:   Watched{Rank: 3, DownPrev: s(4), Down: s(5), Settled: s(5), FellPrev: s(1), Fell: s(2), GonePrev: s(6), Gone: s(7)},
			r2:   Watched{Rank: 2, DownPrev: s(3), Down: s(4), Settled: s(4), FellPrev: s(3), Fell: s(4), GonePrev: s(4), Gone: s(5)},
			want: tie,
		},
		{
			name: "both fell and rose",
			r3:   Watched{Rank: 3, FellPrev: s(1), Fell: s(2), GonePrev: s(7), Gone: s(8)},
			r2:   Watched{Rank: 2, FellPrev: s(3), Fell: s(4), GonePrev: s(5), Gone: s(6)},
			want: tie,
		},
		{
			// Rank 2's fall at 4 and rise after: still after rank 3's end.
			name: "rank 2's fall undone by a rise, after rank 3's end",
			r3:   Watched{Rank: 3, DownPrev: s(1), Down: s(2), Settled: s(2), FellPrev: s(1), Fell: s(2), GonePrev: s(8), Gone: s(9)},
			r2:   Watched{Rank: 2, FellPrev: s(3), Fell: s(4), GonePrev: s(5), Gone: s(6)},
			want: want,
		},
		{
			// Rank 3's count did not fall (it went between two samples); it went
			// before rank 2 began to fall.
			name: "gone at once, before the other fell",
			r3:   Watched{Rank: 3, GonePrev: s(1), Gone: s(2)},
			r2:   Watched{Rank: 2, DownPrev: s(3), Down: s(4), Settled: s(4), GonePrev: s(4), Gone: s(5)},
			want: want,
		},
		{
			// The samples stopped (the container ended) before rank 2's end was
			// seen: which began to end first is not known, and the summary, which
			// names rank 2, is no better (CI, local_docker: rank 1 named for rank 0).
			name: "one worker's end not seen",
			r3:   Watched{Rank: 3, DownPrev: s(0), Down: s(2), Settled: s(2)},
			r2:   Watched{Rank: 2},
			want: tie,
		},
		{
			name: "the raiser's end not seen",
			r3:   Watched{Rank: 3},
			r2:   Watched{Rank: 2, DownPrev: s(3), Down: s(4), Settled: s(4), GonePrev: s(4), Gone: s(5)},
			want: tie,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := n
			n.Workers = map[int]Watched{27176: tc.r2, 27178: tc.r3}
			if c, ok := RootCause([]NodeReport{n}); !ok || c.String() != tc.want {
				t.Errorf("%v %q, want %q", ok, c.String(), tc.want)
			}
		})
	}
}
