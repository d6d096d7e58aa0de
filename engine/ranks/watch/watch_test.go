package watch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
)

// What a sampler wrote reads back as when each worker began to end and when it was
// gone, each with the sample before it: the stamps of the file's lines, and the other
// samples given (Slurm's log sizes).
func TestParse(t *testing.T) {
	ms := func(i int64) time.Time { return time.UnixMilli(1_700_000_000_000 + i*100) }
	b := []byte(`1700000000000 41 2 10
1700000000000 42 3 10
1700000000300 42 3 5
garbage line
1700000000400 42 3 4
1700000000700 41 2 9
1700000000800 41 2 0
1700000001000 42 3 0
`)
	got := Parse(b, []time.Time{ms(2), ms(6)})
	want := map[int]ranks.Watched{
		// Rank 3's count fell at sample 3 (the one before: 2, a log sample) and last
		// at 4; it went at 10.
		42: {Rank: 3, DownPrev: ms(2), Down: ms(3), Settled: ms(4), GonePrev: ms(8), Gone: ms(10)},
		41: {Rank: 2, DownPrev: ms(6), Down: ms(7), Settled: ms(7), GonePrev: ms(7), Gone: ms(8)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for pid, w := range want {
		if got[pid] != w {
			t.Errorf("pid %d: %+v, want %+v", pid, got[pid], w)
		}
	}
	// A count that rose again was not a worker ending: its fall is forgotten.
	rose := Parse([]byte("1700000000000 7 0 5\n1700000000100 7 0 4\n1700000000200 7 0 5\n"), nil)
	if w := rose[7]; !w.Down.IsZero() || !w.Settled.IsZero() {
		t.Errorf("a fall then a rise: %+v", w)
	}
	if Parse([]byte("nothing\n"), nil) != nil {
		t.Error("a file of no lines says something")
	}
}

// The Docker sampler is a script sh and bash read, and its functions find the agent
// (the process whose children have GROUP_RANK) below a process and record its
// workers: one line each, then a line each once gone, with the time the shell paused
// for between samples.
func TestSampler(t *testing.T) {
	for _, sh := range []string{"sh", "bash"} {
		t.Run(sh, func(t *testing.T) {
			if _, err := exec.LookPath(sh); err != nil {
				t.Skip("no " + sh)
			}
			if out, err := exec.Command(sh, "-n", "-c", Sampler("/run/it's")).CombinedOutput(); err != nil {
				t.Fatalf("sh -n: %v\n%s", err, out)
			}
			dir := t.TempDir()
			// The agent, below a shell: two workers that run 3 s.
			root := exec.Command("sh", "-c", `sh -c 'export GROUP_RANK=3; RANK=6 sleep 3 & RANK=7 sleep 3 & wait'; sleep 0.5`)
			if err := root.Start(); err != nil {
				t.Fatal(err)
			}
			script := strings.Replace(Sampler(dir), "g 1 && k", "g "+strconv.Itoa(root.Process.Pid)+" && k", 1)
			sampler := exec.Command(sh, "-c", script)
			var stderr bytes.Buffer
			sampler.Stderr = &stderr
			if err := sampler.Start(); err != nil {
				t.Fatal(err)
			}
			_ = root.Wait()
			time.Sleep(300 * time.Millisecond)
			_ = sampler.Process.Kill()
			_ = sampler.Wait()
			b, _ := os.ReadFile(filepath.Join(dir, "workers.watch"))
			rank, _ := os.ReadFile(filepath.Join(dir, "workers.rank"))
			w := Parse(b, nil)
			if string(rank) != "3\n" || len(w) != 2 || stderr.Len() > 0 {
				t.Fatalf("rank file %q, watch:\n%s\nstderr: %s", rank, b, stderr.Bytes())
			}
			for _, x := range w {
				if x.Rank != 6 && x.Rank != 7 || x.Gone.IsZero() || x.GonePrev.IsZero() {
					t.Errorf("%+v; watch:\n%s", x, b)
				}
			}
		})
	}
}
