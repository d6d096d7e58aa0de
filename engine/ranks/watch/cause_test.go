package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
)

// What a sampler's file says of a node's two workers puts the node's first traceback
// on a rank only where the samples order the workers apart, whatever their thread
// counts did after the first traceback began: a count that fell and then rose again
// (a finalizing Python that starts a thread, Go's runtime) keeps its fall, so the
// worker that raised is never ordered after its peer by when it was gone alone.
//
// The node is node 1 of a real 2x2 run (ranks' norecord_node1.stderr, unprefixed
// tracebacks): rank 3 (pid 27178) raised, its traceback in the file at sample 1;
// rank 2 (pid 27176) failed in gloo after it, its traceback at sample 3; torchrun's
// summary lists rank 2 alone. Samples are a second apart (s(i)); each worker's line
// is "SAMPLE THREADS", in order.
func TestParsedWorkersNameTheRaisingRankOrTie(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC)
	s := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	b, err := os.ReadFile(filepath.Join("..", "testdata", "norecord_node1.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	probe := &ranks.Failures{}
	for _, l := range lines {
		probe.Feed(l, t0)
	}
	second := probe.WorkerTracebacks()[1].Start
	f := &ranks.Failures{}
	for i, l := range lines {
		at := s(1)
		if i >= second {
			at = s(3)
		}
		f.Feed(l, at)
	}
	f.Summary = []ranks.Failure{{Rank: 2, Local: 0, ExitCode: 1, PID: 27176, Time: "2026-11-25_21:05:05"}}
	node := ranks.NodeReport{Role: "ddp", Replica: 1, NProc: 2, GroupRank: 1, Failures: f}
	const right = "rank 3: RuntimeError: loss diverged on rank 3 at step 3"
	const tie = "rank 2 or 3: RuntimeError: loss diverged on rank 3 at step 3"
	// Every sample (Slurm's log sizes stamp them all): the one before s(i) is s(i-1).
	var samples []time.Time
	for i := -5; i <= 12; i++ {
		samples = append(samples, s(i))
	}
	for _, tc := range []struct {
		name   string
		r3, r2 string // "SAMPLE THREADS" lines
		want   string
	}{
		{
			// Rank 3's threads fell after its traceback, a thread started, and it was
			// gone last; rank 2 ended in between. By its going alone, rank 3 would
			// be second and rank 2 named as sure.
			name: "the raiser's fall undone by a rise, gone after the peer",
			r3:   "-5 10, 2 8, 3 9, 7 0",
			r2:   "-5 10, 4 8, 5 0",
			want: tie,
		},
		{
			name: "the raiser fell, rose and fell again after the peer began to end",
			r3:   "-5 10, 2 8, 3 9, 5 7, 7 0",
			r2:   "-5 10, 4 8, 5 0",
			want: tie,
		},
		{
			// Its fall before the first traceback (its stderr late to the file) is
			// kept too: the fall it began with, undone by a rise after.
			name: "the raiser fell before the first traceback, rose after it",
			r3:   "-5 10, 0 8, 3 9, 7 0",
			r2:   "-5 10, 4 8, 5 0",
			want: tie,
		},
		{
			name: "both fell and rose, the raiser gone last",
			r3:   "-5 10, 2 8, 3 9, 8 0",
			r2:   "-5 10, 4 8, 5 9, 6 0",
			want: tie,
		},
		{
			// What its falls and rises were, rank 3 was gone before rank 2 began
			// to end: named.
			name: "the raiser fell, rose, and was gone before the peer fell",
			r3:   "-5 10, 2 8, 3 9, 4 0",
			r2:   "-5 10, 5 8, 6 0",
			want: right,
		},
		{
			name: "the peer fell, rose and fell again after the raiser's end",
			r3:   "-5 10, 2 8, 9 0",
			r2:   "-5 10, 4 8, 5 9, 6 8, 7 0",
			want: right,
		},
		{
			// A thread pool's churn before the first traceback is the workers' work:
			// its falls say nothing of their ends.
			name: "falls and rises before the first traceback",
			r3:   "-5 10, -4 9, -3 10, -2 9, -1 10, 2 8, 7 0",
			r2:   "-5 10, -4 9, -3 10, 4 8, 5 0",
			want: right,
		},
		{
			name: "both fell at one sample, one rose",
			r3:   "-5 10, 4 8, 5 9, 8 0",
			r2:   "-5 10, 4 8, 6 0",
			want: tie,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := watchFile(t, s, map[int][2]string{27178: {"3", tc.r3}, 27176: {"2", tc.r2}})
			n := node
			n.Workers = parse(file, samples, f.FirstBegan())
			if c, ok := ranks.RootCause([]ranks.NodeReport{n}); !ok || c.String() != tc.want {
				t.Errorf("%v %q, want %q; file:\n%s", ok, c.String(), tc.want, file)
			}
		})
	}
}

// parse is Parse as the schedulers call it.
func parse(b []byte, samples []time.Time, first time.Time) map[int]ranks.Watched {
	return Parse(b, samples, first)
}

// watchFile is the sampler's file of workers by pid ({rank, "SAMPLE THREADS, ..."}),
// one sample's lines together, samples in order.
func watchFile(t *testing.T, s func(int) time.Time, workers map[int][2]string) []byte {
	t.Helper()
	bySample := map[int][]string{}
	for pid, w := range workers {
		for _, x := range strings.Split(w[1], ", ") {
			var i, th int
			if _, err := fmt.Sscanf(x, "%d %d", &i, &th); err != nil {
				t.Fatalf("%q: %v", x, err)
			}
			bySample[i] = append(bySample[i], fmt.Sprintf("%d %d %s %d", s(i).UnixMilli(), pid, w[0], th))
		}
	}
	var out []byte
	for i := -100; i <= 100; i++ {
		for _, l := range bySample[i] {
			out = append(out, l+"\n"...)
		}
	}
	return out
}
