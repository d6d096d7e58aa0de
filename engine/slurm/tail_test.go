package slurm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// recordedJob makes a scheduler over a fresh state dir with a record of job 4242
// whose one replica (r/0) writes out (stdout) and an empty stderr; no Slurm is asked
// to read finished logs.
func recordedJob(t testing.TB, out string) *Scheduler {
	t.Helper()
	dir := t.TempDir()
	s, err := New(sched.Config{Session: "test", StateDir: dir, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	errf := filepath.Join(dir, "slurm-4242-r-0.err")
	if err := os.WriteFile(errf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &record{JobID: "4242", Session: "test", App: &spec.AppDef{Name: "t", Roles: []spec.Role{spec.NewRole("r", "", "true")}},
		JobDir: dir, Replicas: []Replica{{Role: "r", Stdout: out, Stderr: errf, ExitFile: filepath.Join(dir, "slurm-4242-r-0.exit")}}}
	if err := s.(*Scheduler).saveRecord(rec); err != nil {
		t.Fatal(err)
	}
	return s.(*Scheduler)
}

// tailOf reads the last n lines of job 4242's stdout through Logs, within a deadline.
func tailOf(t testing.TB, s *Scheduler, n int) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	it, err := s.Logs(ctx, "4242", "r", 0, sched.LogOptions{Tail: n, Streams: sched.Stdout})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var got []string
	for {
		l, err := it.Next(ctx)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, l.Text)
	}
}

// TestTailReadsFromTheEnd: wick log -n N of a slurm job gives the last N lines (an
// unended last line is one of them, empty lines count) and reads them from the end of
// the file: the last lines of a sparse 1 TiB file come at once, where reading it from
// the start would take hours.
func TestTailReadsFromTheEnd(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 3*readChunk/2)
	for _, c := range []struct {
		data string
		n    int
		want []string
	}{
		{"a\nb\nc\n", 2, []string{"b", "c"}},
		{"a\nb\nc", 2, []string{"b", "c"}},
		{"a\nb\nc\n", 5, []string{"a", "b", "c"}},
		{"only", 1, []string{"only"}},
		{"\n\n\n", 2, []string{"", ""}},
		{"a\n" + long + "\n" + long + "\nz\n", 3, []string{long, long, "z"}},
	} {
		path := filepath.Join(dir, "out")
		if err := os.WriteFile(path, []byte(c.data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := tailOf(t, recordedJob(t, path), c.n)
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("-n %d of %.20q: %.60q, %v; want %.60q", c.n, c.data, got, err, c.want)
		}
	}

	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	end := "step 999998 loss 0.51\nstep 999999 loss 0.50\n"
	if _, err := f.WriteAt([]byte("\n"+end), 1<<40); err != nil {
		f.Close()
		t.Skipf("this file system holds no 1 TiB sparse file: %v", err)
	}
	f.Close()
	got, err := tailOf(t, recordedJob(t, sparse), 2)
	if err != nil || strings.Join(got, "\n")+"\n" != end {
		t.Errorf("-n 2 of 1 TiB: %q, %v", got, err)
	}
}

// BenchmarkTail1GiB times wick log -n 2 of a slurm replica's 1 GiB log (Logs with
// Tail 2, to the end), beside tail -n 2 of the same file.
func BenchmarkTail1GiB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.out")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	var block strings.Builder
	for i := 0; block.Len() < 1<<20; i++ {
		fmt.Fprintf(&block, "step %d loss 0.%06d lr 3e-4 throughput 1234.5 samples/s\n", i, i)
	}
	for range 1024 {
		if _, err := f.WriteString(block.String()); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	s := recordedJob(b, path)
	b.Run("wick", func(b *testing.B) {
		for b.Loop() {
			if got, err := tailOf(b, s, 2); err != nil || len(got) != 2 {
				b.Fatal(got, err)
			}
		}
	})
	b.Run("tail", func(b *testing.B) {
		for b.Loop() {
			if out, err := exec.Command("tail", "-n", "2", path).Output(); err != nil || strings.Count(string(out), "\n") != 2 {
				b.Fatal(err)
			}
		}
	})
}
