package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/safefs"
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
	// Cgroup is the app's cgroup directory, if the supervisor made one: cancel and
	// delete kill what is left in it should the supervisor and its reaper die.
	Cgroup string `json:"cgroup,omitempty"`
}

// writeFileAtomic replaces dir/name with data (mode 0600): readers see the old or the
// new file, never a mix.
func writeFileAtomic(dir, name string, data []byte) error {
	return safefs.WriteFileAtomic(dir, name, data)
}

func writeJSONAtomic(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, name, append(data, '\n'))
}

// maxStateFile bounds what is read of state.json and launch.json: a thousand-replica
// app's files are well under a megabyte; a larger one is corrupt, not an app.
const maxStateFile = 64 << 20

// CorruptError is an app directory whose state cannot be read: truncated or garbage
// JSON, a file that is not a regular file, one over maxStateFile. Such an app is
// listed as UNKNOWN and `delete --force` removes it.
type CorruptError struct {
	AppID string
	Err   error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("app %s has corrupt state (%v); delete --force removes it", e.AppID, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// readJSON reads a state file of the app directory: a missing file is fs.ErrNotExist,
// anything unreadable a *CorruptError.
func readJSON(appDir, name string, v any) error {
	path := filepath.Join(appDir, name)
	corrupt := func(err error) error {
		return &CorruptError{AppID: filepath.Base(appDir), Err: fmt.Errorf("%s: %w", name, stripPath(err, path))}
	}
	data, err := safefs.ReadFile(path, maxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil {
		return corrupt(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return corrupt(err)
	}
	return nil
}

// stripPath drops the path from an error that names it, to keep messages short.
func stripPath(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	if msg := err.Error(); strings.HasPrefix(msg, path+": ") {
		return errors.New(strings.TrimPrefix(msg, path+": "))
	}
	return err
}

func readLaunch(appDir string) (*launch, error) {
	var l launch
	if err := readJSON(appDir, launchFile, &l); err != nil {
		return nil, err
	}
	if l.Request == nil || l.App == nil {
		return nil, &CorruptError{AppID: filepath.Base(appDir), Err: fmt.Errorf("%s: incomplete", launchFile)}
	}
	return &l, nil
}

// logCache keeps what opening a replica's logs reads of an app: its launch file
// (parsed) and what its state file says of the process writing its logs. Opening the
// logs of replica after replica (the wall's panes and read-backs) would otherwise
// parse a thousand-replica app's files each time, and `wick log` would read them
// again after Describe. An entry is used only while its file's inode, size and time
// are unchanged; state.json is replaced by rename, so any write shows.
type logCache struct {
	mu       sync.Mutex
	launches map[string]cachedLaunch
	heads    map[string]cachedLaunch // launches without their request (Describe)
	states   map[string]cachedState
	dirs     map[string]cachedDirs // log directories of some replicas (DescribeReplicas)
	// loading has, by app directory, the lock of its state's loading (see state).
	loading map[string]*sync.Mutex
}

// fileKey identifies a version of a file.
type fileKey struct{ ino, size, mtime, ctime int64 }

type cachedLaunch struct {
	key fileKey
	l   *launch
}

// cachedDirs is what a version of an app's launch file says of the log directories of
// some of its replicas.
type cachedDirs struct {
	key  fileKey
	dirs map[sched.ReplicaRef]string
}

type cachedState struct {
	key fileKey
	ls  logState
}

// logState is what opening an app's logs needs of its (reconciled) state.
type logState struct {
	owner, supervisor logs.Proc
	terminal          bool
	started           bool // see started
}

func logStateOf(st *state) logState {
	return logState{owner: st.Owner, supervisor: st.Supervisor, terminal: st.State.Terminal(), started: started(st)}
}

// writer is the process writing the app's logs: its supervisor, or the launcher
// before the supervisor took over.
func (ls logState) writer() logs.Proc {
	if ls.supervisor.IsZero() {
		return ls.owner
	}
	return ls.supervisor
}

// maxCached bounds each map of the cache: the apps whose logs are open at once.
const maxCached = 16

func statKey(path string) (fileKey, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileKey{}, false
	}
	return fileKey{int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()}, true
}

// launch returns the launch of appDir, read again only when the file changed. The
// launch returned is shared: callers must not modify it.
func (c *logCache) launch(appDir string) (*launch, error) {
	key, ok := statKey(filepath.Join(appDir, launchFile))
	if c == nil || !ok {
		return readLaunch(appDir) // its error says what is wrong
	}
	c.mu.Lock()
	e, hit := c.launches[appDir]
	c.mu.Unlock()
	if hit && e.key == key {
		return e.l, nil
	}
	l, err := readLaunch(appDir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.launches == nil || len(c.launches) >= maxCached {
		c.launches = map[string]cachedLaunch{}
	}
	c.launches[appDir] = cachedLaunch{key, l}
	return l, nil
}

// head returns the launch of appDir as Describe needs it, its AppDef and run options:
// the whole launch when it is cached, or else the members before its request only
// (readLaunchHead), read again only when the file changed. Its request, the biggest
// part and the one with the most types to decode, is what only the log readers need
// (launch): `wick status`, a process of its own, decoded it whole and never used
// it. The launch returned is shared and may have no Request: callers must not modify
// it.
func (c *logCache) head(appDir string) (*launch, error) {
	key, ok := statKey(filepath.Join(appDir, launchFile))
	if c == nil || !ok {
		return readLaunch(appDir) // its error says what is wrong
	}
	c.mu.Lock()
	e, hit := c.launches[appDir]
	if !hit || e.key != key {
		e, hit = c.heads[appDir]
	}
	c.mu.Unlock()
	if hit && e.key == key {
		return e.l, nil
	}
	l, _, err := readLaunchHead(appDir, nil, nil)
	if err != nil {
		return c.launch(appDir) // another make of the file, or what is wrong with it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.heads == nil || len(c.heads) >= maxCached {
		c.heads = map[string]cachedLaunch{}
	}
	c.heads[appDir] = cachedLaunch{key, l}
	return l, nil
}

// stateKey returns the key of the app's state file as it is now: taken before the
// file is read, so that a write in between makes the next use read it again, never
// use stale content.
func stateKey(appDir string) (fileKey, bool) {
	return statKey(filepath.Join(appDir, stateFile))
}

// state returns what opening logs needs of the state of the app in appDir, with
// load's checks, reading state.json again only when it changed.
func (c *logCache) state(appDir string, load func() (*state, error)) (logState, error) {
	key, ok := stateKey(appDir)
	if c != nil && ok {
		if ls, hit := c.cachedState(appDir, key); hit {
			return ls, nil
		}
		// One load of an app's state at a time: the readers of a wall of 1,024
		// replicas opening while the app still wrote its state each read and decoded
		// it, 340 MB at once; the others wait, and then find it cached unless it
		// changed again.
		unlock := c.lockLoad(appDir)
		defer unlock()
		if key, ok = stateKey(appDir); ok {
			if ls, hit := c.cachedState(appDir, key); hit {
				return ls, nil
			}
		}
	}
	st, err := load()
	if err != nil {
		return logState{}, err
	}
	ls := logStateOf(st)
	if ok {
		c.put(appDir, key, ls)
	}
	return ls, nil
}

// cachedState returns what the version key of appDir's state file said, when it is
// cached.
func (c *logCache) cachedState(appDir string, key fileKey) (logState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, hit := c.states[appDir]
	return e.ls, hit && e.key == key
}

// lockLoad takes the lock of the loading of appDir's state and returns its release.
func (c *logCache) lockLoad(appDir string) (unlock func()) {
	c.mu.Lock()
	if c.loading == nil || len(c.loading) >= maxCached {
		c.loading = map[string]*sync.Mutex{}
	}
	l := c.loading[appDir]
	if l == nil {
		l = &sync.Mutex{}
		c.loading[appDir] = l
	}
	c.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// put records ls as what the app's state file said in the version key.
func (c *logCache) put(appDir string, key fileKey, ls logState) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.states == nil || len(c.states) >= maxCached {
		c.states = map[string]cachedState{}
	}
	c.states[appDir] = cachedState{key, ls}
}

// putDirs records the log directories of some replicas, as the version key of the
// app's launch file says.
func (c *logCache) putDirs(appDir string, key fileKey, dirs map[sched.ReplicaRef]string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirs == nil || len(c.dirs) >= maxCached {
		c.dirs = map[string]cachedDirs{}
	}
	c.dirs[appDir] = cachedDirs{key, dirs}
}

// replicaDirs returns the log directories of the replicas of refs: those recorded by
// putDirs if the launch file is unchanged since and they are all there, or else from
// the launch file, read whole.
func (c *logCache) replicaDirs(appDir, appID string, refs []sched.ReplicaRef) ([]string, error) {
	out := make([]string, len(refs))
	if key, ok := statKey(filepath.Join(appDir, launchFile)); c != nil && ok {
		c.mu.Lock()
		e, hit := c.dirs[appDir]
		c.mu.Unlock()
		all := hit && e.key == key
		for i := 0; all && i < len(refs); i++ {
			out[i], all = e.dirs[refs[i]]
		}
		if all {
			return out, nil
		}
	}
	l, err := c.launch(appDir)
	if err != nil {
		return nil, fmt.Errorf("read app %s: %w", appID, err)
	}
	for i, ref := range refs {
		if out[i], err = replicaDirOf(l, appID, ref.Role, ref.Replica); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readState(appDir string) (*state, error) {
	var st state
	if err := readJSON(appDir, stateFile, &st); err != nil {
		return nil, err
	}
	if st.Scheduler == "" || st.AppID != filepath.Base(appDir) {
		return nil, &CorruptError{AppID: filepath.Base(appDir), Err: fmt.Errorf("%s: not this app's state", stateFile)}
	}
	return &st, nil
}

func (st *state) save(appDir string) error {
	if err := writeJSONAtomic(appDir, stateFile, st); err != nil {
		return fmt.Errorf("save app state: %w", err)
	}
	return nil
}

// prepare writes st beside state.json, fsynced, without putting it in place:
// commitFinal does, once what must be on disk before it is.
func (st *state) prepare(appDir string) (*safefs.Prepared, error) {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("save app state: %w", err)
	}
	p, err := safefs.PrepareFile(appDir, stateFile, append(data, '\n'))
	if err != nil {
		return nil, fmt.Errorf("save app state: %w", err)
	}
	return p, nil
}

// saveRunning saves the state of an app its supervisor runs (the takeover, the
// replicas' changes) through the supervisor's DirSyncer: atomically, the fsync of
// the app's directory done in the background, shared by the saves made while one
// runs. It returns the save's number: durable once ds.Wait of it returns. A final
// state is saved (and its directory synced at once) by save.
func (st *state) saveRunning(ds *safefs.DirSyncer) (uint64, error) {
	data, err := json.MarshalIndent(st, "", "  ")
	var n uint64
	if err == nil {
		n, err = ds.Replace(stateFile, append(data, '\n'))
	}
	if err != nil {
		return 0, fmt.Errorf("save app state: %w", err)
	}
	return n, nil
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
	var ce *CorruptError
	if errors.As(err, &ce) {
		return dir, nil, err // the directory, for delete --force
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
// unfinished replicas' errors. For a dead supervisor nothing is written: its reaper
// writes the same verdict on disk, and a reader must never race a live supervisor. A
// launch that died before any supervisor took the app over has no one else to write
// it: endLaunch saves it, with its end.
func reconcile(appDir string, st *state) *state {
	for range 2 {
		if st.State.Terminal() {
			return st
		}
		owner, reason := st.Owner, reasonNoLaunch
		if !st.Supervisor.IsZero() {
			owner, reason = st.Supervisor, reasonDied
		}
		if owner.Alive() || (st.Supervisor.IsZero() && time.Since(st.Created) < comingWindow && supervisorComing(appDir)) {
			return st
		}
		// The owner may have written a terminal state (or handed over to the
		// supervisor) just before exiting: read once more before concluding. The
		// file's time is taken first: a reader that saved the verdict in between
		// leaves a terminal state to read, not a later time to take.
		lastWrite := stateWritten(appDir)
		fresh, err := readState(appDir)
		if err != nil || fresh.Owner == st.Owner && fresh.Supervisor == st.Supervisor && !fresh.State.Terminal() {
			if err == nil {
				st = fresh
			}
			if reason == reasonDied {
				markGone(appDir, st)
				return st
			}
			endLaunch(appDir, st, lastWrite, err == nil)
			return st
		}
		st = fresh
	}
	return st
}

// comingWindow bounds how long after its launch an app whose launcher died is looked
// for a supervisor coming (supervisorComing): one that has not taken the app over a
// minute after it was started is not coming, and the look, a read of every process's
// command line, is not paid by every listing of an app that died so long ago.
const comingWindow = time.Minute

// supervisorComing says whether a supervisor of the app at appDir runs that has not
// taken the app over yet: its launcher died just after starting it (kill -9 of a
// sweep's queue), and it takes the app over in a moment. The app is not dead then;
// judging it so would have the sweep launch it again beside it. Its command line
// (SELF... __supervise APP_DIR) is looked for among the processes: only for an app
// in that moment's state, whose launcher is gone.
func supervisorComing(appDir string) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := safefs.ReadFile("/proc/"+e.Name()+"/cmdline", 64<<10)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == SuperviseVerb && args[i+1] == appDir {
				return true
			}
		}
	}
	return false
}

// stateWritten is when the app's state file was last written, zero if unknown.
func stateWritten(appDir string) time.Time {
	fi, err := os.Lstat(filepath.Join(appDir, stateFile))
	if err != nil || !fi.Mode().IsRegular() {
		return time.Time{}
	}
	return fi.ModTime()
}

// endLaunch sets st, whose launcher died before a supervisor took the app over, to
// FAILED, ended when its state was last written: the launcher's last evidence of
// life, and a fact, the same on every read (a growing duration was not). The verdict
// is saved, best effort, when the state on disk is the one judged (save): no
// supervisor or reaper exists to write it, and a reader after this one then reads
// the same end without judging again.
func endLaunch(appDir string, st *state, lastWrite time.Time, save bool) {
	if st.Ended.IsZero() && !lastWrite.IsZero() {
		st.Ended = lastWrite
		if st.Ended.Before(st.Created) {
			st.Ended = st.Created
		}
	}
	markDead(st, reasonNoLaunch)
	if save && !lastWrite.IsZero() && time.Since(lastWrite) >= launchSettle {
		saveVerdict(appDir, st) // best effort: unsaved, the next read judges the same
	}
}

// saveVerdict saves st, the verdict of a dead launch, under the app's lock, unless the
// state on disk is no longer the one judged: a supervisor took the app over (or the
// app ended) while the verdict was made.
func saveVerdict(appDir string, st *state) {
	unlock, err := lockApp(appDir)
	if err != nil {
		return
	}
	defer unlock()
	now, err := readState(appDir)
	if err != nil || now.State.Terminal() || !now.Supervisor.IsZero() || now.Owner != st.Owner {
		return
	}
	_ = st.save(appDir)
}

// launchSettle is how old a dead launch's last write must be for its verdict to be
// saved. A supervisor the launcher forked just before it died shows the launcher's
// command line until its exec (supervisorComing cannot see it), then reads the state
// and takes the app over: it must not read a verdict saved in that moment. The end
// shown meanwhile is the same, the file's time.
const launchSettle = 10 * time.Second

// markDead sets st to FAILED because its owner died; an end already set stays.
func markDead(st *state, reason string) {
	now := time.Now()
	if !st.Ended.IsZero() {
		now = st.Ended
	}
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
