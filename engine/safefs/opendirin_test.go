package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenDirIn: a directory below an open parent opens as OpenDir opens it, a link
// on the way is refused as OpenDir refuses it, and a path outside the parent is an
// error.
func TestOpenDirIn(t *testing.T) {
	base := t.TempDir()
	want := filepath.Join(base, "role", "3")
	if err := os.MkdirAll(want, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(want, filepath.Join(base, "role", "link")); err != nil {
		t.Fatal(err)
	}
	parent, err := OpenDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	for _, p := range []string{want, want + "/", filepath.Join(base, "role"), base} {
		d, err := OpenDirIn(parent, p)
		if err != nil {
			t.Fatalf("OpenDirIn(%s): %v", p, err)
		}
		if d.Name() != filepath.Clean(p) {
			t.Errorf("OpenDirIn(%s) is named %s", p, d.Name())
		}
		st, err := d.Stat()
		if err != nil || !st.IsDir() {
			t.Errorf("OpenDirIn(%s): %v, %v", p, st, err)
		}
		d.Close()
	}
	if _, err := OpenDirIn(parent, filepath.Join(base, "role", "link")); !errors.Is(err, ErrUntrusted) {
		t.Errorf("through a link: %v, want %v", err, ErrUntrusted)
	}
	if _, err := OpenDir(filepath.Join(base, "role", "link")); !errors.Is(err, ErrUntrusted) {
		t.Errorf("OpenDir through a link: %v, want %v", err, ErrUntrusted)
	}
	for _, p := range []string{filepath.Dir(base), base + "x/role", "role/3", filepath.Join(base, "..", filepath.Base(base)+"x")} {
		if d, err := OpenDirIn(parent, p); err == nil {
			d.Close()
			t.Errorf("OpenDirIn(%s) below %s: no error", p, base)
		}
	}
	if err := os.Chmod(filepath.Join(base, "role"), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDirIn(parent, want); !errors.Is(err, ErrUntrusted) {
		t.Errorf("through a directory others can write: %v, want %v", err, ErrUntrusted)
	}
}
