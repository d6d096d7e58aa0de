package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
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

// Describe returns the app's status (reconciled with its processes), its AppDef and its
// run options. What it reads also serves the logs opened next (see logCache): `wick
// log` describes the app, then opens its logs, reading its files once.
func (s *Scheduler) Describe(ctx context.Context, appID string) (*sched.Description, error) {
	var key fileKey
	var keyed bool
	if dir, err := s.appDir(appID); err == nil {
		key, keyed = stateKey(dir)
	}
	dir, st, err := s.load(appID)
	if err != nil {
		return nil, err
	}
	if keyed {
		s.logCache.put(dir, key, logStateOf(st))
	}
	l, err := s.logCache.head(dir)
	if err != nil {
		return nil, fmt.Errorf("read app %s: %w", appID, err)
	}
	// The cached launch is shared: the caller gets its own AppDef.
	return &sched.Description{Status: st.AppStatus, App: l.App.Clone(), Cfg: s.RunOpts().CfgValues(l.Cfg)}, nil
}

// List returns the status of every app of this scheduler, of every session, newest
// first.
func (s *Scheduler) List(ctx context.Context) ([]spec.AppStatus, error) {
	entries, err := os.ReadDir(s.appsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list apps: %w", err)
	}
	// Reading a state file is mostly a system call and a JSON decode: a few workers
	// keep a thousand apps well under a tenth of a second.
	out := make([]*spec.AppStatus, len(entries))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				e := entries[i]
				if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
					continue
				}
				dir := filepath.Join(s.appsDir(), e.Name())
				st, err := readState(dir)
				var ce *CorruptError
				if errors.As(err, &ce) && s.name == NameCwd {
					// Shown, once (by local_cwd), so that it can be seen and deleted.
					out[i] = s.corruptStatus(dir, ce)
					continue
				}
				if err != nil || st.Scheduler != s.name {
					continue // being created or deleted, or another scheduler's
				}
				st = reconcile(dir, st)
				out[i] = &st.AppStatus
			}
		})
	}
	for i := range entries {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var apps []spec.AppStatus
	for _, a := range out {
		if a != nil {
			apps = append(apps, *a)
		}
	}
	sort.SliceStable(apps, func(i, j int) bool { return apps[i].Created.After(apps[j].Created) })
	return apps, nil
}

// corruptStatus is the list row of an app whose state cannot be read: UNKNOWN, with
// why. The session is launch.json's when it can be read.
func (s *Scheduler) corruptStatus(dir string, ce *CorruptError) *spec.AppStatus {
	session := s.cfg.Session
	var created time.Time
	if l, err := readLaunch(dir); err == nil {
		session, created = l.Session, l.Created
	} else if fi, err := os.Stat(dir); err == nil {
		created = fi.ModTime()
	}
	msg := "corrupt state: " + ce.Err.Error()
	return &spec.AppStatus{
		Handle:          spec.Handle{Scheduler: s.name, Session: session, AppID: ce.AppID}.String(),
		AppID:           ce.AppID,
		Scheduler:       s.name,
		Name:            "?",
		State:           spec.UnknownState,
		Msg:             msg,
		StructuredError: msg,
		Created:         created,
	}
}

// Cancel asks the app's supervisor to stop the app (SIGTERM) and returns at once. An
// app whose supervisor has not started yet is cancelled by a request file it reads
// when it starts.
func (s *Scheduler) Cancel(ctx context.Context, appID string) error {
	return s.cancel(appID, "cancel")
}

// cancel is Cancel; verb names the command in messages.
func (s *Scheduler) cancel(appID, verb string) error {
	dir, st, err := s.load(appID)
	if err != nil {
		return err
	}
	if st.State.Terminal() {
		return s.stopLeftovers(dir, appID, verb)
	}
	if !st.Supervisor.IsZero() {
		if err := signalProc(st.Supervisor, unix.SIGTERM); err != nil {
			return err
		}
		return supervisorStopped(appID, verb, st.Supervisor)
	}
	f, err := safefs.OpenAppend(filepath.Join(dir, cancelFile))
	if err != nil {
		return fmt.Errorf("cancel %s: %w", appID, err)
	}
	f.Close()
	// The supervisor may have taken over between the read and the request file.
	if fresh, err := readState(dir); err == nil && !fresh.Supervisor.IsZero() {
		return signalProc(fresh.Supervisor, unix.SIGTERM)
	}
	return nil
}

