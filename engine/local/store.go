package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Files of an app's state directory.
const (
	launchFile     = "launch.json"
	stateFile      = "state.json"
	supervisorLog  = "supervisor.log"
	cancelFile     = "cancel"
	successFile    = "SUCCESS" // in the app's log directory, as TorchX writes it
	storeVersion   = 1
	reasonDied     = "supervisor died"
	reasonNoLaunch = "wick exited before the supervisor started"
)

// launch is what Schedule writes once: everything needed to run and describe the app.
type launch struct {
	Version   int          `json:"version"`
	Scheduler string       `json:"scheduler"`
	Session   string       `json:"session"`
	AppID     string       `json:"app_id"`
	Created   time.Time    `json:"created"`
	Self      []string     `json:"self"`
	App       *spec.AppDef `json:"app"`
	// Cfg holds the resolved run options in their string form, which the options'
	// types read back exactly (JSON would turn ints into floats).
	Cfg     map[string]string `json:"cfg"`
	Request *Request          `json:"request"`
}

// state is the app's status as the supervisor keeps it.
type state struct {
	Version int    `json:"version"`
	Session string `json:"session"`
	spec.AppStatus
	// Owner is the process responsible for the app now: the launching wick until the
	// supervisor takes over. If it is gone while the app is not terminal, the app
	// failed.
	Owner logs.Proc `json:"owner"`
	// Supervisor is set by the supervisor itself; Cancel signals it.
	Supervisor logs.Proc `json:"supervisor,omitzero"`
}

// writeFileAtomic replaces dir/name with data: readers see the old or the new file,
// never a mix. The temporary file is in dir so that rename stays on one file system.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func writeJSONAtomic(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, name, append(data, '\n'))
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readLaunch(appDir string) (*launch, error) {
	var l launch
	if err := readJSON(filepath.Join(appDir, launchFile), &l); err != nil {
		return nil, err
	}
	if l.Request == nil || l.App == nil {
		return nil, fmt.Errorf("%s: incomplete", filepath.Join(appDir, launchFile))
	}
	return &l, nil
}

func readState(appDir string) (*state, error) {
	var st state
	if err := readJSON(filepath.Join(appDir, stateFile), &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func (st *state) save(appDir string) error {
	if err := writeJSONAtomic(appDir, stateFile, st); err != nil {
		return fmt.Errorf("save app state: %w", err)
	}
	return nil
}

// newState is the state of an app just submitted: every replica PENDING.
func newState(schedName string, l *launch, owner logs.Proc) *state {
	req := l.Request
	st := &state{
		Version: storeVersion,
		Session: req.Session,
		AppStatus: spec.AppStatus{
			Handle:    spec.Handle{Scheduler: schedName, Session: req.Session, AppID: req.AppID}.String(),
			AppID:     req.AppID,
			Scheduler: schedName,
			Name:      l.App.Name,
			State:     spec.Submitted,
			UIURL:     "file://" + req.LogDir,
			Created:   l.Created,
		},
		Owner: owner,
	}
	for _, role := range req.Roles {
		rs := spec.RoleStatus{Role: role.Name}
		for _, rep := range role.Replicas {
			rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{
				ID:       rep.ID,
				Role:     role.Name,
				State:    spec.Pending,
				Hostname: "localhost",
				LogDir:   rep.LogDir,
			})
		}
		st.Roles = append(st.Roles, rs)
	}
	return st
}

// load reads an app's state and reconciles it with the processes. It returns an error
// wrapping sched.ErrNotFound for an app this scheduler does not have.
func (s *Scheduler) load(appID string) (string, *state, error) {
	dir, err := s.appDir(appID)
	if err != nil {
		return "", nil, err
	}
	st, err := readState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("%w: %s", sched.ErrNotFound, appID)
	}
	if err != nil {
		return "", nil, fmt.Errorf("read app %s: %w", appID, err)
	}
	if st.Scheduler != s.name {
		return "", nil, fmt.Errorf("%w: %s (it was launched with %s)", sched.ErrNotFound, appID, st.Scheduler)
	}
	return dir, reconcile(dir, st), nil
}

// reconcile returns st, or, when st is not terminal but the process responsible for
// the app is gone, st as it must be: FAILED, with the reason in the app's and the
// unfinished replicas' errors. Nothing is written: the supervisor's reaper writes the
// same verdict on disk, and a reader must never race a live supervisor.
func reconcile(appDir string, st *state) *state {
	for range 2 {
		if st.State.Terminal() {
			return st
		}
		owner, reason := st.Owner, reasonNoLaunch
		if !st.Supervisor.IsZero() {
			owner, reason = st.Supervisor, reasonDied
		}
		if owner.Alive() {
			return st
		}
		// The owner may have written a terminal state (or handed over to the
		// supervisor) just before exiting: read once more before concluding.
		fresh, err := readState(appDir)
		if err != nil || fresh.Owner == st.Owner && fresh.Supervisor == st.Supervisor && !fresh.State.Terminal() {
			if err == nil {
				st = fresh
			}
			markDead(st, reason)
			return st
		}
		st = fresh
	}
	return st
}

// markDead sets st to FAILED because its owner died.
func markDead(st *state, reason string) {
	now := time.Now()
	st.State = spec.Failed
	st.Msg = reason
	if st.StructuredError == "" {
		st.StructuredError = reason
	}
	if st.Ended.IsZero() {
		st.Ended = now
	}
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			r := &st.Roles[i].Replicas[j]
			if !r.State.Terminal() {
				r.State = spec.Failed
				r.StructuredError = reason
				if r.Ended.IsZero() && !r.Started.IsZero() {
					r.Ended = now
				}
			}
		}
	}
}

// cfgStrings turns resolved run options into their string forms for launch.json.
func cfgStrings(cfg spec.Cfg) map[string]string {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		out[k] = spec.FormatValue(v)
	}
	return out
}

// cfgValues reads back what cfgStrings wrote, typed by the scheduler's options.
func (s *Scheduler) cfgValues(m map[string]string) spec.Cfg {
	cfg := spec.Cfg{}
	opts := s.RunOpts()
	for k, v := range m {
		if val, err := opts.Cast(k, v); err == nil {
			cfg[k] = val
		} else {
			cfg[k] = v
		}
	}
	return cfg
}
