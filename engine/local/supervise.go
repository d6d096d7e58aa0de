package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Env vars between the launcher, the supervisor and its reaper. Replicas never see
// them.
const (
	// envReadyFD names the fd on which the supervisor reports "ok" or "error: ..."
	// once the replicas are started. After "ok" it stays open as the launcher's bell
	// (logs.Bell), rung after each write to the logs and closed once they are ended.
	envReadyFD = "WICK_SUPERVISOR_READY_FD"
	// envGoFD names the fd on which the supervisor, started while its launcher still
	// writes the app's first state, waits for a byte before it reads anything: the end
	// of the pipe without one is a launch that failed first, and the supervisor exits
	// having touched nothing (the launcher removes what it made).
	envGoFD = "WICK_SUPERVISOR_GO_FD"
	// envReaper makes `wick __supervise DIR` run as the app's reaper (see reap).
	envReaper = "WICK_SUPERVISOR_REAPER"
)

const (
	// drainWait is how long after a replica's end the supervisor looks at who still
	// holds its output pipes. A pipe whose writers are all gone is read to its end,
	// however long that takes (a slow disk): its data is finite. A pipe still held
	// open then can only be held by a process that left the replica's process group
	// (setsid) and escaped every kill: that pipe is closed, its further output is not
	// recorded, and the app's status says so.
	drainWait = 500 * time.Millisecond
	// maxErrorFile bounds what is read of a torchelastic error file.
	maxErrorFile = 64 << 10
)

// Test hooks, to widen timing windows of the real code. Only the test binary's
// TestMain sets them, before it runs a supervisor; they are zero in wick.
var (
	// testWriteDelay stands in for a slow disk (logs.Recorder.SetWriteDelay).
	testWriteDelay time.Duration
	// testHandoverDelay is slept between the supervisor's taking over the app and
	// its looking for a cancel or a delete.
	testHandoverDelay time.Duration
	// testTakeoverDelay is slept before the supervisor takes the app over.
	testTakeoverDelay time.Duration
)

// errDeleted is the supervisor's answer when the app was deleted before it could
// start it.
var errDeleted = errors.New("the app was deleted before it started")

// errJudged is the setup of a supervisor whose app a reader judged dead (its launcher
// gone) before the supervisor took it over: the verdict stands, nothing is started.
var errJudged = errors.New("the app's launch was judged dead before its supervisor took it over")

// Supervise runs the supervisor of the app whose state directory is appDir, as the
// hidden verb `wick __supervise APP_DIR` that Schedule starts: it starts the replicas,
// records their output, applies the retry policies, keeps state.json current, and
// returns when the app is terminal (nil) or when it cannot run the app. SIGTERM or
// SIGINT, or ctx being done, cancels the app: the replicas get the stop timeout to end,
// however many times the request comes (a retried cancel, or a cancel then a delete,
// must not cost a checkpoint). Only killSignal (Scheduler.Kill) kills them at once.
//
// Started with WICK_SUPERVISOR_REAPER set, the same verb runs the app's reaper
// instead: a small process that outlives a supervisor killed with SIGKILL and kills
// what the supervisor left (see reap).
func Supervise(ctx context.Context, appDir string) error {
	return supervise(ctx, appDir, nil)
}