// stopLeftovers kills what the dead supervisor of a terminal app left running (see
// leftover.go) and says so through the scheduler's Warn.
func (s *Scheduler) stopLeftovers(dir, appID, verb string) error {
	did, err := stopLeftovers(dir, appID)
	if did != "" && s.cfg.Warn != nil {
		s.cfg.Warn(fmt.Sprintf("%s %s: its supervisor is gone; %s", verb, appID, did))
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, appID, err)
	}
	return nil
}

// supervisorStopped returns an error if the app's supervisor is stopped (SIGSTOP, a
// debugger): it got the request but cannot act on it, and waiting would hang.
func supervisorStopped(appID, verb string, p logs.Proc) error {
	if procStopped(p.PID) && p.Alive() {
		return fmt.Errorf("%s %s: its supervisor (pid %d) is stopped, so it cannot stop the app: resume it (kill -CONT %d), or kill it", verb, appID, p.PID, p.PID)
	}
	return nil
}

// signalProc signals p through a pidfd, so that a pid reused by another process is
// never signalled. A process that is gone is not an error.
func signalProc(p logs.Proc, sig unix.Signal) error {
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil {
		return nil // gone
	}
	defer unix.Close(fd)
	if !p.Alive() {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && err != unix.ESRCH {
		return fmt.Errorf("signal supervisor %d: %w", p.PID, err)
	}
	return nil
}

// Delete removes the app's state and logs. A running app is refused with
// sched.ErrRunning unless force, which cancels it and waits for its supervisor to
// end.
func (s *Scheduler) Delete(ctx context.Context, appID string, force bool) error {
	dir, st, err := s.load(appID)
	var ce *CorruptError
	if errors.As(err, &ce) && force {
		return s.deleteCorrupt(dir, appID)
	}
	if err != nil {
		return err
	}
	if !st.State.Terminal() {
		if !force {
			return fmt.Errorf("%w: %s (cancel it first, or delete with force)", sched.ErrRunning, appID)
		}
		if err := s.cancel(appID, "delete"); err != nil {
			return err
		}
		// A supervisor may have taken the app over since it was read: wait for it.
		if fresh, err := readState(dir); err == nil {
			st = fresh
		}
	}
	// Wait for the supervisor to finish writing, whether it is stopping the app or
	// just recording its end.
	if p := st.Supervisor; p.Alive() {
		if err := s.waitSupervisor(ctx, appID, p); err != nil {
			return err
		}
	}
	if err := s.stopLeftovers(dir, appID, "delete"); err != nil {
		return err
	}
	l, lerr := readLaunch(dir)
	var logDirs []string
	session := st.Session
	if lerr == nil {
		logDirs, session = []string{l.Request.LogDir}, l.Session
	} else {
		// launch.json cannot be read (garbage, tampered): the logs are found where the
		// replicas' statuses say, else in the default log_dir.
		logDirs = s.logDirsOf(st, appID)
	}
	var removed []string
	for _, logDir := range logDirs {
		// Remove only a directory that has the shape of an app's log directory.
		if !filepath.IsAbs(logDir) || filepath.Base(logDir) != appID || filepath.Base(filepath.Dir(logDir)) != session {
			continue
		}
		if _, err := os.Lstat(logDir); err != nil {
			continue
		}
		if err := os.RemoveAll(logDir); err != nil {
			return fmt.Errorf("delete logs of %s: %w", appID, err)
		}
		removed = append(removed, logDir)
	}
	if lerr != nil && s.cfg.Warn != nil {
		did := "found no logs to remove"
		if len(removed) > 0 {
			did = "removed its logs from " + strings.Join(removed, ", ")
		}
		s.cfg.Warn(fmt.Sprintf("delete %s: its launch.json cannot be read (%v); %s", appID, lerr, did))
	}
	return s.removeAppDir(dir, appID)
}

// logDirsOf guesses the log directories of an app whose launch.json cannot be read:
// the one its replicas' statuses name (<log_dir>/<session>/<app_id>/<role>/<k>), and
// the app's directory in its session of the default log_dir.
func (s *Scheduler) logDirsOf(st *state, appID string) []string {
	seen := map[string]bool{}
	var dirs []string
	add := func(d string) {
		if d != "" && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, role := range st.Roles {
		for _, r := range role.Replicas {
			if r.LogDir != "" {
				add(filepath.Dir(filepath.Dir(filepath.Clean(r.LogDir))))
			}
		}
	}
	add(filepath.Join(s.defaultLogDir(), st.Session, appID))
	return dirs
}

// waitSupervisor waits for an app's supervisor to exit. A supervisor that is stopped
// (SIGSTOP, a debugger) can never exit by itself: that is said at once rather than
// waited for in silence, and nothing is deleted, since its replicas still run.
func (s *Scheduler) waitSupervisor(ctx context.Context, appID string, p logs.Proc) error {
	done, stop := s.watcher.WatchProc(p)
	defer stop()
	check := time.NewTicker(250 * time.Millisecond)
	defer check.Stop()
	for {
		if procStopped(p.PID) {
			return fmt.Errorf("delete %s: its supervisor (pid %d) is stopped, so it cannot stop the app and exit: resume it (kill -CONT %d) and delete again, or kill it", appID, p.PID, p.PID)
		}
		select {
		case <-done:
			return nil
		case <-check.C:
		case <-ctx.Done():
			return fmt.Errorf("delete %s: waiting for its supervisor (pid %d) to exit: %w", appID, p.PID, ctx.Err())
		}
	}
}

// procStopped reports whether process pid is stopped (state T or t in /proc).
func procStopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may hold any
	// character: look after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'T' || b[i+2] == 't'
}

// deleteCorrupt removes an app whose state cannot be read, and its logs: where
// launch.json says, or, when it cannot be read either, the app's directory in every
// session of the default log_dir.
func (s *Scheduler) deleteCorrupt(dir, appID string) error {
	var logDirs []string
	if l, err := readLaunch(dir); err == nil {
		logDirs = append(logDirs, l.Request.LogDir)
	} else if sessions, err := os.ReadDir(s.defaultLogDir()); err == nil {
		for _, e := range sessions {
			if e.IsDir() {
				logDirs = append(logDirs, filepath.Join(s.defaultLogDir(), e.Name(), appID))
			}
		}
	}
	for _, d := range logDirs {
		if filepath.IsAbs(d) && filepath.Base(d) == appID {
			if err := os.RemoveAll(d); err != nil {
				return fmt.Errorf("delete logs of %s: %w", appID, err)
			}
		}
	}
	return s.removeAppDir(dir, appID)
}

// removeAppDir removes an app's state directory: renamed first, so that the app
// vanishes at once for concurrent readers, never half removed. Losing a race with
// another delete is "no such app".
func (s *Scheduler) removeAppDir(dir, appID string) error {
	trash := filepath.Join(s.appsDir(), "."+appID+".deleted")
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s", sched.ErrNotFound, appID)
		}
		return fmt.Errorf("delete %s: %w", appID, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("delete %s: %w", appID, err)
	}
	return nil
}

