package metrics_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// c10dApp describes a 2x2 torchrun role whose rendezvous made replica 0 group rank 1
// and replica 1 group rank 0; its status says so when known (Slurm learns it from the
// workers) and torchrun's lines do not (no LOGLEVEL=INFO).
func c10dApp(known bool) *sched.Description {
	d := &sched.Description{App: &spec.AppDef{Name: "ddp", Roles: []spec.Role{
		{Name: "train", Entrypoint: "bash", Args: []string{"-c", "torchrun --nproc_per_node=2 train.py"}, NumReplicas: 2},
	}}}
	d.Status.Handle = "slurm://wick/ddp-1"
	d.Status.State = spec.Running
	rs := spec.RoleStatus{Role: "train"}
	for k := range 2 {
		r := spec.ReplicaStatus{ID: k, Role: "train", State: spec.Running}
		if known {
			r.GroupRank = spec.IntPtr(1 - k)
		}
		rs.Replicas = append(rs.Replicas, r)
	}
	d.Status.Roles = []spec.RoleStatus{rs}
	return d
}

// c10dLines: each node's two workers print a loss at steps 1 and 2, teed with their
// local rank; global rank 3 (replica 0's local rank 1) turns NaN at step 2.
var c10dLines = map[int][]string{
	0: {"[0]:step 1 loss 2.5", "[1]:step 1 loss 3.5", "[0]:step 2 loss 2.25", "[1]:step 2 loss nan"},
	1: {"[0]:step 1 loss 0.5", "[1]:step 1 loss 1.5", "[0]:step 2 loss 0.25", "[1]:step 2 loss 1.25"},
}

// TestNamerGroupRankFromStatus: the metrics name a rank by the group rank its node's
// status gives, as the wall's panes and `wick log --rank` do (ranks.Tracker), and
// learn it from a newer status.
func TestNamerGroupRankFromStatus(t *testing.T) {
	n := metrics.NewNamerOf(c10dApp(false))
	if got := n.Name(metrics.Rank{Role: "train", Replica: 0, Local: 1}); got != "rank 1" {
		t.Errorf("before the status says: %q, want the replica's guess rank 1", got)
	}
	n.Update(c10dApp(true))
	for _, c := range []struct {
		k, local int
		want     string
	}{{0, 0, "rank 2"}, {0, 1, "rank 3"}, {1, 0, "rank 0"}, {1, 1, "rank 1"}, {1, -1, "train/1"}} {
		if got := n.Name(metrics.Rank{Role: "train", Replica: c.k, Local: c.local}); got != c.want {
			t.Errorf("train/%d local %d: %q, want %q", c.k, c.local, got, c.want)
		}
	}
}

// TestBookGroupRankFromStatus: the app list's background reading names the rank of an
// alarm from its node's status, a running app's from its latest status.
func TestBookGroupRankFromStatus(t *testing.T) {
	h, _ := spec.ParseHandle("slurm://wick/ddp-1")
	b := metrics.NewBook(fakeLines(c10dLines), metrics.DefaultConfig(), "")
	ctx := context.Background()
	f, err := b.Scan(ctx, h, c10dApp(true))
	if err != nil || f.N != 1 || f.Lines[0] != "loss on rank 3 is NaN at step 2" {
		t.Fatalf("found %+v %v, want the NaN of rank 3", f, err)
	}
	// Without the status's word the ranks are guessed from the replica index; a later
	// status names them right (the alarms are described again from it when the app
	// ends).
	b = metrics.NewBook(fakeLines(c10dLines), metrics.DefaultConfig(), "")
	if f, err := b.Scan(ctx, h, c10dApp(false)); err != nil || f.N != 1 || f.Lines[0] != "loss on rank 1 is NaN at step 2" {
		t.Fatalf("found %+v %v, want the guess rank 1", f, err)
	}
	d := c10dApp(true)
	d.Status.State = spec.Succeeded
	if f, err := b.Scan(ctx, h, d); err != nil || f.N != 1 || f.Lines[0] != "loss on rank 3 is NaN at step 2" {
		t.Fatalf("found %+v %v, want rank 3 from the later status", f, err)
	}
}

// fakeLines serves fixed lines per replica, a second apart, as a finished app's logs.
type fakeLines map[int][]string

func (f fakeLines) LogLines(_ context.Context, _ spec.Handle, role string, k int, opts sched.LogOptions) (sched.LogIterator, error) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	var ls []sched.Line
	for i, text := range f[k] {
		l := sched.Line{Role: role, Replica: k, Text: text, Time: t0.Add(time.Duration(i) * time.Second)}
		if !l.Time.Before(opts.Since) {
			ls = append(ls, l)
		}
	}
	return &sliceLines{ls: ls}, nil
}

type sliceLines struct{ ls []sched.Line }

func (s *sliceLines) Next(context.Context) (sched.Line, error) {
	if len(s.ls) == 0 {
		return sched.Line{}, io.EOF
	}
	l := s.ls[0]
	s.ls = s.ls[1:]
	return l, nil
}

func (s *sliceLines) Close() error { return nil }