// supervise is Supervise with a test hook called between the launcher's mkdir and the
// supervisor's open of each replica's log directory.
func supervise(ctx context.Context, appDir string, beforeLogs func(dir string)) error {
	if os.Getenv(envReaper) != "" {
		return reap(appDir)
	}
	if fd, err := strconv.Atoi(os.Getenv(envGoFD)); err == nil && fd > 2 {
		syscall.CloseOnExec(fd) // as the ready pipe's, below
		os.Unsetenv(envGoFD)
		g := os.NewFile(uintptr(fd), "go")
		var b [1]byte
		n, _ := g.Read(b[:])
		g.Close()
		if n == 0 {
			return nil
		}
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
	sv.beforeLogs = beforeLogs
	return sv.run(ctx, ready)
}

// ringLauncher reports the start to the launcher, and keeps the pipe as its bell: a
// launcher that follows the logs (an attached wick run) is woken by it rather than
// by inotify. A launcher that went away makes the first ring close it.
//
// The launcher reports the app started: every state saved so far (the takeover, the
// replicas' starts) is durable first. That wait is a goroutine's, not the main
// loop's: a replica that ends meanwhile (utils.echo) is reaped and its app's end
// begun, the end's fsyncs (logs, SUCCESS, the final state's file) beside the
// directory's that the report waits for, sharing its journal commit, not after it.
// No state is put in place before the report is written (awaitRing): whatever the
// launcher is told follows every save before it being durable, as before.
func (sv *supervisor) ringLauncher(ready *os.File) {
	rang := make(chan struct{})
	sv.rang = rang
	// The logs ring it from now on; it holds their rings until the report is
	// written, then rings once for them (logs.NewReportBell).
	sv.bell = logs.NewReportBell(ready)
	sv.rec.SetBell(sv.bell)
	go func() {
		defer close(rang)
		if err := sv.dirSync.Flush(); err != nil {
			sv.logf("save app state: %v", err)
		}
		_ = sv.bell.Report("ok\n") // a launcher gone: the bell rings nothing
	}()
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
	// lingering: the leader of a replica being stopped is gone, but the rest of its
	// process group still runs (torchrun's workers saving a checkpoint after their
	// agent exited on SIGTERM). The group keeps the stop timeout; SIGKILL comes only
	// when it ends.
	lingering
)

// lingerPoll is how often the supervisor looks whether a lingering group has ended:
// its members need not be the supervisor's children, so no SIGCHLD tells.
const lingerPoll = 20 * time.Millisecond

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

	attempt     int
	phase       procPhase
	pid         int
	stopping    bool      // the supervisor asked it to stop
	killAt      time.Time // when SIGKILL follows SIGTERM
	killed      bool
	errFile     os.FileInfo // the error file as it was before this attempt, or nil
	pumps       int         // output copies still running for this attempt
	readers     []*os.File  // their pipes, closed to force them to end
	pipeIDs     []int       // the reaper's ids of readers (holdPipe), 0 for none
	drainAt     time.Time   // when the pipes are checked for escaped writers
	escaped     bool        // a pipe was closed while an escaped process held it
	groupKilled bool        // its group got SIGKILL while its exited leader was a zombie
	forkAt      time.Time   // when this attempt was started
	endMarked   bool
	workers     *workerWatch // a torchrun node's workers (workers.go), or nil
	sig         int          // the signal that killed this attempt's leader, 0 for none
	oom         bool         // the kernel's OOM killer killed a process of the app meanwhile
	oomKills    int          // the app cgroup's OOM kills when this attempt started
	execErr     string       // why this attempt's program could not be started, "" if it was
	// nodeFailed is set when this attempt, a torchrun node, failed while its agent
	// still ran (nodefail.go); agentFailures counts its agent's failed rounds.
	nodeFailed    bool
	agentFailures atomic.Int32
	// rdzvPort is the port on which the node tries to host its c10d rendezvous store
	// here, 0 for none. unbound is 1 + the attempt whose stderr said it could not
	// bind it, held who listened on it then (a portHolder), written by its tap
	// (rdzvheld.go); leader is pid, for the tap.
	rdzvPort int
	unbound  atomic.Int32
	held     atomic.Int32
	leader   atomic.Int32
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
	pipe    int // evPumped: the reaper's id of the pipe read
}

