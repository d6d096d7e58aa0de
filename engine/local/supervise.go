package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Env vars between the launcher, the supervisor and its reaper. Replicas never see
// them.
const (
	// envReadyFD names the fd on which the supervisor reports "ok" or "error: ..."
	// once the replicas are started, then closes it.
	envReadyFD = "WICK_SUPERVISOR_READY_FD"
	// envReaper makes `wick __supervise DIR` run as the app's reaper (see reap).
	envReaper = "WICK_SUPERVISOR_REAPER"
)

const (
	// drainWait bounds how long the supervisor waits for a replica's output pipes to
	// close once its process group is gone. Only a process that left the group
	// (setsid) can hold them open longer; its output is then no longer recorded.
	drainWait = 500 * time.Millisecond
	// maxErrorFile bounds what is read of a torchelastic error file.
	maxErrorFile = 64 << 10
)

// Supervise runs the supervisor of the app whose state directory is appDir, as the
// hidden verb `wick __supervise APP_DIR` that Schedule starts: it starts the replicas,
// records their output, applies the retry policies, keeps state.json current, and
// returns when the app is terminal (nil) or when it cannot run the app. SIGTERM, or
// ctx being done, cancels the app; a second SIGTERM kills the replicas at once.
//
// Started with WICK_SUPERVISOR_REAPER set, the same verb runs the app's reaper
// instead: a small process that outlives a supervisor killed with SIGKILL and kills
// what the supervisor left (see reap).
func Supervise(ctx context.Context, appDir string) error {
	if os.Getenv(envReaper) != "" {
		return reap(appDir)
	}
	var ready *os.File
	if fd, err := strconv.Atoi(os.Getenv(envReadyFD)); err == nil && fd > 2 {
		// An inherited fd is not close-on-exec: without this every replica would hold
		// the launcher's ready pipe open, and `wick run --detach | cat` would wait for
		// the whole app.
		syscall.CloseOnExec(fd)
		os.Unsetenv(envReadyFD)
		ready = os.NewFile(uintptr(fd), "ready")
	}
	sv, err := newSupervisor(appDir)
	if err != nil {
		reportReady(ready, err)
		return err
	}
	return sv.run(ctx, ready)
}

// reportReady tells the launcher how the start went, and closes the channel.
func reportReady(ready *os.File, err error) {
	if ready == nil {
		return
	}
	msg := "ok\n"
	if err != nil {
		msg = "error: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
	}
	_, _ = ready.WriteString(msg)
	ready.Close()
}

type procPhase int

const (
	idle     procPhase = iota // no process
	starting                  // being forked
	running
)

type roleRun struct {
	req      *RoleRequest
	replicas []*replica
	restarts int
}

type replica struct {
	role *roleRun
	req  *ReplicaRequest
	st   *spec.ReplicaStatus // in the supervisor's state
	w    *logs.Writer

	attempt   int
	phase     procPhase
	pid       int
	stopping  bool      // the supervisor asked it to stop
	killAt    time.Time // when SIGKILL follows SIGTERM
	killed    bool
	errFile   os.FileInfo // the error file as it was before this attempt, or nil
	pumps     int         // output copies still running for this attempt
	readers   []*os.File  // their pipes, closed to force them to end
	drainAt   time.Time   // when the pipes are closed if still open
	endMarked bool
}

func (r *replica) name() string { return r.role.req.Name + "/" + strconv.Itoa(r.req.ID) }

type eventKind int

const (
	evStarted eventKind = iota
	evExited
	evPumped
)

type event struct {
	kind    eventKind
	r       *replica
	attempt int
	pid     int
	ws      unix.WaitStatus
	err     error
}

type supervisor struct {
	dir        string
	l          *launch
	req        *Request
	st         *state
	self       logs.Proc
	stop       time.Duration
	roles      []*roleRun
	all        []*replica
	kids       *children
	rec        *logs.Recorder
	events     chan event
	sigs       chan os.Signal
	sigchld    chan os.Signal
	timer      *time.Timer
	null       *os.File
	env        []string
	reaper     *os.File // pipe to the reaper process, or nil
	reaperR    *os.File // its read end until the reaper starts
	reaperProc int
	reaperAt   <-chan time.Time // when to start the reaper

	signals      int // SIGTERMs received
	inflight     int // forks not yet reported
	readyPending int // replicas whose first start is not reported yet
	appRestarts  int
	pending      map[*replica]bool // stopped or stopping, to restart together
	target       spec.AppState     // 0 while running; the final state once decided
	dirty        bool
}

