package ranks

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// feedFile feeds a node's stderr, as wick stored it, to a Failures, the lines one
// millisecond apart from t0.
func feedFile(t *testing.T, name string, t0 time.Time) *Failures {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return feedText(string(b), t0)
}

func feedText(s string, t0 time.Time) *Failures {
	f := &Failures{}
	for i, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		f.Feed(l, t0.Add(time.Duration(i)*time.Millisecond))
	}
	return f
}

func exceptions(tbs []Traceback) []string {
	var out []string
	for _, tb := range tbs {
		out = append(out, tb.Exception)
	}
	return out
}

// The two nodes of a real 2x2 run of examples/ddp/multinode.py (torch 1.13, --tee 1,
// PET_REDIRECTS=1, LOGLEVEL=WARNING) where rank 3 raised at its step 3: node 1 (group
// rank 1: ranks 2, 3) holds rank 3's traceback and the gloo failure of rank 2, node 0
// the gloo failures of ranks 0 and 1; each ends with torchrun's ChildFailedError.
func TestFailuresOfARealRun(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC)
	n1 := feedFile(t, "norecord_node1.stderr", t0)
	want := []string{
		"RuntimeError: loss diverged on rank 3 at step 3",
		"RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:6033",
	}
	if got := exceptions(n1.WorkerTracebacks()); !slices.Equal(got, want) {
		t.Errorf("node 1's worker tracebacks end with %q, want %q", got, want)
	}
	// Rank 3's traceback, whole: header, 5 frames with their source lines, the ^^^
	// marks of Python 3.11, the exception.
	tb := n1.WorkerTracebacks()[0]
	if len(tb.Lines) != 13 || tb.Lines[0] != "Traceback (most recent call last):" || !strings.Contains(tb.Lines[11], `raise RuntimeError(f"loss diverged`) {
		t.Errorf("rank 3's traceback: %q", tb.Lines)
	}
	if tb.Secondary() || !n1.WorkerTracebacks()[1].Secondary() {
		t.Error("the exception raised is not told from the gloo failure that followed")
	}
	// torchrun's own traceback (the agent's ChildFailedError) is not a worker's.
	if len(n1.Tracebacks) != 3 || !n1.Tracebacks[2].Agent {
		t.Errorf("tracebacks %q, want the agent's last", exceptions(n1.Tracebacks))
	}
	// The summary: only rank 3 had failed when node 1's agent looked.
	if len(n1.Summary) != 1 {
		t.Fatalf("node 1's summary %+v", n1.Summary)
	}
	if f := n1.Summary[0]; f.Rank != 3 || f.Local != 1 || f.ExitCode != 1 || f.PID != 27178 || !f.Root || f.Time != "2026-11-25_21:05:05" || f.Signal() != "" {
		t.Errorf("node 1's failure %+v", f)
	}
	if len(n1.Unbound) != 0 {
		t.Errorf("node 1 hosted the store, yet unbound %v", n1.Unbound)
	}

	n0 := feedFile(t, "norecord_node0.stderr", t0)
	if got := n0.Summary; len(got) != 2 || got[0].Rank != 1 || got[0].Root || got[1].Rank != 0 || !got[1].Root || got[1].PID != 27177 {
		t.Errorf("node 0's summary %+v, want rank 1 then rank 0 (its root cause)", got)
	}
	// Node 0 could not bind 29500 (node 1 had): on [::] and on 0.0.0.0.
	if !slices.Equal(n0.Unbound, []int{29500, 29500}) {
		t.Errorf("node 0 unbound %v", n0.Unbound)
	}

	// Across both: rank 3 raised first. Its node's summary lists one failed rank
	// beside two tracebacks: here the raising one, but a poll that came while it
	// still finalized would have listed its peer (TestSummaryOfThePeerAloneIsATie).
	// Unwatched, the node's ranks are a tie; with the workers' ends seen, rank 3.
	c, ok := RootCause([]NodeReport{
		{Replica: 0, NProc: 2, GroupRank: -1, Failures: n0},
		{Replica: 1, NProc: 2, GroupRank: -1, Failures: n1},
	})
	if !ok || c.String() != "rank 2 or 3: RuntimeError: loss diverged on rank 3 at step 3" || c.Replica != 1 {
		t.Errorf("root cause %q on replica %d (ok %v)", c.String(), c.Replica, ok)
	}
	c, _ = RootCause([]NodeReport{
		{Replica: 0, NProc: 2, GroupRank: -1, Failures: n0},
		{Replica: 1, NProc: 2, GroupRank: -1, Failures: n1, Exits: map[int]time.Time{27178: t0}},
	})
	if c.String() != "rank 3: RuntimeError: loss diverged on rank 3 at step 3" {
		t.Errorf("with rank 3's exit seen: root cause %q", c.String())
	}
}

