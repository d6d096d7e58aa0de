package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// maxCallFile bounds what is read of a recorded component call: a component name and
// its arguments, far below this.
const maxCallFile = 256 << 10

// callPath is where the Runner records the component call of each app it launched
// from one: $WICK_HOME/calls/SCHEDULER/SESSION/APP_ID.json. Every scheduler stores the
// AppDef; only the Runner knows the component and arguments it came from.
func (r *Runner) callPath(h spec.Handle) (dir, name string, err error) {
	for _, n := range [][2]string{{"scheduler", h.Scheduler}, {"session", h.Session}, {"app id", h.AppID}} {
		if err := spec.ValidateName(n[0], n[1]); err != nil {
			return "", "", err
		}
	}
	return filepath.Join(r.cfg.StateDir, "calls", h.Scheduler, h.Session), h.AppID + ".json", nil
}

// recordCall writes the component call of the app just launched. A launch does not
// fail because of it: without the record, relaunching with edits says it is unknown.
func (r *Runner) recordCall(info *sched.DryRunInfo) { r.recordCallAs(info.Handle(), info.Call) }

// recordCallAs writes call as the component call of the app h.
func (r *Runner) recordCallAs(h spec.Handle, call *sched.Call) {
	if call == nil || r.cfg.StateDir == "" {
		return
	}
	dir, name, err := r.callPath(h)
	if err != nil {
		return
	}
	data, err := json.Marshal(call)
	if err != nil || safefs.MkdirAll(dir) != nil {
		return
	}
	// Durable (its directory synced too): written while the app launches, its
	// fsyncs cost the launch no time.
	_ = safefs.WriteFileAtomic(dir, name, data)
}

// Call returns the component call the app h was launched from, or nil when it was not
// launched from a component by this WICK_HOME (an AppDef, another home, an older wick).
func (r *Runner) Call(h spec.Handle) (*sched.Call, error) {
	if r.cfg.StateDir == "" {
		return nil, nil
	}
	dir, name, err := r.callPath(h)
	if err != nil {
		return nil, err
	}
	data, err := safefs.ReadFile(filepath.Join(dir, name), maxCallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the component call: %w", h, err)
	}
	var c sched.Call
	if err := json.Unmarshal(data, &c); err != nil || c.Component == "" {
		return nil, fmt.Errorf("%s: the recorded component call is unreadable", h)
	}
	return &c, nil
}

// forgetCall removes the record of the app h's component call.
func (r *Runner) forgetCall(h spec.Handle) {
	if r.cfg.StateDir == "" {
		return
	}
	if dir, name, err := r.callPath(h); err == nil {
		_ = os.Remove(filepath.Join(dir, name))
	}
}