func newSupervisor(appDir string) (*supervisor, error) {
	l, err := readLaunch(appDir)
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	st, err := readState(appDir)
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	self, err := logs.Self()
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	sv := &supervisor{
		dir:     appDir,
		l:       l,
		req:     l.Request,
		st:      st,
		self:    self,
		stop:    time.Duration(l.Request.StopTimeout * float64(time.Second)),
		kids:    newChildren(),
		rec:     logs.NewRecorder(),
		events:  make(chan event, 4*l.Request.replicas()+8),
		sigs:    make(chan os.Signal, 4),
		sigchld: make(chan os.Signal, 1),
		pending: map[*replica]bool{},
		env:     os.Environ(),
	}
	for i := range sv.req.Roles {
		rr := &roleRun{req: &sv.req.Roles[i]}
		if i >= len(st.Roles) || len(st.Roles[i].Replicas) != len(rr.req.Replicas) {
			return nil, errors.New("supervisor: state.json does not match the request")
		}
		for j := range rr.req.Replicas {
			r := &replica{role: rr, req: &rr.req.Replicas[j], st: &st.Roles[i].Replicas[j]}
			rr.replicas = append(rr.replicas, r)
			sv.all = append(sv.all, r)
		}
		sv.roles = append(sv.roles, rr)
	}
	return sv, nil
}

func (sv *supervisor) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s wick supervisor %s: %s\n", sched.Timestamp(time.Now()), sv.req.AppID, fmt.Sprintf(format, args...))
}

// setup takes the app over from the launcher: signals, subreaper, state, log files.
func (sv *supervisor) setup() error {
	signal.Notify(sv.sigs, unix.SIGTERM, unix.SIGINT)
	// No terminal to hang up: a stray SIGHUP must not end a day-long training run. It
	// is caught and dropped rather than ignored: an ignored signal stays ignored
	// across exec, and the replicas must keep the default. Catching it also undoes an
	// ignore inherited from the launcher (nohup).
	signal.Notify(make(chan os.Signal, 1), unix.SIGHUP)
	signal.Notify(sv.sigchld, unix.SIGCHLD)
	// Orphaned grandchildren (a replica's daemon) become our children, not init's, so
	// that they can be found and stopped when the app ends.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		sv.logf("cannot become a child subreaper: %v", err)
	}
	sv.st.Owner, sv.st.Supervisor = sv.self, sv.self
	sv.st.State = spec.Pending
	if err := sv.st.save(sv.dir); err != nil {
		return err
	}
	var err error
	if sv.null, err = devNull(); err != nil {
		return err
	}
	for _, r := range sv.all {
		if err := os.MkdirAll(r.req.LogDir, 0o755); err != nil {
			return fmt.Errorf("create log directory: %w", err)
		}
		if r.w, err = sv.rec.Create(r.req.LogDir); err != nil {
			return err
		}
	}
	sv.timer = time.NewTimer(time.Hour)
	sv.timer.Stop()
	sv.openReaper()
	sv.reaperAt = time.After(reaperDelay)
	return nil
}

func (sv *supervisor) run(ctx context.Context, ready *os.File) error {
	defer signal.Stop(sv.sigs)
	defer signal.Stop(sv.sigchld)
	if err := sv.setup(); err != nil {
		sv.closeWriters()
		sv.failStart(err)
		reportReady(ready, err)
		return err
	}
	if _, err := os.Stat(filepath.Join(sv.dir, cancelFile)); err == nil {
		// Cancelled before we could start anything.
		sv.target = spec.Cancelled
		sv.st.Msg = "cancelled"
		sv.finalize()
		reportReady(ready, nil)
		return nil
	}
	sv.readyPending = len(sv.all)
	for _, r := range sv.all {
		sv.start(r)
	}
	done := ctx.Done()
	for {
		select {
		case ev := <-sv.events:
			sv.handle(ev)
		case <-sv.sigchld:
			sv.kids.reap()
		case <-sv.sigs:
			// A second signal kills at once. ctx may be done because of the same
			// signal (the CLI's signal context): that is not a second request.
			sv.signals++
			sv.cancel(sv.signals > 1)
		case <-done:
			done = nil
			sv.cancel(false)
		case <-sv.timer.C:
			sv.onTimer()
		case <-sv.reaperAt:
			sv.reaperAt = nil
			sv.startReaper()
		}
		// Take everything already queued before deciding and writing the state, so
		// that 64 replicas exiting at once cost one write, not 64.
		for drained := false; !drained; {
			select {
			case ev := <-sv.events:
				sv.handle(ev)
			default:
				drained = true
			}
		}
		sv.step()
		if sv.readyPending == 0 && ready != nil {
			if sv.target == 0 {
				sv.st.State = spec.Running
			}
			sv.save()
			reportReady(ready, nil)
			ready = nil
		}
		if sv.finished() {
			break
		}
		if sv.dirty && ready == nil {
			sv.save()
		}
		sv.rearm()
	}
	sv.finalize()
	return nil
}

