package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Schedule launches a planned app: it creates the log directories (so that an
// unwritable log_dir fails before anything starts), writes the app's state
// directory, starts the supervisor detached in its own session, and returns once the
// supervisor reports that the replicas are started, or why it could not start them.
// If ctx ends first, the app is cancelled.
func (s *Scheduler) Schedule(ctx context.Context, info *sched.DryRunInfo, progress sched.Progress) (err error) {
	if info == nil || info.App == nil {
		return errors.New("nothing to schedule")
	}
	if info.Scheduler != "" && info.Scheduler != s.name {
		return fmt.Errorf("the dry run is for %s, not %s", info.Scheduler, s.name)
	}
	req, err := requestOf(info.Request)
	if err != nil {
		return err
	}
	appDir, err := s.appDir(req.AppID)
	if err != nil {
		return err
	}
	if req.AppID != info.AppID || req.StateDir != appDir {
		return fmt.Errorf("the request does not match app %s (run the dry run again)", info.AppID)
	}
	if !(req.StopTimeout >= 0 && req.StopTimeout <= MaxStopTimeout) { // a request read back
		return fmt.Errorf("%w: %s must be between 0 and %g seconds (got %g)", spec.ErrInvalidRunOpt, OptStopTimeout, MaxStopTimeout, req.StopTimeout)
	}
	self, err := s.selfCommand()
	if err != nil {
		return err
	}
	if err := makeLogDirs(req); err != nil {
		return err
	}
	// Until the supervisor is started, a failure removes what was made here: a launch
	// that fails leaves nothing behind that no verb could see or delete.
	undo, started := []string{req.LogDir}, false
	defer func() {
		if err != nil && !started {
			for _, p := range undo {
				_ = os.RemoveAll(p)
			}
		}
	}()
	if err := safefs.MkdirAll(s.appsDir()); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if err := mkAppDir(appDir); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("app %s already exists", req.AppID)
		}
		return fmt.Errorf("state directory: %w", err)
	}
	undo = append(undo, appDir)
	if err := os.Chmod(appDir, safefs.DirMode); err != nil { // whatever the umask
		return fmt.Errorf("state directory: %w", err)
	}
	// The supervisor starts now, its Go runtime's start beside this launcher's first
	// saves (their fsyncs), and waits for go before it reads them. It is started
	// from a goroutine of its own: Go's fork (a vfork) holds the thread that forks
	// until the child has executed its program, which at load took as long as the
	// saves, and they need not wait for it. One that could not start fails the launch
	// where it was started before: after the app is recorded, so that the failure is
	// the app's, FAILED with why (a broken wick binary).
	spawning := spawnAside(appDir, supervisorCommand(self))
	defer spawning.abandon()
	l := &launch{
		Version:   storeVersion,
		Scheduler: s.name,
		Session:   req.Session,
		AppID:     req.AppID,
		Created:   time.Now(),
		Self:      self,
		App:       info.App,
		Cfg:       spec.CfgStrings(info.Cfg),
		Request:   req,
	}
	owner, err := logs.Self()
	if err != nil {
		return err
	}
	st := newState(s.name, l, owner)
	if err := saveLaunch(appDir, l, st); err != nil {
		return err
	}
	// Once the app exists (portHolder reads its state), before anything binds.
	if err := s.reservePorts(req); err != nil {
		return err
	}
	// Its GPUs, under the leases' lock: a device another app took since the plan
	// fails the launch (a sweep's queue waits and tries others).
	if err := s.leases().Take(req.AppID, req.Devices); err != nil {
		return err
	}
	progress.Report("starting %s", spec.Count(req.replicas(), "replica"))
	started = true
	sup, spawnErr := spawning.wait()
	return s.startSupervisor(ctx, appDir, sup, spawnErr, st)
}

// spawning is a supervisor being started by spawnSupervisor in a goroutine
// (spawnAside).
type spawning struct {
	done chan struct{}
	sup  *spawned
	err  error
}

// spawnAside starts spawnSupervisor(appDir, cmd) in a goroutine.
func spawnAside(appDir string, cmd []string) *spawning {
	sp := &spawning{done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		sp.sup, sp.err = spawnSupervisor(appDir, cmd)
	}()
	return sp
}

// wait returns the started supervisor, or why it could not start.
func (sp *spawning) wait() (*spawned, error) {
	<-sp.done
	return sp.sup, sp.err
}

// abandon waits for the start, then abandons the supervisor (spawned.abandon): one
// not sent go exits, and its report pipe is closed unless it became the app's
// chime. A launch that fails undoes its directories only after this.
func (sp *spawning) abandon() {
	if sup, err := sp.wait(); err == nil {
		sup.abandon()
	}
}