type supervisor struct {
	dir     string
	l       *launch
	req     *Request
	st      *state
	self    logs.Proc
	stop    time.Duration
	roles   []*roleRun
	all     []*replica
	kids    *children
	spawner *spawner // forks the replicas; nil: each from a thread of its own
	rec     *logs.Recorder
	bell    *logs.Bell    // the launcher's, once the start is reported; nil before
	rang    chan struct{} // closed once ringLauncher's report is written; nil if none is pending
	events  chan event
	sigs    chan os.Signal
	sigchld chan os.Signal
	timer   *time.Timer
	null    *os.File
	env     []string
	cg      *cgroup // the app's cgroup, or nil where the machine has none for it
	// dirSync saves the running app's state and fsyncs its directory in the
	// background; taken is the number of the takeover's save.
	dirSync    *safefs.DirSyncer
	taken      uint64
	reserved   bool          // the space for the final state is reserved (reserve.go)
	reaper     *reaperLink   // the socket to the reaper process, or nil
	learned    chan struct{} // a workerWatch learned a group rank (workers.go)
	reaperR    *os.File      // its read end until the reaper starts
	reaperProc int
	pipeSeq    int              // the last id given to a pipe the reaper holds
	reaperAt   <-chan time.Time // when to start the reaper

	inflight     int // forks not yet reported
	readyPending int // replicas whose first start is not reported yet
	appRestarts  int
	pending      map[*replica]bool // stopped or stopping, to restart together
	target       spec.AppState     // 0 while running; the final state once decided
	dirty        bool
	beforeLogs   func(dir string) // test hook, see supervise

	// unsaved is the open file where an end that cannot be written is recorded, of
	// unsavedSize bytes (reserve.go); nil when it could not be made.
	unsaved     *os.File
	unsavedSize int

	// A rendezvous port no node could bind (rdzvheld.go): rdzvWake is rung when a
	// node said so, rdzvCheck is set when checkRendezvousHeld is due (a node said so,
	// or started), heldPort is the cause of an app failed for it (of role heldRole).
	rdzvWake  chan struct{}
	rdzvCheck bool
	heldPort  *ranks.Cause
	heldRole  string
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
		dirSync: safefs.NewDirSyncer(appDir),
		l:       l,
		req:     l.Request,
		st:      st,
		self:    self,
		stop:    time.Duration(l.Request.StopTimeout * float64(time.Second)),
		kids:    newChildren(),
		rec:     logs.NewRecorder(),
		events:  make(chan event, 4*l.Request.replicas()+8),
		learned: make(chan struct{}, 1),
		sigs:    make(chan os.Signal, 4),
		sigchld: make(chan os.Signal, 1),
		pending: map[*replica]bool{},
		env:     os.Environ(),
	}
	sv.rdzvWake = make(chan struct{}, 1)
	sv.rec.SetWriteDelay(testWriteDelay)
	sv.kids.beforeReap = sv.leaderExited
	for i := range sv.req.Roles {
		rr := &roleRun{req: &sv.req.Roles[i]}
		if i >= len(st.Roles) || len(st.Roles[i].Replicas) != len(rr.req.Replicas) {
			return nil, errors.New("supervisor: state.json does not match the request")
		}
		for j := range rr.req.Replicas {
			r := &replica{role: rr, req: &rr.req.Replicas[j], st: &st.Roles[i].Replicas[j]}
			r.rdzvPort = rendezvousPortHere(r.req)
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
	signal.Notify(sv.sigs, unix.SIGTERM, unix.SIGINT, killSignal)
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
	// Its thread starts beside the takeover's save, and copies the supervisor's file
	// table before the log files are made.
	var err error
	if sv.spawner, err = newSpawner(sv.kids); err != nil {
		sv.logf("replicas forked each from a thread of its own (%v)", err)
	}
	if testTakeoverDelay > 0 {
		time.Sleep(testTakeoverDelay)
	}
	// Under the app's lock: a reader that judged the launch dead has saved its verdict
	// before (and then the app is not taken over), or saves none after (saveVerdict).
	unlock, err := lockApp(sv.dir)
	if err != nil {
		return err
	}
	if now, err := readState(sv.dir); err == nil && now.State.Terminal() {
		unlock()
		return errJudged
	}
	sv.st.Owner, sv.st.Supervisor = sv.self, sv.self
	sv.st.State = spec.Pending
	sv.taken, err = sv.st.saveRunning(sv.dirSync)
	unlock()
	if err != nil {
		return err
	}
	if testHandoverDelay > 0 {
		time.Sleep(testHandoverDelay)
	}
	// From the save on, a cancel or delete finds this supervisor and signals it or
	// waits for it. One that read the state before the save may have written its
	// cancel request, removed the logs and the app's directory since: look now,
	// before anything is created, so that a deleted app never starts and nothing of
	// it is recreated.
	if _, err := os.Stat(filepath.Join(sv.dir, launchFile)); err != nil {
		return errDeleted
	}
	if sv.null, err = devNull(); err != nil {
		return err
	}
	sv.makeUnsaved()
	sv.makeReserve()
	if sv.cg, err = newCgroup(sv.req.AppID); err != nil {
		sv.logf("no cgroup for the app (%v): processes that leave their replica's process group are found through the subreaper only", err)
	} else {
		sv.st.Cgroup = sv.cg.dir
		sv.kids.cgroup = filepath.Base(sv.cg.dir)
	}
	for _, r := range sv.all {
		// The launcher made the directory; the writer opens it and its files
		// following no symbolic link, and one that is gone (deleted with the app)
		// is not recreated.
		if sv.beforeLogs != nil {
			sv.beforeLogs(r.req.LogDir)
		}
		if r.w, err = sv.rec.Create(r.req.LogDir); err != nil {
			return err
		}
	}
	sv.timer = time.NewTimer(time.Hour)
	sv.timer.Stop()
	sv.openReaper()
	if sv.cg != nil {
		sv.tellReaperLine("c" + sv.cg.dir)
	}
	return nil
}

func (sv *supervisor) run(ctx context.Context, ready *os.File) error {
	defer signal.Stop(sv.sigs)
	defer signal.Stop(sv.sigchld)
	if err := sv.setup(); err != nil {
		sv.closeWriters()
		if sv.cg != nil {
			sv.cg.remove()
		}
		sv.dropReserve()
		if errors.Is(err, errDeleted) || errors.Is(err, errJudged) {
			sv.quitReaper()
		} else {
			sv.failStart(err)
		}
		sv.dropUnsaved()
		reportReady(ready, err)
		return err
	}
	_, cancelErr := os.Stat(filepath.Join(sv.dir, cancelFile))
	select {
	case <-sv.sigs:
		// A cancel (or kill) that came after the takeover, before anything started.
		cancelErr = nil
	default:
	}
	if cancelErr == nil {
		// Cancelled before we could start anything.
		sv.target = spec.Cancelled
		sv.st.Msg = "cancelled"
		sv.finalize()
		reportReady(ready, nil)
		return nil
	}
	// A delete that read the state before the takeover does not wait for this
	// supervisor: it writes its cancel request and removes the directory. Removed
	// after the look in setup, the request is gone with it: a directory without its
	// launch.json is a deleted app, which never starts.
	if _, err := os.Stat(filepath.Join(sv.dir, launchFile)); err != nil {
		sv.closeWriters()
		if sv.cg != nil {
			sv.cg.remove()
		}
		sv.dropReserve()
		sv.quitReaper()
		sv.dropUnsaved()
		reportReady(ready, errDeleted)
		return errDeleted
	}
	if err := sv.checkRendezvousPorts(); err != nil {
		// The app fails before anything starts, and says why (rdzvport.go).
		sv.target = spec.Failed
		sv.st.Msg, sv.st.StructuredError = err.Error(), err.Error()
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
			sv.checkLingering()
		case sig := <-sv.sigs:
			sv.cancel(sig == killSignal)
		case <-done:
			done = nil
			sv.cancel(false)
		case <-sv.timer.C:
			sv.onTimer()
		case <-sv.reaperAt:
			sv.reaperDue()
		case <-sv.learned:
			sv.learnRanks()
		case <-sv.rdzvWake:
			sv.rdzvCheck = true
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
		if sv.rdzvCheck {
			sv.rdzvCheck = false
			sv.checkRendezvousHeld()
		}
		sv.step()
		if sv.readyPending == 0 && ready != nil {
			if sv.target == 0 {
				sv.st.State = spec.Running
			}
			sv.save()
			sv.ringLauncher(ready)
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
		sv.recordUnsaved(serr)
	}
	sv.quitReaper()
}

// awaitRing waits until ringLauncher's report, if one is pending, is written: the
// state is saved, and sv.bell read, only after it.
func (sv *supervisor) awaitRing() {
	if sv.rang != nil {
		<-sv.rang
		sv.rang = nil
	}
}

func (sv *supervisor) save() {
	sv.awaitRing()
	if _, err := sv.st.saveRunning(sv.dirSync); err != nil {
		sv.logf("%v", err)
	}
	sv.dirty = false
}

// start forks a replica's current attempt, with fresh pipes for its output.
func (sv *supervisor) start(r *replica) {
	r.phase, r.stopping, r.killed, r.groupKilled = starting, false, false, false
	r.sig, r.oom, r.oomKills, r.nodeFailed = 0, false, sv.cg.oomKills(), false
	r.forkAt = time.Now()
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
	r.pipeIDs = []int{sv.holdPipe(r.req.LogDir, sched.Stdout, outR), sv.holdPipe(r.req.LogDir, sched.Stderr, errR)}
	sv.tapStderr(r, a)
	sv.pump(r, a, sched.Stdout, outR, r.pipeIDs[0])
	sv.pump(r, a, sched.Stderr, errR, r.pipeIDs[1])
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
	if sv.cg != nil {
		// Straight into the app's cgroup (clone3): nothing it starts can leave
		// before it is in.
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, sv.cg.fd
	}
	reported := func(pid int, exited <-chan unix.WaitStatus, err error) {
		sv.events <- event{kind: evStarted, r: r, attempt: a, pid: pid, err: err}
		if err == nil {
			sv.events <- event{kind: evExited, r: r, attempt: a, ws: <-exited}
		}
	}
	if sv.spawner != nil && !sv.spawner.usable() {
		sv.logf("replicas forked each from a thread of its own (%v)", sv.spawner.err)
		sv.spawner = nil
	}
	if sv.spawner != nil && lookErr == nil {
		done := sv.spawner.start(argv0, r.req.Argv, attr)
		// The spawner has its copies; ours must go so that the pipes end with it.
		outW.Close()
		errW.Close()
		go func() {
			res := <-done
			reported(res.pid, res.exited, res.err)
		}()
		return
	}
	startThread(func() {
		pid, exited, err := 0, (<-chan unix.WaitStatus)(nil), lookErr
		if err == nil {
			pid, exited, err = forkReplica(sv.kids, argv0, r.req.Argv, attr)
		}
		// The child has its copies; ours must go so that the pipes end with it.
		outW.Close()
		errW.Close()
		reported(pid, exited, err)
	})
}

// forkReplica forks a replica, again outside the app's cgroup where clone3 into it is
// refused (an old kernel, a cgroup that turned unusable): the replica still runs, in
// the supervisor's cgroup. A failure is the replica's execError.
func forkReplica(kids *children, argv0 string, argv []string, attr *syscall.ProcAttr) (int, <-chan unix.WaitStatus, error) {
	pid, exited, err := kids.fork(argv0, argv, attr)
	if err != nil && attr.Sys != nil && attr.Sys.UseCgroupFD {
		noCg := *attr.Sys
		noCg.UseCgroupFD = false
		a := *attr
		a.Sys = &noCg
		pid, exited, err = kids.fork(argv0, argv, &a)
	}
	if err != nil {
		return 0, nil, &execError{file: argv0, err: err}
	}
	return pid, exited, nil
}

// pump copies one output stream of an attempt into the replica's logs.
// pipe is the reaper's id of the pipe, released once it is read to its end.
func (sv *supervisor) pump(r *replica, attempt int, s sched.Stream, rd *os.File, pipe int) {
	go func() {
		err := r.w.Copy(s, attempt, rd)
		rd.Close()
		sv.events <- event{kind: evPumped, r: r, attempt: attempt, err: err, pipe: pipe}
	}()
}

func (sv *supervisor) handle(ev event) {
	r := ev.r
	now := time.Now()
	// A pipe read to its end changes nothing in the state (a write error does, through
	// noteWarnings): a replica's pipes end as it exits, before its exit is reaped, and
	// saving then cost an attached run a state write (and its fsync) more.
	sv.dirty = sv.dirty || ev.kind != evPumped
	switch ev.kind {
	case evPumped:
		r.pumps--
		sv.releasePipe(ev.pipe)
		if ev.err != nil {
			sv.logf("%s: %v", r.name(), ev.err)
			sv.noteWarnings()
		}
	case evStarted:
		sv.inflight--
		if ev.attempt == 0 {
			sv.readyPending--
		}
		r.st.Started, r.st.Ended, r.st.ExitCode, r.st.StructuredError = now, time.Time{}, nil, ""
		r.st.Restarts, r.execErr = r.attempt, ""
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
			r.execErr = r.st.StructuredError
			r.drainAt = now.Add(drainWait)
			sv.exited(r, code)
			return
		}
		r.phase, r.pid, r.st.PID = running, ev.pid, ev.pid
		r.leader.Store(int32(ev.pid))
		r.st.State = spec.Running
		sv.tellReaper('+', ev.pid)
		sv.armReaper()
		sv.watchWorkers(r)
		// Its bind failure may have come before its start was handled.
		sv.rdzvCheck = sv.rdzvCheck || r.rdzvPort != 0
		if sv.target != 0 || sv.pending[r] {
			sv.stopReplica(r) // asked to stop while it was being forked
		}
	case evExited:
		code := exitCode(ev.ws)
		if ev.ws.Signaled() {
			r.sig = int(ev.ws.Signal())
			r.oom = r.sig == int(unix.SIGKILL) && sv.cg.oomKills() > r.oomKills
		}
		r.st.ExitCode = spec.IntPtr(code)
		r.st.Ended = now
		if r.stopping && !r.killed && groupAlive(r.pid) {
			// Being stopped: the rest of the group gets the rest of the grace.
			r.phase = lingering
		} else {
			// Whatever the leader left in its group goes with it, as in a container.
			// Mostly done already, by leaderExited while the leader was a zombie; a
			// leader reaped elsewhere (its status collected by a wait of the whole
			// group) is caught here.
			if !r.groupKilled {
				killGroup(r.pid, unix.SIGKILL)
			}
			sv.groupGone(r, now)
		}
		switch {
		case r.nodeFailed:
			// Its workers failed before it was stopped (nodefail.go).
			r.st.State = spec.Failed
			r.st.StructuredError = sv.errorFile(r)
		case code == 0:
			r.st.State = spec.Succeeded
		case r.stopping && sv.stoppedBySignal(r, ev.ws, code):
			r.st.State = spec.Cancelled
		default:
			r.st.State = spec.Failed
			r.st.StructuredError = sv.errorFile(r)
		}
		sv.exited(r, code)
	}
}

// leaderExited is called with the pid of a replica's leader that has exited and is
// not reaped yet. Unless the replica is being stopped (its group then keeps the
// stop timeout), its group is killed now: the zombie leader keeps the group's id
// from being reused, which it no longer does once reaped.
func (sv *supervisor) leaderExited(pid int) {
	for _, r := range sv.all {
		if r.phase == running && r.pid == pid && !(r.stopping && !r.killed) {
			killGroup(pid, unix.SIGKILL)
			r.groupKilled = true
		}
	}
}

// groupGone records that r's process group has ended (or has been killed).
func (sv *supervisor) groupGone(r *replica, now time.Time) {
	sv.tellReaper('-', r.pid)
	r.phase = idle
	r.drainAt = now.Add(drainWait)
	sv.dirty = true
}

// groupAlive reports whether process group pgid still has a member. The leader of a
// replica's group is reaped before this is asked; while any member lives, the kernel
// keeps the group's id from being reused as a pid.
func groupAlive(pgid int) bool {
	err := unix.Kill(-pgid, 0)
	return err == nil || err == unix.EPERM
}

// checkLingering ends the lingering of replicas whose group has ended.
func (sv *supervisor) checkLingering() {
	now := time.Now()
	for _, r := range sv.all {
		if r.phase == lingering && !groupAlive(r.pid) {
			sv.groupGone(r, now)
		}
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
	if !sv.retry(r) {
		sv.fail(r, code)
	}
}

// retry applies the retry policy of r's role to r, which failed: it restarts what the
// policy restarts and reports true, or reports false when no retry is left.
func (sv *supervisor) retry(r *replica) bool {
	role := r.role
	switch role.req.RetryPolicy {
	case spec.RetryReplica:
		if r.attempt < role.req.MaxRetries {
			sv.restart(r)
			return true
		}
	case spec.RetryRole:
		if role.restarts < role.req.MaxRetries {
			role.restarts++
			sv.restart(role.replicas...)
			return true
		}
	default: // APPLICATION
		if sv.appRestarts < role.req.MaxRetries {
			sv.appRestarts++
			sv.restart(sv.all...)
			return true
		}
	}
	return false
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
			if (r.phase == running || r.phase == lingering) && !r.killed {
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
	sv.checkLingering()
	now := time.Now()
	for _, r := range sv.all {
		if (r.phase == running && r.stopping || r.phase == lingering) && !r.killed && !now.Before(r.killAt) {
			killGroup(r.pid, unix.SIGKILL)
			r.killed = true
		}
		if r.phase == idle && r.pumps > 0 && !r.drainAt.IsZero() && !now.Before(r.drainAt) {
			r.drainAt = time.Time{}
			sv.closeHeldReaders(r)
		}
	}
}

// closeHeldReaders closes those of r's output pipes that a process still holds open
// for writing: once the replica's group is gone, only an escaped process can. A pipe
// whose writers are all gone is left to its Copy, which reads it to the end.
func (sv *supervisor) closeHeldReaders(r *replica) {
	for i, f := range r.readers {
		if writersGone(f) {
			continue
		}
		f.Close() // makes Copy return; closing twice is harmless
		// The reaper's copy goes too: the escaped writer must meet a closed pipe
		// (EPIPE), not a full one.
		if i < len(r.pipeIDs) {
			sv.releasePipe(r.pipeIDs[i])
			r.pipeIDs[i] = 0
		}
		if !r.escaped {
			r.escaped = true
			sv.logf("%s: a process that left the replica's process group still holds its output open; its output is no longer recorded", r.name())
			sv.noteWarnings()
		}
	}
}

// writersGone reports whether no process holds the write end of pipe f open any more
// (POLLHUP), or f is closed. The data still in the pipe does not matter: poll reports
// the hang-up as soon as the last writer is gone.
func writersGone(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	gone := true
	cerr := rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			gone = err != nil || n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
			return
		}
	})
	return gone || cerr != nil
}