// failStart records an app that could not be started.
func (sv *supervisor) failStart(err error) {
	sv.st.State = spec.Failed
	sv.st.Msg = err.Error()
	sv.st.StructuredError = err.Error()
	sv.st.Ended = time.Now()
	for i := range sv.st.Roles {
		for j := range sv.st.Roles[i].Replicas {
			sv.st.Roles[i].Replicas[j].State = spec.Cancelled
		}
	}
	if serr := sv.st.save(sv.dir); serr != nil {
		sv.logf("%v", serr)
	}
	sv.quitReaper()
}

func (sv *supervisor) save() {
	if err := sv.st.save(sv.dir); err != nil {
		sv.logf("%v", err)
	}
	sv.dirty = false
}

// start forks a replica's current attempt, with fresh pipes for its output.
func (sv *supervisor) start(r *replica) {
	r.phase, r.stopping, r.killed = starting, false, false
	r.killAt, r.drainAt = time.Time{}, time.Time{}
	r.errFile = nil
	if p := r.req.Env[envErrorFile]; p != "" {
		r.errFile, _ = os.Stat(p)
	}
	sv.inflight++
	a := r.attempt
	outR, outW, err1 := os.Pipe()
	errR, errW, err2 := os.Pipe()
	if err := errors.Join(err1, err2); err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			if f != nil {
				f.Close()
			}
		}
		sv.events <- event{kind: evStarted, r: r, attempt: a, err: fmt.Errorf("pipe: %w", err)}
		return
	}
	r.readers, r.pumps = []*os.File{outR, errR}, 2
	sv.pump(r, a, sched.Stdout, outR)
	sv.pump(r, a, sched.Stderr, errR)
	env := mergeEnv(sv.env, r.req.Env)
	argv0, lookErr := lookPath(r.req.Argv[0], r.req.Env["PATH"], r.req.Cwd)
	attr := &syscall.ProcAttr{
		Dir:   r.req.Cwd,
		Env:   env,
		Files: []uintptr{sv.null.Fd(), outW.Fd(), errW.Fd()},
		Sys: &syscall.SysProcAttr{
			Setpgid:   true, // its own process group, stopped as a whole
			Pdeathsig: syscall.SIGKILL,
		},
	}
	startThread(func() {
		pid, exited, err := 0, (<-chan unix.WaitStatus)(nil), lookErr
		if err == nil {
			pid, exited, err = sv.kids.fork(argv0, r.req.Argv, attr)
			if err != nil {
				err = &execError{file: argv0, err: err}
			}
		}
		// The child has its copies; ours must go so that the pipes end with it.
		outW.Close()
		errW.Close()
		sv.events <- event{kind: evStarted, r: r, attempt: a, pid: pid, err: err}
		if err != nil {
			return
		}
		sv.events <- event{kind: evExited, r: r, attempt: a, ws: <-exited}
	})
}

// pump copies one output stream of an attempt into the replica's logs.
func (sv *supervisor) pump(r *replica, attempt int, s sched.Stream, rd *os.File) {
	go func() {
		err := r.w.Copy(s, attempt, rd)
		rd.Close()
		sv.events <- event{kind: evPumped, r: r, attempt: attempt, err: err}
	}()
}

