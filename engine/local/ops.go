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
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Describe returns the app's status (reconciled with its processes), its AppDef and its
// run options.
func (s *Scheduler) Describe(ctx context.Context, appID string) (*sched.Description, error) {
	dir, st, err := s.load(appID)
	if err != nil {
		return nil, err
	}
	l, err := readLaunch(dir)
	if err != nil {
		return nil, fmt.Errorf("read app %s: %w", appID, err)
	}
	return &sched.Description{Status: st.AppStatus, App: l.App, Cfg: s.cfgValues(l.Cfg)}, nil
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

// Cancel asks the app's supervisor to stop the app (SIGTERM) and returns at once. An
// app whose supervisor has not started yet is cancelled by a request file it reads
// when it starts.
func (s *Scheduler) Cancel(ctx context.Context, appID string) error {
	dir, st, err := s.load(appID)
	if err != nil {
		return err
	}
	if st.State.Terminal() {
		return nil
	}
	if !st.Supervisor.IsZero() {
		return signalProc(st.Supervisor, unix.SIGTERM)
	}
	if err := os.WriteFile(filepath.Join(dir, cancelFile), nil, 0o644); err != nil {
		return fmt.Errorf("cancel %s: %w", appID, err)
	}
	// The supervisor may have taken over between the read and the request file.
	if fresh, err := readState(dir); err == nil && !fresh.Supervisor.IsZero() {
		return signalProc(fresh.Supervisor, unix.SIGTERM)
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
	if err != nil {
		return err
	}
	if !st.State.Terminal() {
		if !force {
			return fmt.Errorf("%w: %s (cancel it first, or delete with force)", sched.ErrRunning, appID)
		}
		if err := s.Cancel(ctx, appID); err != nil {
			return err
		}
	}
	// Wait for the supervisor to finish writing, whether it is stopping the app or
	// just recording its end.
	if p := st.Supervisor; p.Alive() {
		done, stop := s.watcher.WatchProc(p)
		select {
		case <-done:
			stop()
		case <-ctx.Done():
			stop()
			return fmt.Errorf("delete %s: %w", appID, ctx.Err())
		}
	}
	if l, err := readLaunch(dir); err == nil {
		logDir := l.Request.LogDir
		// Remove only a directory that has the shape of an app's log directory.
		if filepath.IsAbs(logDir) && filepath.Base(logDir) == appID && filepath.Base(filepath.Dir(logDir)) == l.Session {
			if err := os.RemoveAll(logDir); err != nil {
				return fmt.Errorf("delete logs of %s: %w", appID, err)
			}
		}
	}
	// Rename first: the app vanishes at once for concurrent readers, never half
	// removed.
	trash := filepath.Join(s.appsDir(), "."+appID+".deleted")
	if err := os.Rename(dir, trash); err != nil {
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
	logDir, st, err := s.replicaLogDir(appID, role, k)
	if err != nil {
		return nil, err
	}
	writer := st.Supervisor
	if writer.IsZero() {
		writer = st.Owner
	}
	it, err := logs.Open(logs.Source{Dir: logDir, Role: role, Replica: k, Writer: writer, Watcher: s.watcher}, opts)
	if err != nil {
		return nil, err
	}
	return it, nil
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
	f, err := os.Open(filepath.Join(logDir, string(stream)+".log"))
	if err != nil {
		return nil, fmt.Errorf("app %s: %w", appID, err)
	}
	return f, nil
}

// replicaLogDir finds the log directory of replica k of role, with the app's state.
func (s *Scheduler) replicaLogDir(appID, role string, k int) (string, *state, error) {
	dir, st, err := s.load(appID)
	if err != nil {
		return "", nil, err
	}
	l, err := readLaunch(dir)
	if err != nil {
		return "", nil, fmt.Errorf("read app %s: %w", appID, err)
	}
	var rr *RoleRequest
	var names []string
	for i := range l.Request.Roles {
		names = append(names, l.Request.Roles[i].Name)
		if l.Request.Roles[i].Name == role {
			rr = &l.Request.Roles[i]
		}
	}
	if rr == nil {
		return "", nil, fmt.Errorf("app %s has no role %q%s (roles: %s)", appID, role, spec.DidYouMean(role, names), strings.Join(names, ", "))
	}
	if k < 0 || k >= len(rr.Replicas) {
		return "", nil, fmt.Errorf("role %s of app %s has no replica %d (it has %d)", role, appID, k, len(rr.Replicas))
	}
	return rr.Replicas[k].LogDir, st, nil
}

// Wait blocks until the app is terminal and returns its status. It is woken by
// changes of the app's state file and by its supervisor's exit, without polling.
func (s *Scheduler) Wait(ctx context.Context, appID string) (*spec.AppStatus, error) {
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
