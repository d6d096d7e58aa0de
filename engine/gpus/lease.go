package gpus

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/wick-dev/wick/engine/safefs"
)

// A device handed to an app is leased to it machine-wide until the app ends, so that
// no other app of this machine is given it meanwhile: a plain `wick run` with
// auto_set_cuda_visible_devices while a sweep runs takes the GPUs no app holds, and a
// sweep's queue does not hand out a GPU a plain run holds. The leases are files in
// one directory ($WICK_HOME/local/devices), one per device, holding the id of the app
// that holds it, as the rendezvous ports are reserved ($WICK_HOME/local/ports). A
// lease whose app has ended, or is gone, holds nothing: it is taken over. Taking
// leases is done under the directory's flock, so two launches at once cannot both
// take one device.

// ErrBusy is wrapped by the error of a launch whose devices another live app holds.
var ErrBusy = errors.New("devices in use")

// BusyError says which devices of a launch other live apps hold, and who holds them.
type BusyError struct {
	// Holders maps each busy device to the app holding it.
	Holders map[string]string
	// Devices are the busy devices in the order asked.
	Devices []string
}

func (e *BusyError) Error() string {
	parts := make([]string, len(e.Devices))
	for i, d := range e.Devices {
		parts[i] = fmt.Sprintf("%s (app %s)", d, e.Holders[d])
	}
	return fmt.Sprintf("%s: GPU %s held by running apps of this machine", ErrBusy, strings.Join(parts, ", "))
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// Leases are the device leases of one state directory.
type Leases struct {
	// Dir holds a file per leased device.
	Dir string
	// Live says whether the app of that id is still running (not ended, not gone).
	Live func(appID string) bool
}

// maxLease bounds what is read of a lease file (an app id).
const maxLease = 256

// fileName is a device's lease file: CUDA_VISIBLE_DEVICES entries are indexes and
// GPU-/MIG- UUIDs, and old MIG names hold slashes (MIG-GPU-UUID/1/0).
func fileName(dev string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, dev)
}

// Holder says which live app holds dev's lease.
func (l Leases) Holder(dev string) (string, bool) {
	b, err := safefs.ReadFile(filepath.Join(l.Dir, fileName(dev)), maxLease)
	if err != nil {
		return "", false
	}
	owner := strings.TrimSpace(string(b))
	if owner == "" || owner != filepath.Base(owner) || owner == ".." {
		return "", false
	}
	if l.Live == nil || !l.Live(owner) {
		return "", false
	}
	return owner, true
}

// Free is the part of pool that no live app holds, in pool's order.
func (l Leases) Free(pool []string) []string {
	var out []string
	for _, d := range pool {
		if _, held := l.Holder(d); !held {
			out = append(out, d)
		}
	}
	return out
}

// Busy returns the *BusyError of devs when a live app other than appID holds some of
// them, else nil.
func (l Leases) Busy(appID string, devs []string) error {
	e := &BusyError{Holders: map[string]string{}}
	for _, d := range devs {
		if owner, held := l.Holder(d); held && owner != appID {
			e.Holders[d] = owner
			e.Devices = append(e.Devices, d)
		}
	}
	if len(e.Devices) == 0 {
		return nil
	}
	return e
}

// Take leases devs to appID until it ends. It fails with a *BusyError, taking
// nothing, when another live app holds one of them.
func (l Leases) Take(appID string, devs []string) error {
	if len(devs) == 0 {
		return nil
	}
	if err := safefs.MkdirAll(l.Dir); err != nil {
		return fmt.Errorf("device leases: %w", err)
	}
	unlock, err := lockDir(l.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := l.Busy(appID, devs); err != nil {
		return err
	}
	for _, d := range devs {
		if err := safefs.WriteFileAtomic(l.Dir, fileName(d), []byte(appID+"\n")); err != nil {
			return fmt.Errorf("device lease of %s: %w", d, err)
		}
	}
	return nil
}

// lockDir takes the leases directory's lock (safefs.LockDir).
func lockDir(dir string) (func(), error) {
	unlock, err := safefs.LockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("lock device leases: %w", err)
	}
	return unlock, nil
}