func (sv *supervisor) handle(ev event) {
	r := ev.r
	now := time.Now()
	sv.dirty = true
	switch ev.kind {
	case evPumped:
		r.pumps--
		if ev.err != nil {
			sv.logf("%s: %v", r.name(), ev.err)
		}
	case evStarted:
		sv.inflight--
		if ev.attempt == 0 {
			sv.readyPending--
		}
		r.st.Started, r.st.Ended, r.st.ExitCode, r.st.StructuredError = now, time.Time{}, nil, ""
		r.st.Restarts = r.attempt
		if ev.err != nil {
			var ee *execError
			code := 126
			if errors.As(ev.err, &ee) {
				code = ee.code()
			}
			r.phase = idle
			r.pid, r.st.PID = 0, 0
			r.st.ExitCode = spec.IntPtr(code)
			r.st.Ended = now
			r.st.State = spec.Failed
			r.st.StructuredError = ev.err.Error()
			r.drainAt = now.Add(drainWait)
			sv.exited(r, code)
			return
		}
		r.phase, r.pid, r.st.PID = running, ev.pid, ev.pid
		r.st.State = spec.Running
		sv.tellReaper('+', ev.pid)
		if sv.target != 0 || sv.pending[r] {
			sv.stopReplica(r) // asked to stop while it was being forked
		}
	case evExited:
		code := exitCode(ev.ws)
		// Whatever the leader left in its group goes with it, as in a container.
		killGroup(r.pid, unix.SIGKILL)
		sv.tellReaper('-', r.pid)
		r.phase = idle
		r.st.ExitCode = spec.IntPtr(code)
		r.st.Ended = now
		r.drainAt = now.Add(drainWait)
		switch {
		case code == 0:
			r.st.State = spec.Succeeded
		case r.stopping:
			r.st.State = spec.Cancelled
		default:
			r.st.State = spec.Failed
			r.st.StructuredError = sv.errorFile(r)
		}
		sv.exited(r, code)
	}
}

// exited applies what follows a replica's end: a restart it was stopped for, or the
// retry policy when it failed on its own.
func (sv *supervisor) exited(r *replica, code int) {
	stopped := r.stopping
	r.stopping = false
	if sv.pending[r] {
		r.st.State = spec.Pending
		return
	}
	if code == 0 || stopped || sv.target != 0 {
		return
	}
	role := r.role
	switch role.req.RetryPolicy {
	case spec.RetryReplica:
		if r.attempt < role.req.MaxRetries {
			sv.restart(r)
			return
		}
	case spec.RetryRole:
		if role.restarts < role.req.MaxRetries {
			role.restarts++
			sv.restart(role.replicas...)
			return
		}
	default: // APPLICATION
		if sv.appRestarts < role.req.MaxRetries {
			sv.appRestarts++
			sv.restart(sv.all...)
			return
		}
	}
	sv.fail(r, code)
}

// errorFile reads the torchelastic error file a failed replica wrote during this
// attempt, or returns "". A file unchanged since the attempt started is an older one.
func (sv *supervisor) errorFile(r *replica) string {
	path := r.req.Env[envErrorFile]
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || r.errFile != nil && os.SameFile(st, r.errFile) && st.ModTime().Equal(r.errFile.ModTime()) && st.Size() == r.errFile.Size() {
		return "" // left by an earlier attempt or run
	}
	b, _ := io.ReadAll(io.LimitReader(f, maxErrorFile))
	return strings.TrimSpace(string(b))
}

// restart stops the replicas of set that run and restarts all of them together once
// every one has stopped.
func (sv *supervisor) restart(set ...*replica) {
	sv.st.NumRestarts++
	for _, r := range set {
		sv.pending[r] = true
		switch r.phase {
		case running:
			sv.stopReplica(r)
		case idle:
			r.st.State = spec.Pending
		}
	}
}