// summaryOf writes torchrun's summary for failures as torch 1.13 formats it
// (errors/__init__.py, _MSG_FORMAT_TEMPLATE and _FAILURE_FORMAT_TEMPLATE).
func summaryOf(root Failure, others ...Failure) string {
	block := func(idx int, f Failure) string {
		return "[" + strconv.Itoa(idx) + "]:\n  time      : " + f.Time + "\n  host      : localhost\n  rank      : " + strconv.Itoa(f.Rank) +
			" (local_rank: " + strconv.Itoa(f.Local) + ")\n  exitcode  : " + strconv.Itoa(f.ExitCode) + " (pid: " + strconv.Itoa(f.PID) +
			")\n  error_file: <N/A>\n  traceback : " + f.Traceback
	}
	var b strings.Builder
	b.WriteString("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n")
	b.WriteString("============================================================\nmultinode.py FAILED\n------------------------------------------------------------\nFailures:\n")
	if len(others) == 0 {
		b.WriteString("  <NO_OTHER_FAILURES>\n")
	}
	for i, f := range others {
		b.WriteString(block(i+1, f) + "\n")
	}
	b.WriteString("------------------------------------------------------------\nRoot Cause (first observed failure):\n")
	b.WriteString(block(0, root) + "\n")
	b.WriteString("============================================================\n")
	return b.String()
}

const noTraceback = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"

// traceback is a Python 3.11 traceback of the worker that raised exc in train.py.
func traceback(exc string) []string {
	return []string{
		"Traceback (most recent call last):",
		`  File "/w/train.py", line 111, in <module>`,
		"    main()",
		`  File "/w/train.py", line 65, in _run_batch`,
		"    loss.backward()",
		exc,
	}
}

// Two ranks of one node raising at once write their tracebacks to the node's stderr
// line by line, interleaved: each exception stays whole, in the order written, and
// neither traceback takes the other's exception.
func TestInterleavedTracebacks(t *testing.T) {
	a := traceback("ValueError: bad batch on rank 2")
	b := traceback("KeyError: 'label'")
	var lines []string
	for i := range a {
		lines = append(lines, a[i], b[i])
	}
	f := feedText(strings.Join(lines, "\n"), time.Unix(0, 0))
	got := exceptions(f.WorkerTracebacks())
	if !slices.Equal(got, []string{"ValueError: bad batch on rank 2", "KeyError: 'label'"}) {
		t.Fatalf("exceptions %q", got)
	}
	for _, tb := range f.WorkerTracebacks() {
		if !tb.open {
			t.Errorf("%q: not known to be interleaved", tb.Exception)
		}
		if slices.Contains(tb.Lines, "ValueError: bad batch on rank 2") && slices.Contains(tb.Lines, "KeyError: 'label'") {
			t.Errorf("one traceback holds both exceptions: %q", tb.Lines)
		}
	}
}

// A traceback glued after the last frame of a \r progress bar (rank 0 draws it on
// stderr without a newline; another rank's traceback starts on the same line).
func TestTracebackGluedToABar(t *testing.T) {
	lines := traceback("RuntimeError: boom")
	lines[0] = "\repoch 0  10%|###         |\repoch 0  20%|######      |" + lines[0]
	f := feedText(strings.Join(lines, "\n"), time.Unix(0, 0))
	if got := exceptions(f.WorkerTracebacks()); !slices.Equal(got, []string{"RuntimeError: boom"}) {
		t.Fatalf("exceptions %q", got)
	}
	if l := f.WorkerTracebacks()[0].Lines[0]; l != "Traceback (most recent call last):" {
		t.Errorf("first line %q: the bar is glued on", l)
	}
}

// A chained exception is one traceback ending with the last exception.
func TestChainedTraceback(t *testing.T) {
	lines := traceback("KeyError: 'x'")
	lines = append(lines, "", "During handling of the above exception, another exception occurred:", "")
	lines = append(lines, traceback("RuntimeError: lookup failed")...)
	f := feedText(strings.Join(lines, "\n"), time.Unix(0, 0))
	if got := exceptions(f.WorkerTracebacks()); !slices.Equal(got, []string{"RuntimeError: lookup failed"}) {
		t.Fatalf("exceptions %q", got)
	}
}

