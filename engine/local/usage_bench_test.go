package local

import (
	"errors"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/wick-dev/wick/internal/testkit"
)

// readBoundedOS is readBounded as it was, through an os.File: the baseline of
// BenchmarkUsageRead.
func readBoundedOS(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// BenchmarkUsageRead is what a usage sample reads of /proc (every process's stat,
// and statm), through the system calls (readBounded) and through an os.File (as it
// was), interleaved in one run; reported per process.
func BenchmarkUsageRead(b *testing.B) {
	d, err := os.Open("/proc")
	if err != nil {
		b.Skip(err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		b.Fatal(err)
	}
	var pids []string
	for _, n := range names {
		if _, err := strconv.Atoi(n); err == nil {
			pids = append(pids, n)
		}
	}
	buf := make([]byte, maxStatBytes)
	for _, c := range []struct {
		name string
		read func(string, []byte) ([]byte, error)
	}{{"syscalls", readBounded}, {"os.File", readBoundedOS}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, p := range pids {
					_, _ = c.read("/proc/"+p+"/stat", buf)
					_, _ = c.read("/proc/"+p+"/statm", buf)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(pids)), "ns/process")
			b.ReportMetric(float64(len(pids)), "processes")
			b.ReportMetric(testkit.Load(), "load")
		})
	}
}
