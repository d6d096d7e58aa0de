package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// gatedFS is the real file system, whose directory fsyncs wait for a gate and are
// recorded after the renames they follow.
type gatedFS struct {
	osFS
	gate chan struct{} // each SyncDir takes one value before it returns
	fail error         // what SyncDir returns

	mu    sync.Mutex
	calls []string
}

func (g *gatedFS) note(s string) {
	g.mu.Lock()
	g.calls = append(g.calls, s)
	g.mu.Unlock()
}

func (g *gatedFS) Rename(from, to string) error {
	g.note("rename " + filepath.Base(to))
	return g.osFS.Rename(from, to)
}

func (g *gatedFS) SyncDir(dir string) error {
	g.note("syncdir begins")
	<-g.gate
	g.note("syncdir")
	if g.fail != nil {
		return g.fail
	}
	return g.osFS.SyncDir(dir)
}

func (g *gatedFS) recorded() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}

// waitDone fails t unless fn returns within a deadline (a loaded machine's).
func waitDone(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer in 30 s", what)
		return nil
	}
}

// TestDirSyncerBatches: every save's rename is followed by a fsync of the directory
// before Wait says it is durable; saves done while a fsync runs share the next one
// (three saves, two fsyncs); Wait does not return before its fsync has.
func TestDirSyncerBatches(t *testing.T) {
	dir := t.TempDir()
	g := &gatedFS{gate: make(chan struct{})}
	s := newDirSyncer(g, dir)
	n1, err := s.Replace("state.json", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	// The first fsync has begun (and waits at the gate): two more saves meanwhile.
	deadline := time.Now().Add(30 * time.Second)
	for len(g.recorded()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	n2, err2 := s.Replace("state.json", []byte("2"))
	n3, err3 := s.Replace("launch.json", []byte("3"))
	if err := errors.Join(err2, err3); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.Wait(n3) }()
	select {
	case <-waited:
		t.Fatal("Wait returned before the fsync covering its save")
	case <-time.After(50 * time.Millisecond):
	}
	g.gate <- struct{}{} // the first fsync returns: it covers save 1 only
	if err := waitDone(t, "Wait(1)", func() error { return s.Wait(n1) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
		t.Fatal("Wait(3) returned on the fsync that began before its rename")
	case <-time.After(50 * time.Millisecond):
	}
	g.gate <- struct{}{} // the second covers saves 2 and 3
	if err := waitDone(t, "Wait(3)", func() error { return <-waited }); err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, "Flush", s.Flush); err != nil || n2 != 2 {
		t.Fatal(err, n2)
	}
	want := []string{"rename state.json", "syncdir begins", "rename state.json", "rename launch.json", "syncdir",
		"syncdir begins", "syncdir"}
	if got := g.recorded(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	for name, want := range map[string]string{"state.json": "2", "launch.json": "3"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
}

// TestDirSyncerError: a fsync of the directory that fails is the error of every save
// it covered, not of the next ones.
func TestDirSyncerError(t *testing.T) {
	dir := t.TempDir()
	g := &gatedFS{gate: make(chan struct{}, 10), fail: errInjected}
	g.gate <- struct{}{}
	s := newDirSyncer(g, dir)
	n, err := s.Replace("state.json", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, "Wait", func() error { return s.Wait(n) }); !errors.Is(err, errInjected) {
		t.Fatalf("Wait: %v, want the fsync's error", err)
	}
	g.mu.Lock()
	g.fail = nil
	g.mu.Unlock()
	g.gate <- struct{}{}
	n, _ = s.Replace("state.json", []byte("2"))
	if err := waitDone(t, "Wait", func() error { return s.Wait(n) }); err != nil {
		t.Fatalf("the next save: %v", err)
	}
}