// noteWarnings recomputes the app's warnings from its replicas: output not recorded
// because an escaped process held a pipe, or because the logs could not be written.
func (sv *supervisor) noteWarnings() {
	var ws []string
	for _, r := range sv.all {
		if r.escaped {
			ws = append(ws, r.name()+": output written after the replica ended was not recorded: a process that left its process group still held its stdout or stderr")
		}
		if r.w == nil {
			continue
		}
		out, errb, err := r.w.Lost()
		why := "write error"
		if err != nil {
			why = rootCause(err)
		}
		for _, l := range []struct {
			n    int64
			name string
		}{{out, "stdout"}, {errb, "stderr"}} {
			if l.n > 0 {
				ws = append(ws, fmt.Sprintf("%s: %d bytes of %s not written: %s", r.name(), l.n, l.name, why))
			}
		}
		// What the views show (wick log, --json, -n, the wall: combined.log, and the
		// stream files for what it could not take) may lack lines the stream files
		// lack too: they are counted in lines, and marked in the views where they were.
		mout, merr := r.w.Missing()
		for _, l := range []struct {
			n    int64
			name string
		}{{mout, "stdout"}, {merr, "stderr"}} {
			if l.n > 0 {
				ws = append(ws, fmt.Sprintf("%s: %d lines of %s missing from what wick log and the views show: %s", r.name(), l.n, l.name, why))
			}
		}
		if out == 0 && errb == 0 && mout == 0 && merr == 0 && err != nil {
			ws = append(ws, fmt.Sprintf("%s: logs incomplete: %s", r.name(), rootCause(err)))
		}
	}
	if !slices.Equal(ws, sv.st.Warnings) {
		sv.st.Warnings = ws
		sv.dirty = true
	}
}

