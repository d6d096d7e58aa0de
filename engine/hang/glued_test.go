package hang

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// linesOf is a Lines source of fixed lines, by replica.
type linesOf map[int][]sched.Line

func (s linesOf) LogLines(_ context.Context, _ spec.Handle, _ string, k int, opts sched.LogOptions) (sched.LogIterator, error) {
	ls := s[k]
	if opts.Tail > 0 && len(ls) > opts.Tail {
		ls = ls[len(ls)-opts.Tail:]
	}
	return &sliceIter{lines: ls}, nil
}

type sliceIter struct{ lines []sched.Line }

func (it *sliceIter) Next(ctx context.Context) (sched.Line, error) {
	if len(it.lines) == 0 {
		return sched.Line{}, io.EOF
	}
	l := it.lines[0]
	it.lines = it.lines[1:]
	return l, nil
}

func (it *sliceIter) Close() error { return nil }

// TestGluedTeeLineStep: a line where torchrun's tee glued two workers' lines
// ("[0]:step 2 ...[1]:step 2 ...", a worker caught between its text and its newline)
// is each rank's part, as the wall reads it: rank 1, stuck after step 2, stopped at
// step 2, not at step 1 (the step of its last line of its own).
func TestGluedTeeLineStep(t *testing.T) {
	start := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
	line := func(sec int, text string) sched.Line {
		return sched.Line{Role: "trainer", Replica: 0, Stream: sched.Stderr, Time: at(sec), Text: text}
	}
	src := linesOf{0: {
		line(10, "[0]:step 1 loss 0.5"),
		line(10, "[1]:step 1 loss 0.5"),
		line(20, "[0]:step 2 loss 0.4[1]:step 2 loss 0.4"),
		line(20, "[0]:"),
		line(30, "[0]:step 3 loss 0.3"),
	}}
	d := &sched.Description{
		App: &spec.AppDef{Name: "ddp", Metadata: map[string]string{spec.MetaHangAfter: "20s"}, Roles: []spec.Role{{
			Name: "trainer", Entrypoint: "bash", NumReplicas: 1,
			Args: []string{"-c", "torchrun --nnodes 1 --nproc_per_node 2 train.py"}}}},
		Status: spec.AppStatus{AppID: "ddp", State: spec.Running, Roles: []spec.RoleStatus{{Role: "trainer", Replicas: []spec.ReplicaStatus{
			{ID: 0, Role: "trainer", State: spec.Running, Started: start}}}}},
	}
	h, err := Check(context.Background(), src, spec.Handle{}, d, at(60))
	if err != nil || h == nil {
		t.Fatalf("hang %+v %v, want one", h, err)
	}
	const want = "hang: no output or new step for 30s (alarm after 20s); rank 1 stopped first, at step 2 (the others at 3)"
	if got := h.Message(at(60)); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
}
