package gpus

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLeases: a device leased to a live app is busy for any other app and free for
// itself; a lease whose app has ended is taken over; Take takes nothing when one
// device is busy; old-style MIG names (with slashes) are leased as files of their own.
func TestLeases(t *testing.T) {
	live := map[string]bool{"a": true, "b": true}
	l := Leases{Dir: t.TempDir(), Live: func(le Lease) bool { return live[le.AppID] }}
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

// TestLeaseKinds: leases of two kinds share one directory; each lease is judged by
// the kind that holds it (its registered LiveFunc, given the state directory); a lease
// of a kind this program does not know holds its device; a lone app id is a local
// app's lease (what the local schedulers wrote before kinds); Release frees only the
// releasing app's devices.
func TestLeaseKinds(t *testing.T) {
	home := t.TempDir()
	running := map[string]bool{"train": true, "box": true}
	var asked []string
	RegisterKind("test-a", func(stateDir string, le Lease) bool {
		if stateDir != home {
			t.Errorf("asked of state directory %s, want %s", stateDir, home)
		}
		asked = append(asked, le.Kind+":"+le.AppID)
		return running[le.AppID]
	})
	a, b := At(home, "test-a"), At(home, "test-unknown")
	if err := a.Take("train", []string{"0", "1"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Take("box", []string{"2"}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(home, "local", "devices", "0")); string(raw) != "train test-a\n" {
		t.Errorf("lease file %q", raw)
	}
	if err := os.WriteFile(filepath.Join(home, "local", "devices", "3"), []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	RegisterKind(KindLocal, func(string, Lease) bool { return false })
	if got := b.Free([]string{"0", "1", "2", "3"}); !slices.Equal(got, []string{"3"}) {
		t.Errorf("free %q, want [3] (2's kind is unknown: held; 3's local app ended)", got)
	}
	if le, ok := a.Read("3"); !ok || le.Kind != KindLocal || le.AppID != "old" || le.Taken.IsZero() {
		t.Errorf("lone id read as %+v", le)
	}
	running["train"] = false
	if got := b.Free([]string{"0", "1"}); !slices.Equal(got, []string{"0", "1"}) {
		t.Errorf("after train ended: free %q", got)
	}
	if len(asked) == 0 {
		t.Error("the kind was never asked")
	}
	running["train"] = true
	if err := a.Release("box", []string{"0", "2"}); err != nil {
		t.Fatal(err)
	}
	if owner, _ := a.Holder("0"); owner != "train" {
		t.Errorf("box's release freed train's 0 (holder %q)", owner)
	}
	if _, ok := a.Read("2"); ok {
		t.Error("box's release left its lease of 2")
	}
	if err := At(t.TempDir(), "x").Release("y", []string{"0"}); err != nil {
		t.Errorf("release where nothing was leased: %v", err)
	}
}

// TestLeaseLivenessAskedOncePerApp: Free over a pool of eight devices, all leased to
// one app, asks its kind once whether it runs (a docker app's answer is an Engine
// call), not once per device.
func TestLeaseLivenessAskedOncePerApp(t *testing.T) {
	home := t.TempDir()
	asked := 0
	RegisterKind("test-once", func(string, Lease) bool { asked++; return true })
	l := At(home, "test-once")
	pool := []string{"0", "1", "2", "3", "4", "5", "6", "7"}
	if err := l.Take("big", pool); err != nil {
		t.Fatal(err)
	}
	asked = 0
	if free := l.Free(pool); len(free) != 0 || asked != 1 {
		t.Errorf("free %q after %d asks, want none after 1", free, asked)
	}
	asked = 0
	var be *BusyError
	if err := l.Busy("other", pool); !errors.As(err, &be) || len(be.Devices) != 8 || asked != 1 {
		t.Errorf("busy %v after %d asks", err, asked)
	}
}