// rootCause returns the innermost error's message: "no space left on device" rather
// than the chain of paths and operations that led to it.
func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
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
			if t == r.killAt && (r.phase != running && r.phase != lingering || r.killed) {
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
	for _, r := range sv.all {
		if r.phase == lingering {
			if t := time.Now().Add(lingerPoll); next.IsZero() || t.Before(next) {
				next = t
			}
			break
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
		Error:    attemptError(r.st.StructuredError),
	})
	r.attempt++
	// The attempt's own fields are the next run's from now on; evStarted fills them.
	r.st.Restarts = r.attempt
	r.st.ExitCode, r.st.Started, r.st.Ended, r.st.StructuredError = nil, time.Time{}, time.Time{}, ""
	sv.dirty = true
}

// maxAttemptError bounds the error an earlier attempt keeps.
const maxAttemptError = 1 << 10

// attemptError is what an earlier attempt keeps of its error: the first line of its
// message, bounded. The whole error file (up to maxErrorFile, with its traceback)
// stays in the current run's StructuredError only: kept for each of MaxAttempts runs,
// it made state.json megabytes, rewritten at every change.
func attemptError(structured string) string {
	msg := firstLine(spec.ErrorMessage(structured))
	if len(msg) > maxAttemptError {
		msg = strings.ToValidUTF8(msg[:maxAttemptError], "") + "…"
	}
	return msg
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
// left behind, writes the final state, then SUCCESS, then ends every log (so that a
// follower that sees the end finds the final state, and SUCCESS), and dismisses the
// reaper.
func (sv *supervisor) finalize() {
	sv.killOrphans()
	if sv.cg != nil {
		// Everything the replicas started, wherever it went.
		if err := sv.cg.kill(sv.kids.reap); err != nil {
			sv.logf("%v", err)
		}
		defer sv.cg.remove()
	}
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
			// Pipes still held open now are held by processes that escaped every
			// kill: stop recording those. The others are read to their end.
			for _, r := range sv.all {
				if r.pumps > 0 {
					sv.closeHeldReaders(r)
				}
			}
			timeout = nil
		}
	}
	// What combined.log could not take is written now or given up, so that the
	// warnings count what the views will lack, not what End might still write.
	for _, r := range sv.all {
		if r.w != nil && !r.endMarked {
			r.w.Settle()
		}
	}
	sv.noteWarnings()
	now := time.Now()
	for _, r := range sv.all {
		if !r.st.State.Terminal() {
			r.st.State = spec.Cancelled
		}
	}
	sv.stopWatches()
	if sv.target == spec.Failed {
		sv.rootCause()
	}
	sv.st.State = sv.target
	sv.st.Ended = now
	// The order on disk (docs/architecture.md, "The order on disk"): every log line
	// before the final state, the final state before the launcher is told of the end,
	// SUCCESS after the final state. Two rounds of device flush, not three:
	//   1. the log files' fsyncs, and the final state's and SUCCESS's new files
	//      written and fsynced beside their names, all at once (concurrent fsyncs of
	//      one file system share its journal commits);
	//   2. the final state renamed over state.json and the app's directory fsynced,
	//      once the launcher's report of the start is written (ringLauncher: its
	//      directory fsync ran beside round 1 when the app ended at once).
	// Then SUCCESS is renamed into the log directory, without that directory's fsync:
	// TorchX's summary is derived from the final state and nothing reads it back, so
	// a machine crash may take it back (a final state without SUCCESS), never leave
	// it without the final state, whose fsync came first; its file was fsynced before
	// the rename, so no crash leaves it torn. Before, SUCCESS's rename and its
	// directory's fsync were a round of their own, between 1 and 2, on every
	// attached run's path to its end.
	var files sync.WaitGroup
	var final, success finalFile
	files.Go(func() { success.p, success.err = sv.prepareSuccess() })
	files.Go(func() { final.p, final.err = sv.st.prepare(sv.dir) })
	sv.syncLogs()
	files.Wait()
	sv.awaitRing()
	err := sv.saveFinal(final)
	if err != nil {
		sv.logf("the final state could not be written: %v", err)
		sv.recordUnsaved(err)
	}
	sv.putSuccess(success, err == nil)
	sv.dirty = false
	for _, r := range sv.all {
		if !r.endMarked {
			if err := r.w.End(); err != nil {
				sv.logf("%s: %v", r.name(), err)
			}
		}
	}
	sv.closeWriters()
	// Every log is ended: the launcher's followers may end.
	sv.bell.Close()
	// The space reserved for the final state and the record of an end that could not
	// be saved go once the launcher is told: a reader judges the app by its final
	// state, which is written, and neither file is read beside one.
	sv.dropReserve()
	sv.dropUnsaved()
	sv.runOnEnd()
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