// Lines that look like an exception line but are not: torch's log lines, glog's, a
// worker's prefixed output.
func TestExceptionLine(t *testing.T) {
	for s, want := range map[string]bool{
		"RuntimeError: boom":                             true,
		"KeyboardInterrupt":                              true,
		"torch.distributed.DistBackendError: NCCL error": true,
		"__main__.InjectedFailure: rank 1":               true,
		"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1)": false,
		"WARNING:torch.distributed.run:":                                           false,
		"W20261125 20:58:27.322336 21983 socket.cpp:426] x":                        false,
		"[RANK3] Epoch 0 | Batchsize: 32 | Steps: 4":                               false,
		"Epoch: 3": false,
		"OK":       false,
		"":         false,
	} {
		if got := exceptionLine(s); got != want {
			t.Errorf("exceptionLine(%q) = %v, want %v", s, got, want)
		}
	}
}

// With --tee 3 torchrun prefixes each worker's stderr: the prefix says the rank.
func TestPrefixedTraceback(t *testing.T) {
	var lines []string
	for _, l := range traceback("RuntimeError: boom") {
		lines = append(lines, "[1]:"+l)
	}
	lines = append(lines, strings.Split(summaryOf(Failure{Rank: 3, Local: 1, ExitCode: 1, PID: 7, Time: "2026-11-25_21:05:05", Traceback: noTraceback},
		Failure{Rank: 2, Local: 0, ExitCode: 1, PID: 6, Time: "2026-11-25_21:05:05", Traceback: noTraceback}), "\n")...)
	f := feedText(strings.Join(lines, "\n"), time.Unix(0, 0))
	tbs := f.WorkerTracebacks()
	if len(tbs) != 1 || tbs[0].Local != 1 {
		t.Fatalf("tracebacks %+v", tbs)
	}
	n := NodeReport{Replica: 0, NProc: 2, GroupRank: -1, Failures: f}
	if r, _ := n.RankOf(tbs[0]); r != 3 {
		t.Errorf("rank %d, want 3 (local rank 1 of a node whose summary says rank 3 is local rank 1)", r)
	}
}

// Two failed ranks on the node of an unprefixed traceback: the order the workers
// exited says whose it is; without it, the cause names both.
func TestRankOfByExitOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC)
	lines := append(traceback("RuntimeError: loss diverged"), traceback("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:6033")...)
	lines = append(lines, strings.Split(summaryOf(
		Failure{Rank: 2, Local: 0, ExitCode: 1, PID: 100, Time: "2026-11-25_21:05:05", Traceback: noTraceback},
		Failure{Rank: 3, Local: 1, ExitCode: 1, PID: 101, Time: "2026-11-25_21:05:05", Traceback: noTraceback}), "\n")...)
	f := feedText(strings.Join(lines, "\n"), t0)
	n := NodeReport{Replica: 1, NProc: 2, GroupRank: 1, Failures: f,
		Exits: map[int]time.Time{101: t0.Add(5 * time.Millisecond), 100: t0.Add(40 * time.Millisecond)}}
	c, ok := RootCause([]NodeReport{n})
	if !ok || c.String() != "rank 3: RuntimeError: loss diverged" {
		t.Errorf("with exit times: %q", c.String())
	}
	n.Exits = nil
	c, _ = RootCause([]NodeReport{n})
	if c.String() != "rank 2 or 3: RuntimeError: loss diverged" {
		t.Errorf("without exit times: %q", c.String())
	}
}

// A worker killed by a signal writes no traceback; its peers then fail in gloo. The
// kill is the cause, named by torchrun's summary (exitcode -9).
func TestKilledBySignal(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC)
	gloo := traceback("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:6033")
	node1 := append(gloo, strings.Split(summaryOf(
		Failure{Rank: 2, Local: 0, ExitCode: -9, PID: 100, Time: "2026-11-25_21:05:05", Traceback: "Signal 9 (SIGKILL) received by PID 100"},
		Failure{Rank: 3, Local: 1, ExitCode: 1, PID: 101, Time: "2026-11-25_21:05:05", Traceback: noTraceback}), "\n")...)
	node0 := append(gloo, strings.Split(summaryOf(
		Failure{Rank: 0, Local: 0, ExitCode: 1, PID: 90, Time: "2026-11-25_21:05:06", Traceback: noTraceback}), "\n")...)
	c, ok := RootCause([]NodeReport{
		{Replica: 0, NProc: 2, GroupRank: -1, Failures: feedText(strings.Join(node0, "\n"), t0)},
		{Replica: 1, NProc: 2, GroupRank: -1, Failures: feedText(strings.Join(node1, "\n"), t0)},
	})
	if !ok || c.String() != "rank 2: killed by SIGKILL" || c.Replica != 1 {
		t.Errorf("cause %q on replica %d", c.String(), c.Replica)
	}
}

