package ranks

import (
	"testing"
	"time"
)

// A real one-node run of examples/ddp/multinode.py under torchrun (torch 1.13, --tee 1,
// PET_REDIRECTS=1, no @record): rank 1 raised at its step 3, and rank 0 then failed in
// gloo. Their tracebacks are unprefixed (--tee 1 tees stdout only). torchrun's summary
// says "Root Cause (first observed failure)" is rank 0: without an error file a
// failure's time is when the agent's poll found it (ProcessFailure._set_no_reply_file:
// int(time.time()), torch/distributed/elastic/multiprocessing/errors/__init__.py), one
// poll finds both (SubprocessContext._poll, multiprocessing/api.py), and
// ChildFailedError.get_first_failure takes the min of equal times: the lowest local
// rank. The block names the rank that failed after the one that raised, so it must
// not name the rank of the raise; with no exit times (Docker, Slurm), which of ranks 0
// and 1 raised is not known, and the cause says so.
func TestRootCauseBlockDoesNotNameTheRaisingRank(t *testing.T) {
	f := feedFile(t, "tworaise_node.stderr", time.Date(2026, 11, 26, 3, 39, 30, 0, time.UTC))
	var root Failure
	for _, s := range f.Summary {
		if s.Root {
			root = s
		}
	}
	if len(f.Summary) != 2 || root.Rank != 0 || root.Local != 0 || f.Summary[0].Time != f.Summary[1].Time {
		t.Fatalf("summary %+v: want ranks 1 and 0 at one time, rank 0 the root cause", f.Summary)
	}
	c, ok := RootCause([]NodeReport{{Replica: 0, NProc: 2, GroupRank: -1, Failures: f}})
	if want := "rank 0 or 1: RuntimeError: loss diverged on rank 1 at step 3"; !ok || c.String() != want {
		t.Errorf("cause %q, want %q", c.String(), want)
	}
	// With the workers' exit times (a local supervisor sees them), rank 1 is named.
	exits := map[int]time.Time{}
	for _, s := range f.Summary {
		exits[s.PID] = time.Unix(int64(10-s.Rank), 0) // rank 1 exited first
	}
	c, _ = RootCause([]NodeReport{{Replica: 0, NProc: 2, GroupRank: -1, Failures: f, Exits: exits}})
	if want := "rank 1: RuntimeError: loss diverged on rank 1 at step 3"; c.String() != want {
		t.Errorf("with exit times: cause %q, want %q", c.String(), want)
	}
}

// Two workers whose exits were seen at one moment (a local supervisor's watch woke once
// for both, as on a busy machine) have no order: the cause does not guess which raised.
func TestRootCauseWithTiedExits(t *testing.T) {
	f := feedFile(t, "tworaise_node.stderr", time.Date(2026, 11, 26, 3, 39, 30, 0, time.UTC))
	exits := map[int]time.Time{}
	for _, s := range f.Summary {
		exits[s.PID] = time.Unix(10, 0)
	}
	c, _ := RootCause([]NodeReport{{Replica: 0, NProc: 2, GroupRank: -1, Failures: f, Exits: exits}})
	if want := "rank 0 or 1: RuntimeError: loss diverged on rank 1 at step 3"; c.String() != want {
		t.Errorf("cause %q, want %q", c.String(), want)
	}
}