// fail ends the app as FAILED because r failed with no retries left: the others are
// stopped (fail fast).
func (sv *supervisor) fail(r *replica, code int) {
	sv.target = spec.Failed
	sv.st.Msg = fmt.Sprintf("%s failed with exit code %d", r.name(), code)
	if msg := spec.ErrorMessage(r.st.StructuredError); msg != "" {
		sv.st.Msg += ": " + firstLine(msg)
	}
	sv.st.StructuredError = r.st.StructuredError
	if sv.st.StructuredError == "" {
		sv.st.StructuredError = sv.st.Msg
	}
	sv.stopAll()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// cancel ends the app as CANCELLED (unless it is already ending); now kills the
// replicas at once rather than after the stop timeout.
func (sv *supervisor) cancel(now bool) {
	if now {
		for _, r := range sv.all {
			if r.phase == running && !r.killed {
				killGroup(r.pid, unix.SIGKILL)
				r.killed = true
			}
		}
	}
	if sv.target != 0 {
		return
	}
	sv.target = spec.Cancelled
	sv.st.Msg = "cancelled"
	sv.dirty = true
	sv.stopAll()
}

func (sv *supervisor) stopAll() {
	clear(sv.pending)
	for _, r := range sv.all {
		if r.phase == running {
			sv.stopReplica(r)
		}
	}
}

// stopReplica sends SIGTERM to the replica's process group; SIGKILL follows after
// the stop timeout.
func (sv *supervisor) stopReplica(r *replica) {
	if r.stopping {
		return
	}
	r.stopping = true
	if sv.stop <= 0 {
		killGroup(r.pid, unix.SIGKILL)
		r.killed = true
		return
	}
	killGroup(r.pid, unix.SIGTERM)
	r.killAt = time.Now().Add(sv.stop)
}

// onTimer kills replicas past their stop timeout and closes pipes past their drain
// time.
func (sv *supervisor) onTimer() {
	now := time.Now()
	for _, r := range sv.all {
		if r.phase == running && r.stopping && !r.killed && !now.Before(r.killAt) {
			killGroup(r.pid, unix.SIGKILL)
			r.killed = true
		}
		if r.phase == idle && r.pumps > 0 && !r.drainAt.IsZero() && !now.Before(r.drainAt) {
			sv.closeReaders(r)
		}
	}
}

func (sv *supervisor) closeReaders(r *replica) {
	for _, f := range r.readers {
		f.Close() // makes Copy return; closing twice is harmless
	}
}

// rearm sets the timer to the next kill or drain deadline.
func (sv *supervisor) rearm() {
	var next time.Time
	for _, r := range sv.all {
		for _, t := range []time.Time{r.killAt, r.drainAt} {
			if t.IsZero() {
				continue
			}
			if t == r.killAt && (r.phase != running || r.killed) {
				continue
			}
			if t == r.drainAt && (r.phase != idle || r.pumps == 0) {
				continue
			}
			if next.IsZero() || t.Before(next) {
				next = t
			}
		}
	}
	sv.timer.Stop()
	if !next.IsZero() {
		sv.timer.Reset(max(time.Until(next), 0))
	}
}

// step restarts replicas whose restart is due, decides success, and ends the logs of
// replicas that can no longer run.
func (sv *supervisor) step() {
	if sv.target == 0 && len(sv.pending) > 0 {
		due := true
		for r := range sv.pending {
			// A new attempt must not write while the last one's output is still
			// being copied into the same files.
			if r.phase != idle || r.pumps > 0 {
				due = false
			}
		}
		if due {
			for _, r := range sv.all { // in order, for reproducible pids and logs
				if sv.pending[r] {
					delete(sv.pending, r)
					sv.nextAttempt(r)
					sv.start(r)
				}
			}
		}
	}
	if sv.target == 0 && len(sv.pending) == 0 {
		all := true
		for _, r := range sv.all {
			if r.phase != idle || r.st.State != spec.Succeeded {
				all = false
				break
			}
		}
		if all {
			sv.target = spec.Succeeded
		}
	}
	if sv.target != 0 {
		return
	}
	for _, r := range sv.all {
		if !r.endMarked && r.phase == idle && r.pumps == 0 && r.st.State.Terminal() && !sv.pending[r] && !sv.canRestart(r) {
			if err := r.w.End(); err != nil {
				sv.logf("%s: %v", r.name(), err)
			}
			r.endMarked = true
		}
	}
}

// nextAttempt records r's ended run in its status's attempts and readies the status
// for the next run. Every restart goes through here, whatever the policy (REPLICA,
// ROLE, APPLICATION) and whether r failed, succeeded or was stopped for the restart:
// the previous run's exit code then survives the restart in state.json, rather than
// being seen only by a reader that happens to look between the end and the restart.
func (sv *supervisor) nextAttempt(r *replica) {
	r.st.AddAttempt(spec.Attempt{
		Attempt:  r.attempt,
		ExitCode: r.st.ExitCode,
		Started:  r.st.Started,
		Ended:    r.st.Ended,
		Error:    r.st.StructuredError,
	})
	r.attempt++
	// The attempt's own fields are the next run's from now on; evStarted fills them.
	r.st.Restarts = r.attempt
	r.st.ExitCode, r.st.Started, r.st.Ended, r.st.StructuredError = nil, time.Time{}, time.Time{}, ""
	sv.dirty = true
}

// canRestart reports whether a finished replica may still be restarted because
// another one fails: its role has ROLE retries left, or a role with the APPLICATION
// policy has retries left.
func (sv *supervisor) canRestart(r *replica) bool {
	if r.role.req.RetryPolicy == spec.RetryRole && r.role.restarts < r.role.req.MaxRetries {
		return true
	}
	for _, role := range sv.roles {
		p := role.req.RetryPolicy
		if (p == spec.RetryApplication || p == "") && sv.appRestarts < role.req.MaxRetries {
			return true
		}
	}
	return false
}

func (sv *supervisor) finished() bool {
	if sv.target == 0 || sv.inflight > 0 {
		return false
	}
	for _, r := range sv.all {
		if r.phase != idle {
			return false
		}
	}
	return true
}

// finalize ends the app: it waits for the output to be recorded, stops what replicas
// left behind, writes the final state, then ends every log (so that a follower that
// sees the end finds the final state), and dismisses the reaper.
func (sv *supervisor) finalize() {
	sv.killOrphans()
	drain := time.NewTimer(drainWait)
	defer drain.Stop()
	timeout := drain.C
	for sv.pumpsRunning() {
		select {
		case ev := <-sv.events:
			sv.handle(ev)
		case <-sv.sigchld:
			sv.kids.reap()
		case <-timeout:
			// Only processes that escaped every kill hold the pipes: stop recording.
			for _, r := range sv.all {
				sv.closeReaders(r)
			}
			timeout = nil
		}
	}
	now := time.Now()
	for _, r := range sv.all {
		if !r.st.State.Terminal() {
			r.st.State = spec.Cancelled
		}
	}
	sv.st.State = sv.target
	sv.st.Ended = now
	// Everything in the directories is written before the terminal state: whoever
	// waits for it (and then reads or deletes the app) finds the app complete.
	sv.writeSuccess()
	sv.save()
	for _, r := range sv.all {
		if !r.endMarked {
			if err := r.w.End(); err != nil {
				sv.logf("%s: %v", r.name(), err)
			}
		}
	}
	sv.closeWriters()
	sv.quitReaper()
}

func (sv *supervisor) pumpsRunning() bool {
	for _, r := range sv.all {
		if r.pumps > 0 {
			return true
		}
	}
	return false
}

func (sv *supervisor) closeWriters() {
	for _, r := range sv.all {
		if r.w != nil {
			if err := r.w.Close(); err != nil {
				sv.logf("%s: %v", r.name(), err)
			}
		}
	}
}

// killOrphans kills the processes that left their replica's process group and whose
// parent died: as a subreaper, the supervisor adopted them.
func (sv *supervisor) killOrphans() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	own := unix.Getpgrp()
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid == sv.reaperPID() {
				continue
			}
			if pg, err := unix.Getpgid(pid); err == nil && pg != own {
				killGroup(pg, unix.SIGKILL)
			}
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	sv.kids.reap()
}

// writeSuccess writes TorchX's SUCCESS summary in the app's log directory.
func (sv *supervisor) writeSuccess() {
	type rep struct {
		ReplicaID int    `json:"replica_id"`
		PID       int    `json:"pid"`
		ExitCode  *int   `json:"exitcode"`
		Stdout    string `json:"stdout"`
		Stderr    string `json:"stderr"`
		ErrorFile string `json:"error_file"`
	}
	roles := map[string][]rep{}
	for _, r := range sv.all {
		roles[r.role.req.Name] = append(roles[r.role.req.Name], rep{
			ReplicaID: r.req.ID, PID: r.st.PID, ExitCode: r.st.ExitCode,
			Stdout: r.req.Stdout, Stderr: r.req.Stderr, ErrorFile: r.req.Env[envErrorFile],
		})
	}
	doc := map[string]any{
		"app_id":       sv.req.AppID,
		"log_dir":      sv.req.LogDir,
		"final_state":  sv.st.State.String(),
		"last_updated": time.Now().Unix(),
		"roles":        roles,
	}
	if err := writeJSONAtomic(sv.req.LogDir, successFile, doc); err != nil {
		sv.logf("write %s: %v", successFile, err)
	}
}