// Every node failing to bind the rendezvous port: another program holds it, and that
// is the cause, not the store errors that follow.
func TestPortInUse(t *testing.T) {
	bind := "W20261125 21:08:12.805591   925 socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29512 (errno: 98 - Address already in use).\n" +
		"W20261125 21:08:12.806501   925 socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:29512 (errno: 98 - Address already in use).\n"
	gloo := strings.Join(traceback("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:6033"), "\n")
	t0 := time.Unix(0, 0)
	c, ok := RootCause([]NodeReport{
		{Replica: 0, GroupRank: -1, Failures: feedText(bind+gloo, t0)},
		{Replica: 1, GroupRank: -1, Failures: feedText(bind+gloo, t0)},
	})
	if !ok || c.String() != "rendezvous port 29512 is in use" {
		t.Errorf("cause %q", c.String())
	}
	// Node 0 could not bind and its agent failed in the rendezvous (as torch 1.13
	// printed it, CI run of 2026-11-25); node 1 was stopped before it said anything.
	// No worker ever ran: the port is the cause.
	agent := bind + strings.Join([]string{
		"Traceback (most recent call last):",
		`  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 113, in _call_store`,
		"    return getattr(self._store, store_op)(*args, **kwargs)",
		"RuntimeError: Broken pipe",
		"",
		"The above exception was the direct cause of the following exception:",
		"",
		"Traceback (most recent call last):",
		`  File "/usr/bin/torchrun", line 33, in <module>`,
		"    sys.exit(load_entry_point('torch==1.13.0a0+gitunknown', 'console_scripts', 'torchrun')())",
		`  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 115, in _call_store`,
		"    raise RendezvousConnectionError(",
		"torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.",
	}, "\n")
	for _, other := range []*Failures{nil, feedText("", t0)} {
		c, ok = RootCause([]NodeReport{
			{Replica: 0, GroupRank: -1, Failures: feedText(agent, t0)},
			{Replica: 1, GroupRank: -1, Failures: other},
		})
		if !ok || c.String() != "rendezvous port 29512 is in use" {
			t.Errorf("one node could not bind, no worker ran: cause %q", c.String())
		}
	}
	// One node failing to bind is how a local job starts: the other node hosts it.
	c, _ = RootCause([]NodeReport{
		{Replica: 0, GroupRank: -1, Failures: feedText(bind+gloo, t0)},
		{Replica: 1, GroupRank: -1, Failures: feedText(gloo, t0)},
	})
	if strings.Contains(c.String(), "in use") {
		t.Errorf("cause %q", c.String())
	}
}

func TestBindFailed(t *testing.T) {
	for s, want := range map[string]int{
		"W1125 socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).": 29500,
		"[c10d] The server socket has failed to bind to 0.0.0.0:41000 (errno: 98 - Address already in use).":                    41000,
		"[c10d] The server socket has failed to bind to [::]:29500 (errno: 13 - Permission denied).":                            0,
		"The server socket has failed to listen on any local network address.":                                                  0,
	} {
		if got, _ := BindFailed(s); got != want {
			t.Errorf("BindFailed(%q) = %d, want %d", s, got, want)
		}
	}
}

// Node 1 of a real 2x2 run of examples/ddp/train.py (@record, --tee 1, PET_REDIRECTS=1)
// where rank 3 raised: torchrun's summary names each rank's error file and blames rank 2
// (the gloo failure of local rank 0); the error file of rank 3 is named with its rank
// and the traceback its node's stderr holds for it.
func TestRecordErrorFileRank(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 1, 0, 0, time.UTC)
	n := NodeReport{Replica: 1, NProc: 2, GroupRank: -1, Failures: feedFile(t, "record_node1.stderr", t0)}
	const dir = "/home/u/.local/state/wick/logs/wick/train-x5kgtwq21s6g/torchelastic/train/train-x5kgtwq21s6g_8dgfj_mk/attempt_0/"
	if !n.WroteErrorFile(dir+"1/error.json") || n.WroteErrorFile(dir+"2/error.json") {
		t.Error("the summary's error files are not read")
	}
	if r := n.RankOfErrorFile(dir+"1/error.json", 1); r != 3 {
		t.Errorf("local rank 1's error file is rank %d's, want 3", r)
	}
	// Without a summary, the group rank says it.
	bare := NodeReport{Replica: 1, NProc: 2, GroupRank: 1, Failures: &Failures{}}
	if r := bare.RankOfErrorFile("/elsewhere/1/error.json", 1); r != 3 {
		t.Errorf("without a summary: rank %d, want 3", r)
	}
	const msg = "InjectedFailure: rank 3 fails on purpose at step 3"
	c := n.ErrorFileCause(3, msg, "from the file\n", t0)
	if c.String() != "rank 3: "+msg {
		t.Errorf("cause %q", c.String())
	}
	if len(c.Traceback) != 9 || c.Traceback[0] != "Traceback (most recent call last):" || c.Traceback[8] != msg || c.Prefixed || c.Began.IsZero() {
		t.Errorf("the cause's traceback is not its node's lines: %q", c.Traceback)
	}
	b, ok := BlameOf(c.JSON())
	if !ok || b.Rank != 3 || !b.From.Equal(c.Began) || !b.To.Equal(c.Time) {
		t.Errorf("blame %+v %v", b, ok)
	}
	// An error file whose traceback the node's lines lack keeps the file's.
	if c := bare.ErrorFileCause(3, msg, "Traceback (most recent call last):\n"+msg+"\n", t0); len(c.Traceback) != 2 || c.Began.IsZero() != true {
		t.Errorf("from the file: %q", c.Traceback)
	}
}

