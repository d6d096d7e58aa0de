package cli

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/wick-dev/wick/tui/render"
)

// BenchmarkLogCopy measures how wick log prints a stored 2M-line (100 MB) log with its
// role/k prefix, beside a plain copy of the same bytes (what cat does).
func BenchmarkLogCopy(b *testing.B) {
	line := []byte("0123456789012345678901234567890123456789012345678\n")
	data := bytes.Repeat(line, 2_000_000)
	b.Run("wick", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			w := bufio.NewWriterSize(io.Discard, 64<<10)
			p := &linePrinter{w: w, st: render.Plain{}, prefix: true, index: map[string]int{}}
			if err := p.copyRaw(bytes.NewReader(data), replicaRef{"sh", 0}); err != nil {
				b.Fatal(err)
			}
			w.Flush()
		}
	})
	b.Run("copy", func(b *testing.B) {
		// cat's work in memory: the bytes moved once, in the same block size.
		dst := make([]byte, 1<<20)
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r := bytes.NewReader(data)
			for {
				if _, err := r.Read(dst); err != nil {
					break
				}
			}
		}
	})
}
