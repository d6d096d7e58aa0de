package slurm

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wick-dev/wick/engine/sched"
)

// TestLineFileIsWhatTheLinesPrint checks the raw reading of a replica's file against
// its line-by-line reading (fileIter), whatever the chunk boundaries: the \r before a
// newline is the line's, not its text's, and a last line without a newline ends.
func TestLineFileIsWhatTheLinesPrint(t *testing.T) {
	for _, content := range []string{
		"",
		"one\ntwo\n",
		"one\r\ntwo\r\n",
		"bar\r 50%\rdone\r\n",
		"two crs\r\r\nlast without newline",
		"ends on a cr\r",
		"\r\n\r\n\n",
		strings.Repeat("x\r\n", 50000) + "y",
	} {
		path := filepath.Join(t.TempDir(), "slurm-1-r-0.out")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		it := newFileIter(path, sched.Stdout, "r", 0, sched.LogOptions{}, nil)
		var want strings.Builder
		for {
			l, err := it.Next(t.Context())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			want.WriteString(l.Text + "\n")
		}
		for _, chunk := range []int{1, 2, 3, readChunk} {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			lf := &lineFile{f: f, buf: make([]byte, chunk)}
			got, err := io.ReadAll(iotest.OneByteReader(lf))
			lf.Close()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want.String() {
				t.Errorf("%q in chunks of %d:\n got %q\nwant %q", trunc(content), chunk, trunc(string(got)), trunc(want.String()))
			}
		}
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
