package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// fakeTorchrun prints what torchrun 1.13 prints with --tee 1 and LOGLEVEL=INFO, for two
// workers per node, with c10d's twist: replica 0 joined second and is group rank 1.
const fakeTorchrun = `#!/bin/sh
case "$TORCHELASTIC_ERROR_FILE" in */0/error.json) g=1 ;; *) g=0 ;; esac
printf 'INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:\n  restart_count=0\n  group_rank=%d\n  group_world_size=2\n  local_ranks=[0, 1]\n  global_ranks=[%d, %d]\n\n' $g $((2*g)) $((2*g+1)) >&2
# Workers start after the rendezvous, as torchrun's do.
sleep 1
echo "[0]:hello from global rank $((2*g))"
echo "[1]:hello from global rank $((2*g+1))"
`

func TestLogRank(t *testing.T) {
	h := newHarness(t)
	if err := os.WriteFile(filepath.Join(h.work, "torchrun"), []byte(fakeTorchrun), 0o755); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "-s", "local_cwd", "-cfg", "prepend_cwd=true", "dist.ddp", "-j", "2x2", "--script", "train.py")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(strings.SplitN(r.stdout, "\n", 2)[0])
	for rank, node := range map[string]string{"0": "train/1", "3": "train/0", "1": "train/1"} {
		r = h.exec("log", handle+"/train", "--rank", rank)
		if r.code != 0 {
			t.Fatalf("log --rank %s: exit %d: %s", rank, r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], node+" [") || !strings.HasSuffix(lines[0], "hello from global rank "+rank) {
			t.Errorf("log --rank %s printed %q; want one line of %s from global rank %s", rank, r.stdout, node, rank)
		}
	}
	// The node's own lines stay reachable by replica.
	r = h.exec("log", handle+"/train/0")
	if !strings.Contains(r.stdout, "group_rank=1") || !strings.Contains(r.stdout, "hello from global rank 3") {
		t.Errorf("log of replica 0 lacks its own lines: %q", r.stdout)
	}
	// A torchrun without --tee: nothing to tell ranks apart by, and wick says so.
	r = h.exec("run", "utils.echo", "--msg", "no prefix")
	if r = h.exec("log", strings.TrimSpace(strings.SplitN(r.stdout, "\n", 2)[0]), "--rank", "0"); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "carries torchrun's rank prefix") {
		t.Errorf("log --rank of unprefixed lines: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if r = h.exec("log", handle+"/train", "--rank", "-1"); r.code != 2 || !strings.Contains(r.stderr, "--rank") {
		t.Errorf("log --rank -1: exit %d, %q; want a usage error", r.code, r.stderr)
	}
}

// TestRankFilterGroupRankFromStatus: `wick log --rank N` picks the lines of the rank
// the node's status names (its group rank, which under c10d or Slurm need not be the
// replica index), the rank the wall's pane and the metrics call N, from torchrun's
// teed lines alone (no rendezvous block: torchrun without LOGLEVEL=INFO).
func TestRankFilterGroupRankFromStatus(t *testing.T) {
	d := &sched.Description{App: &spec.AppDef{Name: "ddp", Roles: []spec.Role{
		{Name: "train", Entrypoint: "bash", Args: []string{"-c", "torchrun --nproc_per_node=2 train.py"}, NumReplicas: 2},
	}}}
	rs := spec.RoleStatus{Role: "train"}
	for k := range 2 {
		rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{ID: k, Role: "train", GroupRank: spec.IntPtr(1 - k)})
	}
	d.Status.Roles = []spec.RoleStatus{rs}
	lines := []sched.Line{
		{Role: "train", Replica: 0, Text: "agent starting"},
		{Role: "train", Replica: 0, Text: "[0]:step 1 loss 2.5"},
		{Role: "train", Replica: 0, Text: "[1]:step 1 loss 3.5"},
		{Role: "train", Replica: 1, Text: "[0]:step 1 loss 0.5"},
		{Role: "train", Replica: 1, Text: "[1]:step 1 loss 1.5"},
	}
	for _, c := range []struct {
		ranks []int
		want  []string
	}{
		{[]int{3}, []string{"train/0 [1]:step 1 loss 3.5"}},
		{[]int{1}, []string{"train/1 [1]:step 1 loss 1.5"}},
		{[]int{0, 2}, []string{"train/0 [0]:step 1 loss 2.5", "train/1 [0]:step 1 loss 0.5"}},
	} {
		var got []string
		rf := newRankFilter(d, c.ranks, nil, func(l sched.Line) error {
			got = append(got, l.Role+"/"+strconv.Itoa(l.Replica)+" "+l.Text)
			return nil
		}, func(name string, l sched.Line) error {
			t.Errorf("%s %q named by node: every rank is known", name, l.Text)
			return nil
		})
		for _, l := range lines {
			if err := rf.line(l); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, c.want) || !rf.seen {
			t.Errorf("--rank %v: %q (prefixed %v), want %q", c.ranks, got, rf.seen, c.want)
		}
	}
}