// saveLaunch writes the app's first files, launch.json and state.json, as two atomic
// saves would, one after the other, but in one journal commit less: both are written
// and fsynced at once (concurrent fsyncs share the file system's commits), then
// launch.json is renamed into place, then state.json, and the directory is fsynced
// once. On disk the order is the one of two saves (launch.json's rename before
// state.json's, both files' data before either name), and both are durable before
// the supervisor is told to go.
func saveLaunch(appDir string, l *launch, st *state) error {
	ldata, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("write app state: %w", err)
	}
	sdata, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("save app state: %w", err)
	}
	var lp *safefs.Prepared
	var lerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		lp, lerr = safefs.PrepareFile(appDir, launchFile, append(ldata, '\n'))
	}()
	sp, serr := safefs.PrepareFile(appDir, stateFile, append(sdata, '\n'))
	<-done
	if lerr != nil || serr != nil {
		for _, p := range []*safefs.Prepared{lp, sp} {
			if p != nil {
				p.Discard()
			}
		}
		if lerr != nil {
			return fmt.Errorf("write app state: %w", lerr)
		}
		return fmt.Errorf("save app state: %w", serr)
	}
	if err := lp.Replace(); err != nil {
		sp.Discard()
		return fmt.Errorf("write app state: %w", err)
	}
	if err := sp.Commit(); err != nil {
		return fmt.Errorf("save app state: %w", err)
	}
	return nil
}

// requestOf accepts the request DryRun made, or its JSON form (a dry run read back).
func requestOf(v any) (*Request, error) {
	switch r := v.(type) {
	case *Request:
		if r != nil {
			return r, nil
		}
	case Request:
		return &r, nil
	case nil:
	default:
		b, err := json.Marshal(v)
		if err == nil {
			var req Request
			if err = json.Unmarshal(b, &req); err == nil && req.AppID != "" {
				return &req, nil
			}
		}
	}
	return nil, errors.New("the dry run holds no local request (run the dry run again)")
}

// selfCommand returns the command that runs wick, with an absolute program path: the
// supervisor runs in "/".
func (s *Scheduler) selfCommand() ([]string, error) {
	if len(s.cfg.Self) == 0 || s.cfg.Self[0] == "" {
		return nil, errors.New("cannot start the supervisor: the command that runs wick is unknown")
	}
	self := append([]string(nil), s.cfg.Self...)
	p, err := exec.LookPath(self[0])
	if err == nil {
		p, err = filepath.Abs(p)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot start the supervisor: %w", err)
	}
	self[0] = p
	return self, nil
}

// SupervisorHelper is the program, beside wick's own binary, that runs the
// supervisor and the reaper (cmd/wick-supervisor): wick without the verbs, the UI and
// their libraries, whose package initialisers every app's supervisor paid at its
// start in wick's binary (`make build` builds both).
const SupervisorHelper = "wick-supervisor"

// supervisorCommand returns the command that runs the supervisor (and the reaper),
// without its verb: the helper beside self's binary when self is a binary alone (a
// wick, as users run it) and the helper is there, else self (`wick __supervise`, as
// before the helper; a wick installed alone, or a test binary standing in for wick).
// Only beside: a helper found elsewhere (on PATH) could be another wick's, and read
// another wick's files.
func supervisorCommand(self []string) []string {
	if len(self) != 1 || !filepath.IsAbs(self[0]) {
		return self
	}
	p := filepath.Join(filepath.Dir(self[0]), SupervisorHelper)
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return self
	}
	return []string{p}
}

// makeLogDirs creates the app's log directory (which must not exist) and one per
// replica, 0700, without following symbolic links: every directory from "/" down to
// the session's must be trusted (see package safefs), and the app's is new, so that
// nobody else can put anything below it.
func makeLogDirs(req *Request) (rerr error) {
	if err := checkLogDir(req.LogDir, req.StateDir); err != nil {
		return err
	}
	fail := func(err error) error {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("log directory %s cannot be created: %w", req.LogDir, err)
	}
	if _, err := os.Lstat(req.LogDir); err == nil {
		// Left by a launch of this app cut short (checkLogDir): made again, and its
		// state directory, which holds no state, with it.
		if err := removeCutShort(req.LogDir); err != nil {
			return fail(err)
		}
		if err := os.RemoveAll(req.StateDir); err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
	}
	session, err := safefs.MkdirAllDir(filepath.Dir(req.LogDir))
	if err != nil {
		return fail(err)
	}
	defer session.Close()
	app, err := safefs.Mkdir(session, filepath.Base(req.LogDir))
	if err != nil {
		return fail(err)
	}
	defer app.Close()
	defer func() {
		if rerr != nil {
			_ = os.RemoveAll(req.LogDir) // ours: just made, exclusively
		}
	}()
	for _, role := range req.Roles {
		roleDir, err := safefs.Mkdir(app, role.Name)
		if err != nil {
			return fail(err)
		}
		for _, r := range role.Replicas {
			name := strconv.Itoa(r.ID)
			if r.LogDir != filepath.Join(req.LogDir, role.Name, name) {
				roleDir.Close()
				return fmt.Errorf("replica log directory %s is not %s/%s/%s", r.LogDir, req.LogDir, role.Name, name)
			}
			d, err := safefs.Mkdir(roleDir, name)
			if err != nil {
				roleDir.Close()
				return fail(err)
			}
			d.Close()
		}
		roleDir.Close()
	}
	return nil
}

