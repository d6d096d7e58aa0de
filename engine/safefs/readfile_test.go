package safefs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadFileSizes: ReadFile gives a file's bytes whatever its size (empty, one
// byte, the limit exactly) and refuses one over the limit, with ErrTooLarge.
func TestReadFileSizes(t *testing.T) {
	dir := t.TempDir()
	const max = 3 << 20
	for _, n := range []int{0, 1, 511, 512, 513, 2<<20 + 7, max, max + 1} {
		data := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path, max)
		if n > max {
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("%d bytes: %v, want ErrTooLarge", n, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%d bytes: read %d, %v", n, len(got), err)
		}
	}
}
