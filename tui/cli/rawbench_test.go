package cli

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wick-dev/wick/tui/render"
)

// BenchmarkLogCopy measures how wick log prints a stored 2M-line (100 MB) log file with
// its role/k prefix to /dev/null, beside cat printing the same file to /dev/null: a
// real cat process, its fork and exec included (about a millisecond of the figure).
func BenchmarkLogCopy(b *testing.B) {
	line := []byte("0123456789012345678901234567890123456789012345678\n")
	data := bytes.Repeat(line, 2_000_000)
	path := filepath.Join(b.TempDir(), "stdout.log")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	b.Run("wick", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriterSize(devnull, 64<<10)
			p := &linePrinter{w: w, st: render.Plain{}, prefix: true, index: map[string]int{}}
			if err := p.copyRaw(f, replicaRef{"sh", 0}); err != nil {
				b.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("cat", func(b *testing.B) {
		cat, err := exec.LookPath("cat")
		if err != nil {
			b.Fatalf("no cat for the baseline: %v", err)
		}
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			cmd := exec.Command(cat, path)
			cmd.Stdout = devnull
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
