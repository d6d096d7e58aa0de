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

// TestReadFileHead: ReadFileHead gives a file's first n bytes, or all of a shorter
// one, and refuses a symbolic link as ReadFile does.
func TestReadFileHead(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 8<<10)
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, 1, 64 << 10, int64(len(data)), int64(len(data)) + 1} {
		got, err := ReadFileHead(path, n)
		if want := data[:min(n, int64(len(data)))]; err != nil || !bytes.Equal(got, want) {
			t.Errorf("head %d: read %d bytes, %v; want %d", n, len(got), err, len(want))
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFileHead(link, 10); err == nil {
		t.Error("a symbolic link was read")
	}
}
