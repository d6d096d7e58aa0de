package common

import (
	"runtime"
	"testing"
)

// TestCoresLendEveryProcessorToASearch: the UI runs on its idle processors, a search
// has every processor the process had while one runs, overlapping searches included,
// and the UI is back on its idle ones once the last ends.
func TestCoresLendEveryProcessorToASearch(t *testing.T) {
	orig := runtime.GOMAXPROCS(4)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	c := NewCores(1)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("the UI runs on %d processors, want 1", got)
	}
	first := c.Acquire()
	second := c.Acquire()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("a search runs on %d processors, want the 4 the process had", got)
	}
	first()
	first() // a second call changes nothing
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("with a search still under way, %d processors, want 4", got)
	}
	second()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("after the searches, %d processors, want 1", got)
	}
}

// TestNilCoresLeaveGOMAXPROCSAlone: with GOMAXPROCS set by the user (no Cores), a
// search changes nothing.
func TestNilCoresLeaveGOMAXPROCSAlone(t *testing.T) {
	orig := runtime.GOMAXPROCS(3)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	var c *Cores
	release := c.Acquire()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS %d during a search, want the user's 3", got)
	}
	release()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS %d after a search, want the user's 3", got)
	}
}