// A worker that exits with a code of its own, without a traceback (python3 cannot
// open the script: a real node's stderr, torch 1.13, --tee 1): the cause is its rank
// and exit code from torchrun's summary, where the app's error was the agent's
// "train/0 failed with exit code 1".
func TestExitCodeWithoutTraceback(t *testing.T) {
	n0 := feedFile(t, "noscript_node0.stderr", time.Date(2026, 11, 26, 7, 47, 53, 0, time.UTC))
	if tbs := n0.WorkerTracebacks(); len(tbs) != 0 {
		t.Fatalf("worker tracebacks: %q", exceptions(tbs))
	}
	c, ok := RootCause([]NodeReport{{Replica: 0, NProc: 1, GroupRank: 0, Failures: n0}})
	if !ok || c.String() != "rank 0: exit code 2" || c.Replica != 0 {
		t.Errorf("cause: %v %q (replica %d)", ok, c.String(), c.Replica)
	}
	// A signal still wins over an exit code: it says more.
	if c, ok := RootCause([]NodeReport{{Replica: 0, NProc: 1, GroupRank: 0, Failures: &Failures{Summary: []Failure{{Rank: 1, ExitCode: -9, Time: "2026-11-26_07:47:53"}, {Rank: 0, ExitCode: 2, Root: true, Time: "2026-11-26_07:47:53"}}}}}); !ok || c.String() != "rank 1: killed by SIGKILL" {
		t.Errorf("with a signal: %v %q", ok, c.String())
	}
}

// A node that was not watched (local_docker's image without /bin/sh, a node whose
// exits wick did not see) where torchrun's poll found only the peer: rank 3 failed in
// gloo and exited while rank 2, which raised, was still finalizing, and torchrun then
// stopped rank 2 (SIGTERM, not listed). Two tracebacks, one failed worker: the
// summary's worker cannot be the raiser for sure, so the cause is the node's tie, never
// the peer's rank said as sure.
func TestSummaryOfThePeerAloneIsATie(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC)
	lines := append(traceback("RuntimeError: loss diverged"), traceback("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:6033")...)
	lines = append(lines, strings.Split(summaryOf(
		Failure{Rank: 3, Local: 1, ExitCode: 1, PID: 101, Time: "2026-11-25_21:05:05", Traceback: noTraceback}), "\n")...)
	f := feedText(strings.Join(lines, "\n"), t0)
	for _, tc := range []struct {
		name  string
		group int
		nproc int
		want  string
	}{
		{"node known", 1, 2, "rank 2 or 3: RuntimeError: loss diverged"},
		{"nproc unknown", 1, 0, "RuntimeError: loss diverged"},
	} {
		c, ok := RootCause([]NodeReport{{Replica: 1, NProc: tc.nproc, GroupRank: tc.group, Failures: f}})
		if !ok || c.String() != tc.want {
			t.Errorf("%s: cause %q, want %q", tc.name, c.String(), tc.want)
		}
	}
	// One traceback and the one failed worker: that worker's.
	one := feedText(strings.Join(append(traceback("RuntimeError: loss diverged"), strings.Split(summaryOf(
		Failure{Rank: 3, Local: 1, ExitCode: 1, PID: 101, Time: "2026-11-25_21:05:05", Traceback: noTraceback}), "\n")...), "\n"), t0)
	c, _ := RootCause([]NodeReport{{Replica: 1, NProc: 2, GroupRank: 1, Failures: one}})
	if want := "rank 3: RuntimeError: loss diverged"; c.String() != want {
		t.Errorf("one traceback: cause %q, want %q", c.String(), want)
	}
}
