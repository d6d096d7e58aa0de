package watch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	got := Parse(b, []time.Time{ms(2), ms(6)}, ms(1))
	want := map[int]ranks.Watched{
		// Rank 3's count fell at sample 3 (the one before: 2, a log sample) and last
		// at 4; it went at 10.
		42: {Rank: 3, DownPrev: ms(2), Down: ms(3), Settled: ms(4), FellPrev: ms(2), Fell: ms(3), GonePrev: ms(8), Gone: ms(10)},
		41: {Rank: 2, DownPrev: ms(6), Down: ms(7), Settled: ms(7), FellPrev: ms(6), Fell: ms(7), GonePrev: ms(7), Gone: ms(8)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for pid, w := range want {
		if got[pid] != w {
			t.Errorf("pid %d: %+v, want %+v", pid, got[pid], w)
		}
	}
	if Parse([]byte("nothing\n"), nil, time.Time{}) != nil {
		t.Error("a file of no lines says something")
	}
}

// A worker's count that fell and rose again: the fall in progress (Down, Settled) is
// forgotten, as a worker that did not begin to end then, but its first fall from the
// first traceback on (Fell) is kept, a rise after it or not; falls and rises before
// the first traceback began are its work's. first is sample 10; samples are 100 ms
// apart, each one in the file (a line of another worker, pid 9, at every sample).
func TestParseFallsAndRises(t *testing.T) {
	ms := func(i int) time.Time { return time.UnixMilli(1_700_000_000_000 + int64(i)*100) }
	first := ms(10)
	for _, tc := range []struct {
		name  string
		lines string // "SAMPLE THREADS, ..."
		want  ranks.Watched
	}{
		{
			name:  "fell after the first traceback, went",
			lines: "0 10, 12 8, 13 7, 15 0",
			want:  ranks.Watched{DownPrev: ms(11), Down: ms(12), Settled: ms(13), FellPrev: ms(11), Fell: ms(12), GonePrev: ms(14), Gone: ms(15)},
		},
		{
			name:  "fell, rose, went",
			lines: "0 10, 12 8, 13 9, 15 0",
			want:  ranks.Watched{FellPrev: ms(11), Fell: ms(12), GonePrev: ms(14), Gone: ms(15)},
		},
		{
			name:  "fell, rose, fell, went",
			lines: "0 10, 12 8, 13 9, 14 7, 16 0",
			want:  ranks.Watched{DownPrev: ms(13), Down: ms(14), Settled: ms(14), FellPrev: ms(11), Fell: ms(12), GonePrev: ms(15), Gone: ms(16)},
		},
		{
			name:  "fell, rose, fell, rose, went",
			lines: "0 10, 12 8, 13 9, 14 7, 15 8, 17 0",
			want:  ranks.Watched{FellPrev: ms(11), Fell: ms(12), GonePrev: ms(16), Gone: ms(17)},
		},
		{
			name:  "rose first, then fell",
			lines: "0 10, 11 12, 13 11, 14 0",
			want:  ranks.Watched{DownPrev: ms(12), Down: ms(13), Settled: ms(13), FellPrev: ms(12), Fell: ms(13), GonePrev: ms(13), Gone: ms(14)},
		},
		{
			name:  "churned before the first traceback, fell after",
			lines: "0 10, 3 9, 4 10, 6 9, 7 10, 12 8, 14 0",
			want:  ranks.Watched{DownPrev: ms(11), Down: ms(12), Settled: ms(12), FellPrev: ms(11), Fell: ms(12), GonePrev: ms(13), Gone: ms(14)},
		},
		{
			// Falling since before the first traceback (its stderr late to the file),
			// no rise between: that run is its fall.
			name:  "fell before the first traceback, rose after",
			lines: "0 10, 5 8, 12 9, 14 0",
			want:  ranks.Watched{FellPrev: ms(4), Fell: ms(5), GonePrev: ms(13), Gone: ms(14)},
		},
		{
			name:  "fell before the first traceback and after, no rise",
			lines: "0 10, 5 8, 12 7, 14 0",
			want:  ranks.Watched{DownPrev: ms(4), Down: ms(5), Settled: ms(12), FellPrev: ms(4), Fell: ms(5), GonePrev: ms(13), Gone: ms(14)},
		},
		{
			name:  "fell and rose before the first traceback, went at once",
			lines: "0 10, 5 8, 6 10, 14 0",
			want:  ranks.Watched{GonePrev: ms(13), Gone: ms(14)},
		},
		{
			name:  "fell at the first traceback's sample",
			lines: "0 10, 10 8, 11 9, 14 0",
			want:  ranks.Watched{FellPrev: ms(9), Fell: ms(10), GonePrev: ms(13), Gone: ms(14)},
		},
		{
			name:  "never seen gone",
			lines: "0 10, 12 8, 13 9",
			want:  ranks.Watched{FellPrev: ms(11), Fell: ms(12)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b []byte
			at := map[int]int{}
			for _, x := range strings.Split(tc.lines, ", ") {
				f := strings.Fields(x)
				i, _ := strconv.Atoi(f[0])
				th, _ := strconv.Atoi(f[1])
				at[i] = th
			}
			for i := 0; i <= 20; i++ {
				b = append(b, strconv.FormatInt(ms(i).UnixMilli(), 10)+" 9 0 "+strconv.Itoa(100+i%2)+"\n"...)
				if th, ok := at[i]; ok {
					b = append(b, strconv.FormatInt(ms(i).UnixMilli(), 10)+" 7 1 "+strconv.Itoa(th)+"\n"...)
				}
			}
			want := tc.want
			want.Rank = 1
			if got := Parse(b, nil, first)[7]; got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
	// Not knowing when the first traceback began, every fall counts.
	b := []byte("1700000000000 7 1 5\n1700000000100 7 1 4\n1700000000200 7 1 5\n")
	if w := Parse(b, nil, time.Time{})[7]; !w.Down.IsZero() || w.Fell != ms(1) || w.FellPrev != ms(0) {
		t.Errorf("a fall then a rise, no first traceback: %+v", w)
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
			sampler := exec.Command(sh, "-c", Sampler(dir), "wick-watch", strconv.Itoa(root.Process.Pid))
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
			w := Parse(b, nil, time.Time{})
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

// A wrapped command is the wrapper's own process (exec: its pid, its exit status, its
// environment less what the shell adds), and the sampler the wrapper started first
// saw workers that ended within a second of the command's start; it ends once the
// command has. A second run in the same directory (a container the Engine restarted)
// starts no sampler.
func TestWrap(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	// The agent: two workers that end 0.2 s apart once the sampler has seen them (a
	// line of their pid in the file; at most 20 s: on a busy machine the sampler's
	// shell may start after workers that end at once), then its pid and the
	// environment it was started with.
	// The second run, which starts no sampler, does not wait (no "wait" file).
	waitFile := filepath.Join(t.TempDir(), "wait")
	seen := `i=0; [ -e ` + waitFile + ` ] || i=400; until [ $i -ge 400 ] || grep -q "^[0-9]* $$ " ` + filepath.Join(dir, "workers.watch") + ` 2>/dev/null; do sleep 0.05; i=$((i+1)); done; sleep `
	agent := []string{"/bin/sh", "-c", `: torchrun; export GROUP_RANK=0; RANK=0 sh -c '` + seen + `0.3' & RANK=1 sh -c '` + seen + `0.5' & wait
sleep 0.5; read -r p _ </proc/self/stat; echo "pid $p"; tr '\0' '\n' </proc/$p/environ; exit 3`}
	argv := Wrap(dir, []string{"PWD", "SHLVL"}, agent)
	if got, ok := Unwrap(dir, argv); !ok || !slices.Equal(got, agent) {
		t.Fatalf("Unwrap: %q %v", got, ok)
	}
	if got, ok := Unwrap(dir, agent); ok || !slices.Equal(got, agent) {
		t.Fatalf("Unwrap of no wrapper: %q %v", got, ok)
	}
	run := func() (int, string) {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "KEEP=1"}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if !strings.Contains(out.String(), "pid "+strconv.Itoa(cmd.Process.Pid)+"\n") {
			t.Errorf("the command is not the wrapper's process %d:\n%s", cmd.Process.Pid, out.String())
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
	if err := os.WriteFile(waitFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := run()
	if err := os.Remove(waitFile); err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit status %d, want 3:\n%s", code, out)
	}
	var env []string
	for _, l := range strings.Split(out, "\n") {
		if k, _, ok := strings.Cut(l, "="); ok && k != "_" {
			env = append(env, k)
		}
	}
	if slices.Sort(env); !slices.Equal(env, []string{"KEEP", "PATH"}) {
		t.Errorf("the command's environment has %q, want KEEP PATH (what it was given)", env)
	}
	// The sampler ends with the command: the file changes no more.
	var b []byte
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ = os.ReadFile(filepath.Join(dir, "workers.watch"))
		time.Sleep(500 * time.Millisecond)
		if again, _ := os.ReadFile(filepath.Join(dir, "workers.watch")); bytes.Equal(again, b) || time.Now().After(deadline) {
			break
		}
	}
	w := Parse(b, nil, time.Time{})
	if len(w) != 2 {
		t.Fatalf("watch, want both workers:\n%s", b)
	}
	for _, x := range w {
		if x.Gone.IsZero() {
			t.Errorf("rank %d not seen gone:\n%s", x.Rank, b)
		}
	}
	if code, out := run(); code != 3 {
		t.Errorf("second run: exit status %d, want 3:\n%s", code, out)
	}
	time.Sleep(time.Second)
	if again, _ := os.ReadFile(filepath.Join(dir, "workers.watch")); !bytes.Equal(again, b) {
		t.Errorf("a second run started a sampler: the watch file was\n%s\nand is\n%s", b, again)
	}
}
