package compare_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/compare"
)

// countingBackend counts the lines each log iterator it opens yields.
type countingBackend struct {
	common.Backend
	mu    sync.Mutex
	reads []*int // lines yielded, per iterator opened
}

func (b *countingBackend) LogLines(ctx context.Context, h spec.Handle, role string, k int, opts sched.LogOptions) (sched.LogIterator, error) {
	it, err := b.Backend.LogLines(ctx, h, role, k, opts)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := new(int)
	b.reads = append(b.reads, n)
	return &countingIter{LogIterator: it, b: b, n: n}, nil
}

// counts are the lines each iterator yielded, in the order they were opened.
func (b *countingBackend) counts() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]int, len(b.reads))
	for i, n := range b.reads {
		out[i] = *n
	}
	return out
}

type countingIter struct {
	sched.LogIterator
	b *countingBackend
	n *int
}

func (it *countingIter) Next(ctx context.Context) (sched.Line, error) {
	l, err := it.LogIterator.Next(ctx)
	if err == nil {
		it.b.mu.Lock()
		*it.n++
		it.b.mu.Unlock()
	}
	return l, err
}

func (it *countingIter) Ready() bool {
	r, ok := it.LogIterator.(sched.Readier)
	return ok && r.Ready()
}

// TestCompareReadsOnlyNewLines: while an app runs, a refresh of the compare view
// reads only the lines it wrote since the last reading (as the sweep chart does, one
// sweep.Reader), not its whole log again: the app writes steps 1-3, waits, then 4-6;
// the view shows the last loss of each half, and no reading after the first takes
// more than the new lines (and the line at the mark it resumes from).
func TestCompareReadsOnlyNewLines(t *testing.T) {
	r := viewtest.Runner(t)
	gate := filepath.Join(t.TempDir(), "go")
	script := `for s in 1 2 3; do echo "step $s loss 1.$s"; sleep 0.05; done
while [ ! -e "$0" ]; do sleep 0.02; done
for s in 4 5 6; do echo "step $s loss 1.$s"; sleep 0.05; done`
	app := &spec.AppDef{Name: "t", Roles: []spec.Role{{Name: "t", Image: "/", Entrypoint: "sh", Args: []string{"-c", script, gate}, NumReplicas: 1}}}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	h, err := r.Run(ctx, app, "local_cwd", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Cancel(context.Background(), h) })

	b := &countingBackend{Backend: r}
	vc := viewtest.Context(t, 160, 30, time.Now(), compare.Actions())
	vc.Backend = b
	d := viewtest.New(t, vc, compare.New(vc, "sweep-test", []string{"v"}, []compare.App{{Handle: h, Values: map[string]string{"v": "1"}, State: spec.Running}}))
	d.WaitFor("1 app", "LAST LOSS")
	// Until a reading has seen the third step (the first may come before it).
	testkit.Wait(t, testkit.Scale(20*time.Second), "step 3's loss 1.3 shown", func() (bool, string) {
		if scr := d.Screen(); strings.Contains(scr, "1.3") {
			return true, ""
		}
		d.Keys("ctrl+r")
		scr := d.WaitFor("1 app", "LAST LOSS")
		return strings.Contains(scr, "1.3"), scr
	})
	first := len(b.counts())
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := r.Wait(ctx, h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("the app: %v, %v; want SUCCEEDED", st, err)
	}
	d.Keys("ctrl+r")
	d.WaitFor("1.6", "SUCCEEDED")
	counts := b.counts()
	if len(counts) <= first {
		t.Fatalf("no reading after the app ended: %v", counts)
	}
	for i, n := range counts[first:] {
		if n > 4 {
			t.Errorf("reading %d after the first took %d lines (all counts %v): the app's whole log again, not its 3 new lines", i+1, n, counts)
		}
	}
}