// syncLogs fsyncs every replica's log files, maxSyncs at a time: concurrent fsyncs
// of one file system share its journal commits, so an app of many replicas ends in a
// few commits' time, not one per file.
func (sv *supervisor) syncLogs() {
	sem := make(chan struct{}, maxSyncs)
	var wg sync.WaitGroup
	for _, r := range sv.all {
		if r.w == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := r.w.Sync(); err != nil {
				sv.logf("%s: %v", r.name(), err)
			}
		}()
	}
	wg.Wait()
}

// maxSyncs bounds the fsyncs syncLogs runs at once.
const maxSyncs = 16

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
// Children that are not the app's (another part of the program's, an exec.Cmd) are
// left alone.
func (sv *supervisor) killOrphans() {
	own := unix.Getpgrp()
	for _, pid := range childPids() {
		if pid == sv.reaperPID() || !sv.kids.ours(pid) {
			continue
		}
		if pg, err := unix.Getpgid(pid); err == nil && pg != own {
			killGroup(pg, unix.SIGKILL)
		}
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	sv.kids.reap()
}

// prepareSuccess writes TorchX's SUCCESS summary beside its name in the app's log
// directory, fsynced; putSuccess puts it in place once the final state is.
func (sv *supervisor) prepareSuccess() (*safefs.Prepared, error) {
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
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return safefs.PrepareFile(sv.req.LogDir, successFile, append(data, '\n'))
}

// putSuccess renames the prepared SUCCESS into place, without its directory's fsync
// (finalize says why), where the final state was saved; otherwise it removes it: a
// summary must not name an end that state.json does not hold.
func (sv *supervisor) putSuccess(success finalFile, saved bool) {
	switch {
	case success.err != nil:
		sv.logf("write %s: %v", successFile, success.err)
	case !saved:
		success.p.Discard()
	default:
		if err := success.p.Replace(); err != nil {
			sv.logf("write %s: %v", successFile, err)
		}
	}
}
