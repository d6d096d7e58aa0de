package metrics

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
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
func mixedLines(b testing.TB, n int) []string {
	base := mixedBase(b)
	lines := make([]string, n)
	for i := range lines {
		lines[i] = base[i%len(base)]
	}
	return lines
}

// mixedBase returns the lines of the corpus of testdata/formats, in turn.
func mixedBase(b testing.TB) []string {
	var base []string
	for _, ff := range readFormats(b) {
		for _, c := range ff.cases {
			base = append(base, c.line)
		}
	}
	return base
}

// formatRuns returns n lines, a run of each format's lines in turn (their numbers
// changed at each turn), one format after the other.
func formatRuns(b testing.TB, n int) []string {
	files := readFormats(b)
	lines := make([]string, 0, n)
	per := n / len(files)
	for i, ff := range files {
		if i == len(files)-1 {
			per = n - len(lines)
		}
		for k := 0; k < per; k++ {
			c := ff.cases[k%len(ff.cases)]
			lines = append(lines, otherDigits(c.line, 1+(k/len(ff.cases))%9, false))
		}
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
	var buf bytes.Buffer
	buf.Grow(size + n)
	for _, l := range lines {
		buf.WriteString(l)
		buf.WriteByte('\n')
	}
	data := buf.Bytes()
	// extract reads the lines as a Store does; extract-full without plans (each line
	// read in full, as before plans), in the same run, for the ratio of the two.
	b.Run("extract", func(b *testing.B) { benchExtract(b, lines, data, size, false) })
	b.Run("extract-full", func(b *testing.B) { benchExtract(b, lines, data, size, true) })
	// The same with the numbers of each turn through the corpus changed (the last digit
	// of each run of digits): the shapes of the lines repeat, their texts do not.
	varied := make([]string, len(lines))
	turn := len(mixedBase(b))
	for i, l := range lines {
		varied[i] = otherDigits(l, 1+(i/turn)%9, false)
	}
	b.Run("extract-numbers", func(b *testing.B) { benchExtract(b, varied, data, size, false) })
	b.Run("extract-numbers-full", func(b *testing.B) { benchExtract(b, varied, data, size, true) })
	// As a log is, one framework at a time: each format's lines in turn, their numbers
	// changed at each turn, for 2^20 / formats lines, then the next format's.
	runs := formatRuns(b, n)
	b.Run("extract-runs", func(b *testing.B) { benchExtract(b, runs, data, size, false) })
	b.Run("extract-runs-full", func(b *testing.B) { benchExtract(b, runs, data, size, true) })
	b.Run("baseline-read", func(b *testing.B) {
		// A plain read of the same bytes: the lines joined as a log file holds them, split
		// into lines by a bufio.Scanner, as a reader of the log does before any extraction.
		b.SetBytes(int64(size))
		k := 0
		cpu := cpuTime()
		for b.Loop() {
			k += readLines(data)
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

// benchExtract is a pass of BenchmarkExtract1M: the lines extracted, then the same
// bytes read plainly; full turns plans off.
func benchExtract(b *testing.B, lines []string, data []byte, size int, full bool) {
	const n = 1 << 20
	// Each pass extracts the 2^20 lines, then reads the same bytes with a plain
	// bufio.Scanner: both see the same load, and their ratio (x-read) moves less
	// than either. Load only adds time: the best pass is the closest to what the
	// extraction itself costs.
	e := NewExtractor(DefaultConfig())
	var p Parsed
	p.fullOnly = full
	b.SetBytes(int64(size))
	b.ReportAllocs()
	load := load1()
	var ext, read, bestExt, bestRead time.Duration
	k := 0
	for b.Loop() {
		c0 := cpuTime()
		for _, l := range lines {
			e.Extract(l, &p)
		}
		c1 := cpuTime()
		k += readLines(data)
		c2 := cpuTime()
		ext += c1 - c0
		read += c2 - c1
		if bestExt == 0 || c1-c0 < bestExt {
			bestExt = c1 - c0
		}
		if bestRead == 0 || c2-c1 < bestRead {
			bestRead = c2 - c1
		}
	}
	perLine := func(d time.Duration, passes int) float64 { return float64(d.Nanoseconds()) / float64(passes) / n }
	b.ReportMetric(perLine(ext, b.N), "cpu-ns/line")
	b.ReportMetric(perLine(bestExt, 1), "best-cpu-ns/line")
	b.ReportMetric(perLine(read, b.N), "read-cpu-ns/line")
	b.ReportMetric(float64(ext)/float64(max(read, 1)), "x-read")
	b.ReportMetric(max(load, load1()), "load1")
	_ = k
}

// readLines reads data as a reader of a log does before any extraction: a bufio.Scanner
// splitting it into lines. It returns the bytes of the lines.
func readLines(data []byte) int {
	k := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		k += len(sc.Bytes())
	}
	return k
}

// load1 is the machine's load average over the last minute (/proc/loadavg), -1 when
// unknown: the benchmark's figures are to be read with it.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return -1
	}
	return v
}
