package gpus

import (
	"errors"
	"slices"
	"testing"
)

// TestLeases: a device leased to a live app is busy for any other app and free for
// itself; a lease whose app has ended is taken over; Take takes nothing when one
// device is busy; old-style MIG names (with slashes) are leased as files of their own.
func TestLeases(t *testing.T) {
	live := map[string]bool{"a": true, "b": true}
	l := Leases{Dir: t.TempDir(), Live: func(id string) bool { return live[id] }}
	mig := "MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3b/7/0"
	if err := l.Take("a", []string{"0", mig}); err != nil {
		t.Fatal(err)
	}
	if got := l.Free([]string{"0", "1", mig}); !slices.Equal(got, []string{"1"}) {
		t.Errorf("free: %q, want [1]", got)
	}
	if err := l.Busy("a", []string{"0", mig}); err != nil {
		t.Errorf("its own devices are busy for a: %v", err)
	}
	err := l.Take("b", []string{"1", mig})
	var be *BusyError
	if !errors.As(err, &be) || !errors.Is(err, ErrBusy) || !slices.Equal(be.Devices, []string{mig}) || be.Holders[mig] != "a" {
		t.Fatalf("b takes a's device: %v", err)
	}
	if _, held := l.Holder("1"); held {
		t.Errorf("a refused Take leased 1 all the same")
	}
	live["a"] = false
	if err := l.Take("b", []string{"1", mig}); err != nil {
		t.Errorf("after a ended: %v", err)
	}
	if owner, _ := l.Holder(mig); owner != "b" {
		t.Errorf("%s held by %q, want b", mig, owner)
	}
}
