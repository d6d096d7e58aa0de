package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Every benchmark has a "baseline" beside it: what the machine does without wick, in
// the same run.

// BenchmarkTrue64 runs an app of 64 replicas of `true` to its end (Schedule, supervisor
// start, 64 forks, exits, final state), beside 64 bare fork/execs of `true` waited for.
func BenchmarkTrue64(b *testing.B) {
	b.Run("wick", func(b *testing.B) {
		s := testScheduler(b, false)
		r := role("t", "true")
		r.NumReplicas = 64
		app := appOf("true64", r)
		for b.Loop() {
			id := start(b, s, app, nil)
			if st := waitApp(b, s, id); st.State != spec.Succeeded {
				b.Fatal(st.State, st.Msg)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			cmds := make([]*exec.Cmd, 64)
			for i := range cmds {
				cmds[i] = exec.Command("true")
				if err := cmds[i].Start(); err != nil {
					b.Fatal(err)
				}
			}
			for _, c := range cmds {
				c.Wait()
			}
		}
	})
}

// BenchmarkEcho is `wick run` of one echo, attached: dry run, schedule, follow the
// replica's logs to their end, read the final status. Beside it: sh -c 'echo hi'.
func BenchmarkEcho(b *testing.B) {
	b.Run("wick", func(b *testing.B) {
		s := testScheduler(b, false)
		app := appOf("echo", role("echo", "echo", "hi"))
		for b.Loop() {
			id := start(b, s, app, nil)
			lines := logLines(b, s, id, "echo", 0, sched.LogOptions{Follow: true})
			if len(lines) != 1 {
				b.Fatalf("%d lines", len(lines))
			}
			if st := waitApp(b, s, id); st.State != spec.Succeeded {
				b.Fatal(st.State)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("sh", "-c", "echo hi").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

const (
	throughputLines = 2_000_000
	throughputBytes = throughputLines * 50
)

// expectedLines is the sha256 of what `helper lines 2000000` writes.
var expectedLines = sync.OnceValue(func() [32]byte {
	h := sha256.New()
	writeLines(h, throughputLines)
	return [32]byte(h.Sum(nil))
})

func fileHash(b *testing.B, path string) [32]byte {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return [32]byte(h.Sum(nil))
}

// BenchmarkThroughput runs a replica writing 2M lines (100 MB) as fast as it can, to
// the app's end, and checks stdout.log is byte-identical to what it wrote. Beside it:
// the same program piped through `cat > file`. The supervisor's peak RSS while
// streaming is reported as MB-rss.
func BenchmarkThroughput(b *testing.B) {
	b.Run("wick", func(b *testing.B) {
		s := testScheduler(b, false)
		app := appOf("lines", role("lines", os.Args[0], helperVerb, "lines", strconv.Itoa(throughputLines)))
		b.SetBytes(throughputBytes)
		var peak int64
		for b.Loop() {
			id := start(b, s, app, nil)
			_, st, err := s.load(id)
			if err != nil {
				b.Fatal(err)
			}
			stop := sampleRSS(st.Supervisor.PID, &peak)
			final := waitApp(b, s, id)
			stop()
			if final.State != spec.Succeeded {
				b.Fatal(final.State, final.Msg)
			}
			b.StopTimer()
			if fileHash(b, filepath.Join(replicaLogDir(b, s, id, "lines", 0), "stdout.log")) != expectedLines() {
				b.Fatal("stdout.log differs from what the replica wrote")
			}
			if err := s.Delete(context.Background(), id, false); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(peak)/1024, "MB-rss")
	})
	b.Run("baseline", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "out")
		b.SetBytes(throughputBytes)
		for b.Loop() {
			cmd := exec.Command("sh", "-c", `"$0" `+helperVerb+` lines `+strconv.Itoa(throughputLines)+` | cat > "$1"`, os.Args[0], out)
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if fileHash(b, out) != expectedLines() {
			b.Fatal("cat wrote something else")
		}
	})
}

// sampleRSS records the peak resident memory (KB) of pid until stopped. VmHWM would
// be simpler, but the process is gone by the time it could be read.
func sampleRSS(pid int, peak *int64) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			if err != nil {
				return
			}
			for _, line := range bytes.Split(b, []byte{'\n'}) {
				if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
					if kb > *peak {
						*peak = kb
					}
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	return func() { done.Store(true); wg.Wait() }
}

// BenchmarkFollowLatency measures how long a line takes from the replica's write to a
// following iterator (what `wick log -f` shows): the replica stamps each line with the
// time it writes it. One line per op; the median and 99th percentile are reported.
func BenchmarkFollowLatency(b *testing.B) {
	s := testScheduler(b, false)
	n := max(b.N, 1)
	id := start(b, s, appOf("ticks", role("ticks", os.Args[0], helperVerb, "ticks", strconv.Itoa(n), "2")), nil)
	it, err := s.Logs(context.Background(), id, "ticks", 0, sched.LogOptions{Follow: true})
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	var lat []time.Duration
	b.ResetTimer()
	for {
		l, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		ns, _ := strconv.ParseInt(strings.TrimPrefix(l.Text, "tick "), 10, 64)
		lat = append(lat, now.Sub(time.Unix(0, ns)))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "µs-median")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs-p99")
	}
	waitApp(b, s, id)
}

// BenchmarkList lists 1000 apps, beside reading their state files and nothing more
// (the directory listing and one read per app: what any List must do).
func BenchmarkList(b *testing.B) {
	s := testScheduler(b, false)
	id := start(b, s, appOf("seed", role("e", "true")), nil)
	waitApp(b, s, id)
	st, _ := readState(filepath.Join(s.appsDir(), id))
	for i := range 999 {
		clone := *st
		clone.AppID = "clone-" + strconv.Itoa(i)
		dir := filepath.Join(s.appsDir(), clone.AppID)
		os.Mkdir(dir, 0o755)
		clone.save(dir)
	}
	b.Run("wick", func(b *testing.B) {
		for b.Loop() {
			apps, err := s.List(context.Background())
			if err != nil || len(apps) != 1000 {
				b.Fatal(len(apps), err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			ents, err := os.ReadDir(s.appsDir())
			if err != nil || len(ents) != 1000 {
				b.Fatal(len(ents), err)
			}
			for _, e := range ents {
				if _, err := os.ReadFile(filepath.Join(s.appsDir(), e.Name(), stateFile)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