// Logs returns the lines of replica k of role, from the files of the app's log
// directory. Following ends once the replica can write no more and every line is read.
func (s *Scheduler) Logs(ctx context.Context, appID, role string, k int, opts sched.LogOptions) (sched.LogIterator, error) {
	logDir, ls, err := s.replicaLogDir(appID, role, k)
	if err != nil {
		return nil, err
	}
	writer := ls.writer()
	if opts.Follow {
		dir, _ := s.appDir(appID)
		if writer, err = s.awaitSupervisor(ctx, dir, ls); err != nil {
			return nil, err
		}
	}
	it, err := logs.Open(logs.Source{Dir: logDir, Role: role, Replica: k, Writer: writer, Watcher: s.watcher, Warn: s.cfg.Warn}, opts)
	if err != nil {
		return nil, err
	}
	return it, nil
}

// LogsOf returns the iterators of many replicas of an app, reading the app's state
// and launch files at most once.
func (s *Scheduler) LogsOf(ctx context.Context, appID string, refs []sched.ReplicaRef, opts sched.LogOptions) ([]sched.LogIterator, error) {
	dir, err := s.appDir(appID)
	if err != nil {
		return nil, err
	}
	ls, err := s.logCache.state(dir, func() (*state, error) {
		_, st, err := s.load(appID)
		return st, err
	})
	if err != nil {
		return nil, err
	}
	logDirs, err := s.logCache.replicaDirs(dir, appID, refs)
	if err != nil {
		return nil, err
	}
	writer := ls.writer()
	var chime *logs.Chime
	if opts.Follow {
		chime = s.chimeOf(appID)
		switch {
		case chime != nil && !ls.supervisor.IsZero():
			// Its bell rang "ok": the supervisor has taken over and made the logs,
			// whatever the state it wrote then says (an app that ended at once).
			writer = ls.supervisor
		default:
			if writer, err = s.awaitSupervisor(ctx, dir, ls); err != nil {
				return nil, err
			}
		}
	}
	its := make([]sched.LogIterator, 0, len(refs))
	fail := func(err error) ([]sched.LogIterator, error) {
		for _, it := range its {
			it.Close()
		}
		return nil, err
	}
	// The replicas of a role share its log directory: walked from "/" once, each
	// replica's directory opened from it.
	parents := map[string]*os.File{}
	defer func() {
		for _, d := range parents {
			if d != nil {
				d.Close()
			}
		}
	}()
	for i, ref := range refs {
		var parent *os.File
		if len(refs) > 1 {
			p := filepath.Dir(logDirs[i])
			d, ok := parents[p]
			if !ok {
				// Should it fail, each replica walks its own path, and says why.
				d, _ = safefs.OpenDir(p)
				parents[p] = d
			}
			parent = d
		}
		it, err := logs.Open(logs.Source{Dir: logDirs[i], Role: ref.Role, Replica: ref.Replica, Writer: writer, Watcher: s.watcher, Chime: chime, Warn: s.cfg.Warn, Parent: parent}, opts)
		if err != nil {
			return fail(err)
		}
		its = append(its, it)
	}
	return its, nil
}

