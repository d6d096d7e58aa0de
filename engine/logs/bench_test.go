package logs

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// benchLines is the size of the big log: 2M lines of 50 bytes, 100 MB.
const benchLines = 2_000_000

// writeLines writes n lines of exactly 50 bytes.
func writeLines(w io.Writer, n int) {
	line := []byte("line 0000000 .....................................\n")
	for i := range n {
		v := i
		for j := 11; j >= 5; j-- {
			line[j] = byte('0' + v%10)
			v /= 10
		}
		w.Write(line)
	}
}

// bigLog writes the big log once through a Writer, as a supervisor would.
var bigLog = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "wick-bench-log-")
	if err != nil {
		return "", err
	}
	w, err := NewRecorder().Create(dir)
	if err != nil {
		return "", err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- w.Copy(sched.Stdout, 0, pr) }()
	bw := bufio.NewWriterSize(pw, 256<<10)
	writeLines(bw, benchLines)
	bw.Flush()
	pw.Close()
	if err := <-done; err != nil {
		return "", err
	}
	w.End()
	return dir, w.Close()
})

func benchDir(b *testing.B) string {
	dir, err := bigLog()
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkRead reads the 100 MB, 2M-line log to io.Discard: through the iterator
// (line by line, with the newline written back), beside a raw read of the file with
// cat's buffer size, and beside cat itself.
func BenchmarkRead(b *testing.B) {
	dir := benchDir(b)
	path := filepath.Join(dir, CombinedFile)
	st, _ := os.Stat(path)
	b.Run("iterator", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			it, err := Open(Source{Dir: dir}, sched.LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			nl := []byte{'\n'}
			for {
				l, err := it.Next(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				io.WriteString(io.Discard, l.Text)
				io.Discard.Write(nl)
				n++
			}
			it.Close()
			if n != benchLines {
				b.Fatalf("%d lines", n)
			}
		}
	})
	b.Run("raw-read", func(b *testing.B) {
		b.SetBytes(st.Size())
		buf := make([]byte, 128<<10)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			for {
				n, err := f.Read(buf)
				io.Discard.Write(buf[:n])
				if err != nil {
					break
				}
			}
			f.Close()
		}
	})
	b.Run("cat", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			cmd := exec.Command("cat", path)
			null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			cmd.Stdout = null
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			null.Close()
		}
	})
}

// BenchmarkWrite records 100 MB of lines written to a pipe as fast as possible:
// through a Writer (stdout.log, combined.log and the index), beside copying the pipe
// into one file, which is what `cat > file` does.
func BenchmarkWrite(b *testing.B) {
	run := func(b *testing.B, consume func(dir string, pr *os.File) error) {
		b.SetBytes(benchLines * 50)
		base := b.TempDir()
		for b.Loop() {
			dir, err := os.MkdirTemp(base, "op-")
			if err != nil {
				b.Fatal(err)
			}
			pr, pw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- consume(dir, pr); pr.Close() }()
			bw := bufio.NewWriterSize(pw, 256<<10)
			writeLines(bw, benchLines)
			bw.Flush()
			pw.Close()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.RemoveAll(dir) // keep dirty pages from piling up across ops
			b.StartTimer()
		}
	}
	b.Run("writer", func(b *testing.B) {
		rec := NewRecorder()
		run(b, func(dir string, pr *os.File) error {
			w, err := rec.Create(dir)
			if err != nil {
				return err
			}
			if err := w.Copy(sched.Stdout, 0, pr); err != nil {
				return err
			}
			return w.Close()
		})
	})
	b.Run("copy-to-file", func(b *testing.B) {
		run(b, func(dir string, pr *os.File) error {
			f, err := os.Create(filepath.Join(dir, "out"))
			if err != nil {
				return err
			}
			buf := make([]byte, 128<<10)
			_, err = io.CopyBuffer(struct{ io.Writer }{f}, struct{ io.Reader }{pr}, buf)
			f.Close()
			return err
		})
	})
}

// BenchmarkFollowLatency measures how long a line takes from the write to the pipe to
// a following iterator's Next: one line per op; ns/op is the mean, and the median and
// 99th percentile are reported.
func BenchmarkFollowLatency(b *testing.B) {
	dir := b.TempDir()
	w, err := NewRecorder().Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	pr, pw, _ := os.Pipe()
	go w.Copy(sched.Stdout, 0, pr)
	it, err := Open(Source{Dir: dir}, sched.LogOptions{Follow: true})
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	var lat []time.Duration
	for b.Loop() {
		t := time.Now()
		pw.WriteString("line " + strconv.Itoa(len(lat)) + "\n")
		if _, err := it.Next(context.Background()); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	pw.Close()
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "µs-median")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs-p99")
}

// BenchmarkPendingLatency measures, beside BenchmarkFollowLatency (a committed line),
// how long a progress-bar update ("\r" and no newline) written to a replica's pipe
// takes to come out of a following iterator as a pending line.
func BenchmarkPendingLatency(b *testing.B) {
	dir := b.TempDir()
	w, err := NewRecorder().Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	pr, pw, _ := os.Pipe()
	go w.Copy(sched.Stdout, 0, pr)
	it, err := Open(Source{Dir: dir}, sched.LogOptions{Follow: true, Pending: true})
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	var lat []time.Duration
	for b.Loop() {
		t := time.Now()
		// Every update differs from the last, as a bar's count does.
		pw.WriteString("\r" + strconv.Itoa(len(lat)) + " it")
		l, err := it.Next(context.Background())
		if err != nil || !l.Pending {
			b.Fatal(l, err)
		}
		lat = append(lat, time.Since(t))
	}
	pw.Close()
	reportLatency(b, lat)
}

// BenchmarkPendingLatencyMerged is BenchmarkPendingLatency through Merge with a second,
// quiet replica, as attached wick run and wick log -t read: the update must not wait
// for the other replica.
func BenchmarkPendingLatencyMerged(b *testing.B) {
	var its []sched.LogIterator
	var pws []*os.File
	for k := range 2 {
		dir := b.TempDir()
		w, err := NewRecorder().Create(dir)
		if err != nil {
			b.Fatal(err)
		}
		pr, pw, _ := os.Pipe()
		go w.Copy(sched.Stdout, 0, pr)
		pws = append(pws, pw)
		it, err := Open(Source{Dir: dir, Replica: k}, sched.LogOptions{Follow: true, Pending: true})
		if err != nil {
			b.Fatal(err)
		}
		its = append(its, it)
	}
	m := Merge(its...)
	defer m.Close()
	var lat []time.Duration
	for b.Loop() {
		t := time.Now()
		pws[0].WriteString("\r" + strconv.Itoa(len(lat)) + " it")
		l, err := m.Next(context.Background())
		if err != nil || !l.Pending {
			b.Fatal(l, err)
		}
		lat = append(lat, time.Since(t))
	}
	for _, pw := range pws {
		pw.Close()
	}
	reportLatency(b, lat)
}
