package metrics

import (
	"bufio"
	"bytes"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process has used (user and system): on a machine shared
// with other work, a fairer measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mixedLines returns n lines cycling through the corpus of testdata/formats: the
// formats real frameworks print, ANSI, \r frames and all.
func mixedLines(b *testing.B, n int) []string {
	var base []string
	for _, ff := range readFormats(b) {
		for _, c := range ff.cases {
			base = append(base, c.line)
		}
	}
	lines := make([]string, n)
	for i := range lines {
		lines[i] = base[i%len(base)]
	}
	return lines
}

// BenchmarkExtract1M extracts 1M lines of the frameworks' formats (mixed, in turn)
// with one Parsed, as a Store does, beside what a plain read of the same bytes costs
// (a bufio.Scanner splitting them into lines) and bytes.Index looking for "loss" in
// each line, the least any reader of the lines does. Compare them within one run: the
// machine's load moves all of them.
func BenchmarkExtract1M(b *testing.B) {
	const n = 1 << 20
	lines := mixedLines(b, n)
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	b.Run("extract", func(b *testing.B) {
		e := NewExtractor(DefaultConfig())
		var p Parsed
		b.SetBytes(int64(size))
		b.ReportAllocs()
		cpu := cpuTime()
		for b.Loop() {
			for _, l := range lines {
				e.Extract(l, &p)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/line")
		b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/n, "cpu-ns/line")
	})
	b.Run("baseline-read", func(b *testing.B) {
		// A plain read of the same bytes: the lines joined as a log file holds them, split
		// into lines by a bufio.Scanner, as a reader of the log does before any extraction.
		var buf bytes.Buffer
		for _, l := range lines {
			buf.WriteString(l)
			buf.WriteByte('\n')
		}
		data := buf.Bytes()
		b.SetBytes(int64(size))
		k := 0
		cpu := cpuTime()
		for b.Loop() {
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
			for sc.Scan() {
				k += len(sc.Bytes())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/line")
		b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/n, "cpu-ns/line")
		_ = k
	})
	b.Run("baseline-bytes.Index", func(b *testing.B) {
		bs := make([][]byte, len(lines))
		for i, l := range lines {
			bs[i] = []byte(l)
		}
		loss := []byte("loss")
		b.SetBytes(int64(size))
		k := 0
		cpu := cpuTime()
		for b.Loop() {
			for _, l := range bs {
				k += bytes.Index(l, loss)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/line")
		b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/n, "cpu-ns/line")
		_ = k
	})
}
