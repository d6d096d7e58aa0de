package ranks

import (
	"strings"
	"testing"
	"time"
)

// A real gloo timeout (torch 1.13, gloo, init_process_group(timeout=5 s), rank 1
// sleeping before all_reduce; torchrun 1x2 --tee 1, PET_REDIRECTS=1): rank 0's
// all_reduce raises gloo's "Timed out waiting 5000ms for recv operation to complete"
// (gloo/transport/tcp/unbound_buffer.cc). That is the cause, named as a timeout of
// the collective its innermost frame is in (distributed_c10d.py's all_reduce), not
// rank 1's SIGTERM (torchrun's, or the scheduler's, stop of the node), nor a peer's
// consequence ("gloo/transport/tcp" in the message).
func TestGlooTimeoutIsTheCause(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 13, 0, 28, 0, time.UTC)
	f := feedFile(t, "gloo_timeout.stderr", t0)
	if len(f.Summary) != 1 || f.Summary[0].Rank != 0 {
		t.Fatalf("summary %+v", f.Summary)
	}
	const want = "rank 0: collective timeout (all_reduce after 5000 ms)"
	n := NodeReport{Role: "ddp", NProc: 2, GroupRank: 0, Failures: f}
	if c, ok := RootCause([]NodeReport{n}); !ok || c.String() != want || !strings.HasSuffix(c.Where, " in all_reduce") {
		t.Errorf("%v %q at %q, want %q", ok, c.String(), c.Where, want)
	}
	// The node stopped before its agent printed the summary (a scheduler's stop on a
	// node failure): the workers' statuses stand in for it, rank 1 killed by SIGTERM
	// after rank 0's traceback.
	f.Summary = []Failure{{Rank: 0, Local: 0, ExitCode: 1, PID: 10}, {Rank: 1, Local: 1, ExitCode: -15, PID: 11}}
	n.Exits = map[int]time.Time{10: t0.Add(2 * time.Second), 11: t0.Add(3 * time.Second)}
	if c, ok := RootCause([]NodeReport{n}); !ok || c.String() != want {
		t.Errorf("with rank 1 stopped: %v %q, want %q", ok, c.String(), want)
	}
}

// NCCL's watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, torch 1.13) logs
// "[Rank N] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=S,
// OpType=OP, Timeout(ms)=T) ran for M milliseconds before timing out." and takes the
// process down (std::terminate: SIGABRT, exitcode -6 in torchrun's summary). The
// timeout is the cause, on the rank the line names, not the abort.
func TestNCCLWatchdogTimeoutIsTheCause(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 13, 0, 0, 0, time.UTC)
	const line = "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=668, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800125 milliseconds before timing out."
	text := strings.Join([]string{
		"[E ProcessGroupNCCL.cpp:737] " + line,
		"[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down.",
		"terminate called after throwing an instance of 'std::runtime_error'",
		"  what():  " + line,
		"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3",
		"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
		"============================================================",
		"train.py FAILED",
		"------------------------------------------------------------",
		"Failures:",
		"  <NO_OTHER_FAILURES>",
		"------------------------------------------------------------",
		"Root Cause (first observed failure):",
		"[0]:",
		"  time      : 2026-12-06_13:00:05",
		"  host      : node1",
		"  rank      : 3 (local_rank: 1)",
		"  exitcode  : -6 (pid: 4242)",
		"  error_file: <N/A>",
		"  traceback : Signal 6 (SIGABRT) received by PID 4242",
		"============================================================",
	}, "\n")
	f := feedText(text, t0)
	if len(f.Timeouts) != 1 {
		t.Fatalf("timeouts %+v", f.Timeouts)
	}
	const want = "rank 3: collective timeout (ALLREDUCE after 1800125 ms)"
	n := NodeReport{Role: "ddp", Replica: 1, NProc: 2, GroupRank: 1, Failures: f}
	if c, ok := RootCause([]NodeReport{n}); !ok || c.String() != want || len(c.Traceback) != 1 {
		t.Errorf("%v %q (%q), want %q", ok, c.String(), c.Traceback, want)
	}
	// The same from a plain replica (no torchrun): killed by SIGABRT after it.
	p := NodeReport{Role: "train", GroupRank: -1, Plain: true, Failures: feedText(text, t0), Exit: &Exit{Code: 134, Signal: 6, Time: t0.Add(time.Second), Exact: true}}
	if c, ok := RootCause([]NodeReport{p}); !ok || c.String() != "train/0: collective timeout (ALLREDUCE after 1800125 ms)" {
		t.Errorf("plain: %v %q", ok, c.String())
	}
}

// The messages as torch's backends write them, and lines that only look like them.
func TestCollectiveTimeoutWords(t *testing.T) {
	for _, tc := range []struct{ text, frame, want string }{
		{"RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:3214 in barrier", "collective timeout (barrier after 1800000 ms)"},
		{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] Timed out waiting 5000ms for send operation to complete", "", "collective timeout (send after 5000 ms)"},
		{"RuntimeError: Application timeout caused pair closure", "", "collective timeout (pair closed by another operation's timeout)"},
		{"RuntimeError: [Rank 0] Caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=BROADCAST, TensorShape=[1024, 4], Timeout(ms)=60000) ran for 60012 milliseconds before timing out.", "train.py:9 in main", "collective timeout (BROADCAST after 60012 ms)"},
		{"RuntimeError: Timed out waiting for the store", "", ""},
		{"RuntimeError: Connection closed by peer [127.0.0.1]:4406", "", ""},
	} {
		got, _, ok := collectiveTimeout(tc.text, tc.frame)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("%q: %v %q, want %q", tc.text, ok, got, tc.want)
		}
	}
}