// RawLog opens the log file of one stream of a replica as it is on disk: stdout.log
// and stderr.log byte for byte, combined.log whole lines in arrival order. It is the
// fast path of reading a whole log with no filter.
func (s *Scheduler) RawLog(ctx context.Context, appID, role string, k int, stream sched.Stream) (io.ReadCloser, error) {
	logDir, _, err := s.replicaLogDir(appID, role, k)
	if err != nil {
		return nil, err
	}
	if stream == "" {
		stream = sched.Combined
	}
	f, err := logs.OpenFile(logDir, string(stream)+".log")
	if err != nil {
		return nil, fmt.Errorf("app %s: %w", appID, err)
	}
	return f, nil
}

// replicaLogDir finds the log directory of replica k of role, and what opening its
// logs needs of the app's state. Both come from the cache of what opening logs reads
// (see logCache).
func (s *Scheduler) replicaLogDir(appID, role string, k int) (string, logState, error) {
	dir, err := s.appDir(appID)
	if err != nil {
		return "", logState{}, err
	}
	ls, err := s.logCache.state(dir, func() (*state, error) {
		_, st, err := s.load(appID)
		return st, err
	})
	if err != nil {
		return "", logState{}, err
	}
	logDirs, err := s.logCache.replicaDirs(dir, appID, []sched.ReplicaRef{{Role: role, Replica: k}})
	if err != nil {
		return "", logState{}, err
	}
	return logDirs[0], ls, nil
}

// replicaDirOf finds the log directory of replica k of role in an app's launch.
func replicaDirOf(l *launch, appID, role string, k int) (string, error) {
	var rr *RoleRequest
	var names []string
	for i := range l.Request.Roles {
		names = append(names, l.Request.Roles[i].Name)
		if l.Request.Roles[i].Name == role {
			rr = &l.Request.Roles[i]
		}
	}
	if rr == nil {
		return "", fmt.Errorf("app %s has no role %q%s (roles: %s)", appID, role, spec.DidYouMean(role, names), strings.Join(names, ", "))
	}
	if k < 0 || k >= len(rr.Replicas) {
		return "", fmt.Errorf("role %s of app %s has no replica %d (it has %d)", role, appID, k, len(rr.Replicas))
	}
	return rr.Replicas[k].LogDir, nil
}

// Wait blocks until the app is terminal and returns its status. It is woken by
// changes of the app's state file and by its supervisor's exit, without polling.
func (s *Scheduler) Wait(ctx context.Context, appID string) (*spec.AppStatus, error) {
	// Look first: an app that has ended (an attached run reads its logs to their
	// end, which comes after the final state) needs no watch, and a watch costs
	// its teardown (see logs.Chime).
	if _, st, err := s.load(appID); err != nil || st.State.Terminal() {
		if err != nil {
			return nil, err
		}
		return &st.AppStatus, nil
	}
	dir, err := s.appDir(appID)
	if err != nil {
		return nil, err
	}
	w, err := s.watcher.Add(dir)
	if err != nil {
		if _, _, lerr := s.load(appID); lerr != nil {
			return nil, lerr
		}
		return nil, err
	}
	defer w.Close()
	var (
		watched logs.Proc
		done    <-chan struct{}
		stop    = func() {}
	)
	defer func() { stop() }()
	for {
		_, st, err := s.load(appID)
		if err != nil {
			return nil, err
		}
		if st.State.Terminal() {
			return &st.AppStatus, nil
		}
		owner := st.Supervisor
		if owner.IsZero() {
			owner = st.Owner
		}
		if owner != watched {
			stop()
			watched = owner
			done, stop = s.watcher.WatchProc(owner)
		}
		select {
		case <-w.C():
		case <-done:
			done = nil
		case <-ctx.Done():
			return &st.AppStatus, ctx.Err()
		}
	}
}
