package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// recorder is the real file system, recording each call writeFileAtomic makes.
type recorder struct {
	osFS
	calls   []string
	failAt  string // the call that fails, if any
	tmpName string
}

var errInjected = errors.New("injected")

func (r *recorder) step(name string) error {
	r.calls = append(r.calls, name)
	if name == r.failAt {
		return errInjected
	}
	return nil
}

func (r *recorder) CreateTemp(dir, pattern string) (file, error) {
	if err := r.step("create"); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	r.tmpName = f.Name()
	return &recFile{f, r}, nil
}

func (r *recorder) Rename(from, to string) error {
	if err := r.step("rename"); err != nil {
		return err
	}
	return r.osFS.Rename(from, to)
}

func (r *recorder) Remove(path string) error {
	r.calls = append(r.calls, "remove")
	return r.osFS.Remove(path)
}

func (r *recorder) SyncDir(dir string) error {
	if err := r.step("syncdir"); err != nil {
		return err
	}
	return r.osFS.SyncDir(dir)
}

type recFile struct {
	*os.File
	r *recorder
}

func (f *recFile) Write(b []byte) (int, error) {
	if err := f.r.step("write"); err != nil {
		return 0, err
	}
	return f.File.Write(b)
}

func (f *recFile) Chmod(m os.FileMode) error {
	if err := f.r.step("chmod"); err != nil {
		return err
	}
	return f.File.Chmod(m)
}

func (f *recFile) Sync() error {
	if err := f.r.step("fsync"); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *recFile) Close() error {
	f.r.calls = append(f.r.calls, "close")
	return f.File.Close()
}

// TestWriteFileAtomicOrder: the temporary file's data is synced before it is renamed
// over the old one, and the directory after the rename: a machine that crashes at any
// point leaves the old file or the new one, whole, and the new one once it returned.
// A step that fails leaves the old file and no temporary one.
func TestWriteFileAtomicOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	if err := writeFileAtomic(r, dir, "state.json", []byte("new"), true); err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "write", "chmod", "fsync", "close", "rename", "syncdir"}
	if !slices.Equal(r.calls, want) {
		t.Errorf("calls %v, want %v", r.calls, want)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file %q", b)
	}
	// Without the directory's fsync (Prepared.Replace): the same order, the
	// directory left unsynced.
	r = &recorder{}
	if err := writeFileAtomic(r, dir, "state.json", []byte("new"), false); err != nil {
		t.Fatal(err)
	}
	if want := want[:len(want)-1]; !slices.Equal(r.calls, want) {
		t.Errorf("calls without the directory's fsync %v, want %v", r.calls, want)
	}
	for _, step := range []string{"write", "chmod", "fsync", "rename"} {
		r := &recorder{failAt: step}
		if err := writeFileAtomic(r, dir, "state.json", []byte("newer"), true); !errors.Is(err, errInjected) {
			t.Errorf("%s failing: %v", step, err)
		}
		if b, _ := os.ReadFile(path); string(b) != "new" {
			t.Errorf("%s failing: the file is %q, want the old one", step, b)
		}
		if _, err := os.Stat(r.tmpName); !os.IsNotExist(err) {
			t.Errorf("%s failing: the temporary file is left (%v)", step, err)
		}
		if slices.Contains(r.calls, "syncdir") || r.calls[len(r.calls)-1] != "remove" {
			t.Errorf("%s failing: calls %v", step, r.calls)
		}
	}
}