// fakeGluedTee prints what torchrun 1.13's tee prints when it copies a worker's line
// between Python's two writes of a print (its text, then its newline) while the other
// worker's line comes whole (tail_log.tail_logfile copies a partial line, prefixed, and
// the rest later, prefixed again): the second worker's line glued to the first's.
const fakeGluedTee = `#!/bin/sh
case "$TORCHELASTIC_ERROR_FILE" in */0/error.json) g=1 ;; *) g=0 ;; esac
printf 'INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:\n  restart_count=0\n  group_rank=%d\n  group_world_size=2\n  local_ranks=[0, 1]\n  global_ranks=[%d, %d]\n\n' $g $((2*g)) $((2*g+1)) >&2
sleep 1
printf '[0]:rank %d/4 ready[1]:rank %d/4 ready\n[0]:\n[1]:x[1]: 5\n' $((2*g)) $((2*g+1))
`

// TestLogRankGluedTee: wick log --rank gives each rank its own line where torchrun's
// tee glued two workers' lines into one (the flake of TestDDPFailingRankIsTheAppError
// under load: rank 3's "ready" line was rank 2's); a worker's own text that looks
// like its prefix stays its own.
func TestLogRankGluedTee(t *testing.T) {
	h := newHarness(t)
	if err := os.WriteFile(filepath.Join(h.work, "torchrun"), []byte(fakeGluedTee), 0o755); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "-s", "local_cwd", "-cfg", "prepend_cwd=true", "dist.ddp", "-j", "2x2", "--script", "train.py")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(strings.SplitN(r.stdout, "\n", 2)[0])
	for rank, want := range map[int]string{
		0: "train/1 [0]:rank 0/4 ready\ntrain/1 [0]:\n",
		1: "train/1 [1]:rank 1/4 ready\ntrain/1 [1]:x[1]: 5\n",
		2: "train/0 [0]:rank 2/4 ready\ntrain/0 [0]:\n",
		3: "train/0 [1]:rank 3/4 ready\ntrain/0 [1]:x[1]: 5\n",
	} {
		r = h.exec("log", handle+"/train", "--rank", strconv.Itoa(rank))
		if r.code != 0 || r.stdout != want {
			t.Errorf("log --rank %d: exit %d\n%s%s\nwant\n%s", rank, r.code, r.stdout, r.stderr, want)
		}
	}
}

// fakeGluedLosses is the one node of a 1x2 torchrun training whose tee glued rank 1's
// loss line to rank 0's (torch 1.13's tail_log.tail_logfile copied rank 0's text before
// its newline, prefixed "[0]:", and the newline later, "[0]:" alone): rank 1's only
// loss, 0.6, is in the glued line.
const fakeGluedLosses = `#!/bin/sh
printf 'INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:\n  restart_count=0\n  group_rank=0\n  group_world_size=1\n  local_ranks=[0, 1]\n  global_ranks=[0, 1]\n\n' >&2
printf '[0]:step 1 loss 0.5[1]:step 1 loss 0.6\n[0]:\n[0]:step 2 loss 0.25\n'
`

// TestMetricsGluedTee: wick metrics reads each part of a line where torchrun's tee glued
// two workers' lines as its rank's: rank 1's loss is charted under rank 1, not rank 0.
func TestMetricsGluedTee(t *testing.T) {
	h := newHarness(t)
	if err := os.WriteFile(filepath.Join(h.work, "torchrun"), []byte(fakeGluedLosses), 0o755); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "-s", "local_cwd", "-cfg", "prepend_cwd=true", "dist.ddp", "-j", "1x2", "--script", "train.py")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(strings.SplitN(r.stdout, "\n", 2)[0])
	c := h.exec("metrics", "--csv", "-m", "loss", handle)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(c.stdout), "\n")[1:] {
		if rec := strings.Split(l, ","); len(rec) == 5 {
			got = append(got, rec[0]+" step "+rec[1]+" "+rec[3]+" "+rec[4])
		}
	}
	want := []string{"rank 0 step 1 loss 0.5", "rank 1 step 1 loss 0.6", "rank 0 step 2 loss 0.25"}
	if c.code != 0 || !slices.Equal(got, want) {
		t.Errorf("metrics --csv: exit %d\n%s%s\nread %q, want %q", c.code, c.stdout, c.stderr, got, want)
	}
}