// cancelReportWait bounds how long an interrupted launch waits for the supervisor to
// report on the cancel (it ends the app, or stops the replicas it started).
const cancelReportWait = 30 * time.Second

// spawned is a supervisor started and waiting for go (spawnSupervisor).
type spawned struct {
	pid  int
	pr   *os.File // the read end of its ready pipe
	goW  *os.File // the write end of its go pipe; nil once go is sent
	keep bool     // pr is the app's chime: not closed by abandon
}

// spawnSupervisor runs `SELF __supervise APP_DIR` (SELF: supervisorCommand) in a new session, with its output
// in supervisor.log, a pipe on which it reports the start, and one on which it waits
// for go.
//
// It forks with syscall.ForkExec, not os/exec: a process's first os.StartProcess
// first checks that pidfds work by forking a child that exits at once and waiting for
// it (os.checkPidfd), a process more to schedule before the supervisor's own fork, on
// every launch from a one-shot wick (1.3-2 ms more of a start of /bin/true, medians
// of 40 at load 11). The launcher uses no pidfd of its supervisor: it only reaps it.
func spawnSupervisor(appDir string, self []string) (*spawned, error) {
	argv0 := self[0]
	if !strings.Contains(argv0, "/") {
		p, err := exec.LookPath(argv0)
		if err != nil {
			return nil, fmt.Errorf("start supervisor: %w", err)
		}
		argv0 = p
	}
	logf, err := safefs.OpenAppend(filepath.Join(appDir, supervisorLog))
	if err != nil {
		return nil, fmt.Errorf("supervisor log: %w", err)
	}
	defer logf.Close()
	null, err := devNull()
	if err != nil {
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	defer null.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	// Its own session: no terminal, no signal from the launcher's Ctrl-C, and no
	// death when the launcher dies. The ready pipe is its fd 3, the go pipe its fd 4.
	pid, err := syscall.ForkExec(argv0, append(slices.Clone(self), SuperviseVerb, appDir), &syscall.ProcAttr{
		Dir:   "/",
		Env:   append(mergeEnv(os.Environ(), nil), fmt.Sprintf("%s=%d", envReadyFD, 3), fmt.Sprintf("%s=%d", envGoFD, 4)),
		Files: []uintptr{null.Fd(), logf.Fd(), logf.Fd(), pw.Fd(), goR.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	pw.Close()
	goR.Close()
	if err != nil {
		pr.Close()
		goW.Close()
		// Named as os/exec names it: "fork/exec PATH: exec format error".
		return nil, fmt.Errorf("start supervisor: %w", &os.PathError{Op: "fork/exec", Path: argv0, Err: err})
	}
	// Reap the supervisor whenever it ends, so that it does not linger as a zombie
	// of a long-lived launcher (the UI). The goroutine ends with the supervisor.
	go func() {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
				return
			}
		}
	}()
	return &spawned{pid: pid, pr: pr, goW: goW}, nil
}

// abandon ends a supervisor that was not sent go (its go pipe closes: it exits) and
// closes the report pipe unless it became the app's chime.
func (sp *spawned) abandon() {
	if sp.goW != nil {
		sp.goW.Close()
		sp.goW = nil
	}
	if !sp.keep {
		sp.pr.Close()
	}
}

// startSupervisor sends the spawned supervisor go and waits for its report of the
// start; spawnErr is why it could not be spawned, the app's failure.
func (s *Scheduler) startSupervisor(ctx context.Context, appDir string, sup *spawned, spawnErr error, st *state) error {
	failed := func(err error) error {
		// Record the failure unless the supervisor already did.
		if cur, rerr := readState(appDir); rerr == nil && !cur.State.Terminal() {
			markDead(cur, err.Error())
			cur.Msg = err.Error()
			cur.StructuredError = err.Error()
			_ = cur.save(appDir)
		}
		return err
	}
	if spawnErr != nil {
		return failed(spawnErr)
	}
	// A supervisor that is gone already (the write fails) says so below: its report
	// pipe ends without "ok".
	_, _ = sup.goW.Write([]byte{1})
	sup.goW.Close()
	sup.goW = nil
	pr := sup.pr
	type result struct {
		msg []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		b, err := readReport(pr)
		got <- result{b, err}
	}()
	var res result
	select {
	case res = <-got:
	case <-ctx.Done():
		// Not a bare SIGTERM: a supervisor that has not set up its handler yet would
		// die of it. Cancel leaves a request it reads, or signals it once it can.
		cerr := s.Cancel(context.Background(), st.AppID)
		// Wait (a while) for the supervisor to take the cancel in and report: until
		// it has taken the app over, this launcher is the app's owner, and its exit
		// would read as a launch that died.
		t := time.NewTimer(cancelReportWait)
		select {
		case res = <-got:
			if len(bytes.TrimSpace(res.msg)) == 0 {
				// The supervisor ended without a word: the interrupt killed it
				// between its fork and its setsid, when it was still in this
				// launcher's process group (a Ctrl-C reaches the whole group). This
				// launcher still owns the app: it ends it as cancelled, or its exit
				// would read as a launch that died (FAILED, its duration growing).
				cancelUnstarted(appDir)
			}
		case <-t.C:
			pr.Close()
			<-got
		}
		t.Stop()
		if cerr != nil {
			return fmt.Errorf("app %s: start interrupted (%v), and it could not be cancelled: %w", st.AppID, ctx.Err(), cerr)
		}
		return fmt.Errorf("app %s: start interrupted, app cancelled: %w", st.AppID, ctx.Err())
	}
	msg := string(bytes.TrimSpace(res.msg))
	switch {
	case msg == "ok":
		n := 0
		for _, r := range st.Roles {
			n += len(r.Replicas)
		}
		if n <= chimeReplicas {
			sup.keep = true
			s.addChime(st.AppID, pr)
		}
		return nil
	case strings.HasPrefix(msg, "error: "):
		return failed(errors.New(strings.TrimPrefix(msg, "error: ")))
	}
	why := lastLine(filepath.Join(appDir, supervisorLog))
	if why == "" {
		why = "no message"
	}
	return failed(fmt.Errorf("the supervisor exited before starting the app: %s", why))
}

// cancelUnstarted ends, as cancelled, an app whose supervisor is gone before it took
// the app over (its launcher, still the owner, was interrupted). An app that has ended
// or been taken over is left as it is.
func cancelUnstarted(appDir string) {
	unlock, err := lockApp(appDir) // as saveVerdict: never over a supervisor's takeover
	if err != nil {
		return
	}
	defer unlock()
	st, err := readState(appDir)
	if err != nil || st.State.Terminal() || !st.Supervisor.IsZero() {
		return
	}
	now := time.Now()
	st.State, st.Msg, st.Ended = spec.Cancelled, "cancelled before it started", now
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			if r := &st.Roles[i].Replicas[j]; !r.State.Terminal() {
				r.State = spec.Cancelled
			}
		}
	}
	_ = st.save(appDir)
}

