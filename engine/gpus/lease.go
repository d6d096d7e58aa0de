package gpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
)

// A device handed to an app is leased to it machine-wide until the app ends, so that
// no other app of this machine is given it meanwhile: a plain `wick run` with
// auto_set_cuda_visible_devices while a sweep runs takes the GPUs no app holds, and a
// sweep's queue does not hand out a GPU a plain run holds. The leases are files in
// one directory ($WICK_HOME/local/devices), one per device, holding the id of the app
// that holds it and the kind of scheduler that runs it ("APPID KIND"; a lone "APPID"
// is a local app's), as the rendezvous ports are reserved ($WICK_HOME/local/ports).
// Every scheduler of this machine that hands out GPUs (local_cwd and local_dir:
// "local"; local_docker: "docker") takes its leases there, so that none gives a
// device another holds. A lease whose app has ended, or is gone, holds nothing: it is
// taken over. Whether it has ended is asked of the kind that holds it (RegisterKind);
// a kind this program does not know holds its devices. Taking leases is done under
// the directory's flock, so two launches at once cannot both take one device.

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

// KindLocal is the kind of the leases of local_cwd and local_dir, and of a lease
// file that names no kind.
const KindLocal = "local"

// Lease is one device's lease, as its file holds it.
type Lease struct {
	// Device is the leased device (a CUDA_VISIBLE_DEVICES entry).
	Device string
	// AppID is the app holding it.
	AppID string
	// Kind is the kind of scheduler that runs the app (KindLocal, "docker").
	Kind string
	// Taken is when it was taken (the file's modification time).
	Taken time.Time
}

// LiveFunc says whether the app holding l, of the state directory stateDir, still
// runs (or is being launched): false once it has ended or is gone.
type LiveFunc func(stateDir string, l Lease) bool

var kinds struct {
	sync.Mutex
	m map[string]LiveFunc
}

// RegisterKind says how to tell whether an app of kind, holding a lease, still
// runs. The schedulers register their kind when their package is loaded.
func RegisterKind(kind string, live LiveFunc) {
	kinds.Lock()
	defer kinds.Unlock()
	if kinds.m == nil {
		kinds.m = map[string]LiveFunc{}
	}
	kinds.m[kind] = live
}

// liveFunc is kind's LiveFunc, nil when none is registered.
func liveFunc(kind string) LiveFunc {
	kinds.Lock()
	defer kinds.Unlock()
	return kinds.m[kind]
}

// Leases are the device leases of one state directory, taken for apps of one kind.
type Leases struct {
	// Dir holds a file per leased device.
	Dir string
	// StateDir is the state directory ($WICK_HOME) whose apps hold the leases.
	StateDir string
	// Kind is written in the leases Take takes.
	Kind string
	// Live, when set, says whether a lease's app still runs, whatever its kind
	// (tests); otherwise the lease's kind is asked (RegisterKind).
	Live func(Lease) bool
}

// At are the device leases of the state directory stateDir ($WICK_HOME), taken for
// apps of kind.
func At(stateDir, kind string) Leases {
	return Leases{Dir: filepath.Join(stateDir, "local", "devices"), StateDir: stateDir, Kind: kind}
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

// Read reads dev's lease; false when there is none (or it is no lease).
func (l Leases) Read(dev string) (Lease, bool) {
	path := filepath.Join(l.Dir, fileName(dev))
	b, err := safefs.ReadFile(path, maxLease)
	if err != nil {
		return Lease{}, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 || len(fields) > 2 {
		return Lease{}, false
	}
	le := Lease{Device: dev, AppID: fields[0], Kind: KindLocal}
	if len(fields) == 2 {
		le.Kind = fields[1]
	}
	if le.AppID != filepath.Base(le.AppID) || le.AppID == ".." || le.AppID == "." {
		return Lease{}, false
	}
	if fi, err := os.Lstat(path); err == nil {
		le.Taken = fi.ModTime()
	}
	return le, true
}

// live says whether le's app still runs: Live's answer when set, else its kind's;
// a kind this program does not know holds its devices.
func (l Leases) live(le Lease) bool {
	if l.Live != nil {
		return l.Live(le)
	}
	if f := liveFunc(le.Kind); f != nil {
		return f(l.StateDir, le)
	}
	return true
}

// Holder says which live app holds dev's lease.
func (l Leases) Holder(dev string) (string, bool) {
	return l.holder(dev, nil)
}

// liveKey names an app holding leases: its kind and id.
type liveKey struct{ kind, app string }

// holder is Holder, asking each app's kind once per memo (one call of Free or Busy:
// an app holding eight devices is asked of its Engine once, not eight times).
func (l Leases) holder(dev string, memo map[liveKey]bool) (string, bool) {
	le, ok := l.Read(dev)
	if !ok {
		return "", false
	}
	k := liveKey{le.Kind, le.AppID}
	live, asked := memo[k]
	if !asked {
		live = l.live(le)
		if memo != nil {
			memo[k] = live
		}
	}
	if !live {
		return "", false
	}
	return le.AppID, true
}

// Free is the part of pool that no live app holds, in pool's order.
func (l Leases) Free(pool []string) []string {
	var out []string
	memo := map[liveKey]bool{}
	for _, d := range pool {
		if _, held := l.holder(d, memo); !held {
			out = append(out, d)
		}
	}
	return out
}

// Busy returns the *BusyError of devs when a live app other than appID holds some of
// them, else nil.
func (l Leases) Busy(appID string, devs []string) error {
	e := &BusyError{Holders: map[string]string{}}
	memo := map[liveKey]bool{}
	for _, d := range devs {
		if owner, held := l.holder(d, memo); held && owner != appID {
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
	line := appID
	if l.Kind != "" && l.Kind != KindLocal {
		line += " " + l.Kind
	}
	for _, d := range devs {
		if err := safefs.WriteFileAtomic(l.Dir, fileName(d), []byte(line+"\n")); err != nil {
			return fmt.Errorf("device lease of %s: %w", d, err)
		}
	}
	return nil
}

// Release gives back the leases of devs that appID holds (a launch that failed):
// the devices are free at once, not when its kind judges the app gone.
func (l Leases) Release(appID string, devs []string) error {
	if len(devs) == 0 {
		return nil
	}
	unlock, err := lockDir(l.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no lease was ever taken here
	}
	if err != nil {
		return err
	}
	defer unlock()
	var errs []error
	for _, d := range devs {
		if le, ok := l.Read(d); ok && le.AppID == appID {
			if err := os.Remove(filepath.Join(l.Dir, fileName(d))); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("release device lease of %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// lockDir takes the leases directory's lock (safefs.LockDir).
func lockDir(dir string) (func(), error) {
	unlock, err := safefs.LockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("lock device leases: %w", err)
	}
	return unlock, nil
}