// maxReport bounds the supervisor's report of its start ("ok" or "error: ...").
const maxReport = 64 << 10

// readReport reads the supervisor's report of the start: one line, or what it wrote
// before it closed the pipe. It reads a byte at a time, so that nothing after the
// line (the bell's rings) is taken.
func readReport(r io.Reader) ([]byte, error) {
	var msg []byte
	var b [1]byte
	for len(msg) < maxReport {
		n, err := r.Read(b[:])
		if n == 1 {
			msg = append(msg, b[0])
			if b[0] == '\n' {
				return msg, nil
			}
		}
		if err == io.EOF {
			return msg, nil
		}
		if err != nil {
			return msg, err
		}
	}
	return msg, nil
}

// lastLine returns the last non-empty line of a small file.
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// mkAppDir makes an app's state directory. One that holds neither launch file is what
// a launcher killed between its mkdir and its first save left (a sweep's queue killed
// there launches the same handle again): no verb sees it as an app, and it is made
// anew. An app with either file is kept: fs.ErrExist.
func mkAppDir(appDir string) error {
	err := os.Mkdir(appDir, safefs.DirMode)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	for _, f := range []string{launchFile, stateFile} {
		if _, serr := os.Lstat(filepath.Join(appDir, f)); !errors.Is(serr, fs.ErrNotExist) {
			return err
		}
	}
	if rerr := os.RemoveAll(appDir); rerr != nil {
		return err
	}
	return os.Mkdir(appDir, safefs.DirMode)
}
