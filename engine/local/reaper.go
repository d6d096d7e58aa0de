package local

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
)

// The reaper covers the one case the supervisor cannot: its own SIGKILL. Pdeathsig
// kills every replica's leader then, but not the processes those leaders started
// (torchrun's workers, a shell's background jobs), which would live on as orphans. So
// the supervisor starts a small helper in a session of its own, and tells it through a
// pipe which process groups exist ("+PGID", "-PGID"). If the pipe ends without "q",
// the supervisor died: the reaper kills every group it was told about, ends the
// replicas' logs so that followers stop, and records the app as FAILED.

// The reaper process starts only once a replica has run for reaperDelay: most short
// apps end before, and never pay for a third process. The delay counts from the first
// replica's start (its fork, under load, can take as long as the delay), and when it
// is over with nothing of the app's left (every replica's group gone, every pipe read
// to its end) the reaper is not started but waits for the next start (a restart). The
// pipe exists from the start, so the groups of the first replicas are in it when the
// reaper comes to read it; only a SIGKILL of the supervisor within reaperDelay of a
// replica's start leaves grandchildren unkilled (the replicas themselves still die by
// Pdeathsig).
const reaperDelay = 25 * time.Millisecond

// armReaper starts the reaper's delay at a replica's start, unless the reaper runs or
// its delay is already counting.
func (sv *supervisor) armReaper() {
	if sv.reaperR != nil && sv.reaperAt == nil {
		sv.reaperAt = time.After(reaperDelay)
	}
}

// reaperDue starts the reaper once its delay is over, if the app has processes or
// pipes left for it to look after; else the next start arms the delay again.
func (sv *supervisor) reaperDue() {
	sv.reaperAt = nil
	if sv.inflight == 0 && !sv.pumpsRunning() {
		live := false
		for _, r := range sv.all {
			live = live || r.phase != idle
		}
		if !live {
			return
		}
	}
	sv.startReaper()
}

// reaperQuitWait bounds the wait at the supervisor's end for the reaper to read what
// is queued and "q" (reaperlink.go): one that does not is killed, so that it cannot
// take the socket's end for the supervisor's death.
const reaperQuitWait = time.Second

// openReaper creates the channel to the reaper: a socket of messages (one line each),
// which can also carry file descriptors. Failing is logged, not fatal: the reaper only
// matters if the supervisor is killed.
func (sv *supervisor) openReaper() {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		sv.logf("no reaper: %v", err)
		return
	}
	// Ours is non-blocking (the link never waits on it); the reaper's blocks.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		sv.logf("no reaper: %v", err)
		return
	}
	link, err := newReaperLink(os.NewFile(uintptr(fds[0]), "reaper"))
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		sv.logf("no reaper: %v", err)
		return
	}
	sv.reaper, sv.reaperR = link, os.NewFile(uintptr(fds[1]), "reaper")
}

// startReaper starts the reaper, `wick-supervisor __supervise DIR` (or `wick
// __supervise DIR`: supervisorCommand) with envReaper set, on the pipe's read end.
func (sv *supervisor) startReaper() {
	pr := sv.reaperR
	if pr == nil || sv.reaper == nil {
		return
	}
	sv.reaperR = nil
	defer pr.Close()
	if len(sv.l.Self) == 0 {
		sv.logf("no reaper: wick's own command is unknown")
		return
	}
	logf, err := safefs.OpenAppend(sv.dir + "/" + supervisorLog)
	if err != nil {
		logf = sv.null
	} else {
		defer logf.Close()
	}
	env := append(mergeEnv(sv.env, nil), envReaper+"=1")
	argv := append(append([]string{}, supervisorCommand(sv.l.Self)...), SuperviseVerb, sv.dir)
	attr := &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []uintptr{pr.Fd(), sv.null.Fd(), logf.Fd()},
		// Its own session: a kill of the supervisor's process group spares it. No
		// Pdeathsig: outliving the supervisor is its purpose.
		Sys: &syscall.SysProcAttr{Setsid: true},
	}
	pid, _, err := sv.kids.fork(argv[0], argv, attr)
	if err != nil {
		sv.logf("no reaper: %v", err)
		return
	}
	sv.reaperProc = pid
}

func (sv *supervisor) reaperPID() int { return sv.reaperProc }

// drainPipes appends what is left in each pipe to its stream's file in its log
// directory (opened as the writer opens it: no symbolic link followed), until every
// writer is gone or reaperDrainWait has passed.
func drainPipes(pipes map[int]heldPipe) {
	if len(pipes) == 0 {
		return
	}
	deadline := time.Now().Add(reaperDrainWait)
	buf := make([]byte, 64<<10)
	for _, p := range pipes {
		if err := drainPipe(p, buf, deadline); err != nil {
			fmt.Fprintf(os.Stderr, "wick reaper: %v\n", err)
		}
		p.f.Close()
	}
}

func drainPipe(p heldPipe, buf []byte, deadline time.Time) error {
	fd := int(p.f.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		return err
	}
	var out *os.File
	defer func() {
		if out != nil {
			out.Close()
		}
	}()
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			// A writer is still there (being killed): wait a little for its bytes or
			// its end.
			if time.Now().After(deadline) {
				return nil
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			_, _ = unix.Poll(fds, 20)
			continue
		case err != nil:
			return fmt.Errorf("drain %s of %s: %w", p.stream, p.logDir, err)
		case n == 0:
			return nil // every writer is gone and the pipe is empty
		}
		if out == nil {
			if out, err = openAppendLog(p.logDir, p.stream+".log"); err != nil {
				return fmt.Errorf("drain %s of %s: %w", p.stream, p.logDir, err)
			}
		}
		if _, err := out.Write(buf[:n]); err != nil {
			return fmt.Errorf("drain %s of %s: %w", p.stream, p.logDir, err)
		}
	}
}

// openAppendLog opens an existing log file for appending, as the writer opens its
// files: the directory walked from "/" following no link, the file no link.
func openAppendLog(dir, name string) (*os.File, error) {
	d, err := safefs.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_WRONLY|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(dir, name), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, name))
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", f.Name())
	}
	return f, nil
}

// tellReaper sends "+PGID" or "-PGID".
func (sv *supervisor) tellReaper(op byte, pgid int) {
	sv.tellReaperLine(string(op) + strconv.Itoa(pgid))
}

// tellReaperLine sends one message to the reaper: "+PGID", "-PGID", "cDIR" (the app's
// cgroup), "xID" (pipe ID is read to its end: let it go).
func (sv *supervisor) tellReaperLine(line string) { sv.sendReaper(line, -1) }

// holdPipe gives the reaper a copy of the read end of a replica's output pipe, so
// that what the replica wrote and the supervisor had not taken out yet (see
// logs.Writer.Copy) can be drained into the stream's file should the supervisor be
// killed. It returns the pipe's id for releasePipe, 0 if the reaper has none.
func (sv *supervisor) holdPipe(logDir string, s sched.Stream, f *os.File) int {
	if sv.reaper == nil {
		return 0
	}
	sv.pipeSeq++
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	sent := false
	_ = rc.Control(func(fd uintptr) {
		sent = sv.sendReaper("o"+strconv.Itoa(sv.pipeSeq)+" "+string(s)+" "+logDir, int(fd))
	})
	if !sent {
		return 0
	}
	return sv.pipeSeq
}

// releasePipe tells the reaper to close its copy of pipe id.
func (sv *supervisor) releasePipe(id int) {
	if id > 0 {
		sv.tellReaperLine("x" + strconv.Itoa(id))
	}
}

// sendReaper sends one message, with file descriptor fd if it is not -1; it never
// waits for the reaper (reaperlink.go). A socket full before the reaper runs starts it
// at once: an app of more than ~56 replicas fills it while they start, before the
// loop that would start the reaper runs.
func (sv *supervisor) sendReaper(msg string, fd int) bool {
	if sv.reaper == nil {
		return false
	}
	queued, err := sv.reaper.send(msg, fd)
	if err != nil {
		sv.dropReaper(err)
		return false
	}
	if queued && sv.reaperR != nil {
		sv.startReaper()
	}
	return true
}

// dropReaper gives the reaper up after the link's failure err, and the app goes on
// without one. A reaper that is alive but does not read (err is errQueueFull or a
// deadline) is killed first: were the socket closed under it, it would take the end for
// the supervisor's death and kill the app. It is this process's child: its pid is not
// reused before it is reaped.
func (sv *supervisor) dropReaper(err error) {
	if (errors.Is(err, errQueueFull) || errors.Is(err, os.ErrDeadlineExceeded)) && sv.reaperProc > 0 {
		_ = unix.Kill(sv.reaperProc, unix.SIGKILL)
		sv.logf("reaper: %v: stopped; the app goes on without it", err)
	} else {
		sv.logf("reaper: %v", err)
	}
	sv.reaper.close()
	sv.reaper = nil
}

// quitReaper dismisses the reaper: the supervisor ends normally.
func (sv *supervisor) quitReaper() {
	if sv.reaper == nil {
		return
	}
	if sv.reaperR != nil { // never started (the app was short): nobody to tell
		sv.reaperR.Close()
		sv.reaperR = nil
	} else if sv.sendReaper("q", -1) {
		if err := sv.reaper.flush(time.Now().Add(reaperQuitWait)); err != nil {
			sv.dropReaper(err)
		}
	}
	if sv.reaper != nil {
		sv.reaper.close()
	}
	sv.reaper = nil
}

// heldPipe is a replica's output pipe the reaper holds a read end of.
type heldPipe struct {
	f      *os.File
	stream string
	logDir string
}

// maxReaperMsg bounds one message to the reaper (a log directory is a path).
const maxReaperMsg = 8 << 10

// reaperDrainWait bounds how long the reaper drains pipes after killing: a writer that
// escaped every kill cannot keep it.
const reaperDrainWait = 2 * time.Second

// reap is the reaper's main: see the comment at the top of this file.
func reap(appDir string) error {
	// Signals meant for the app's processes are not for the reaper.
	signal.Ignore(unix.SIGHUP, unix.SIGINT, unix.SIGTERM)
	rs := reaperState{groups: map[int]bool{}, pipes: map[int]heldPipe{}}
	buf := make([]byte, maxReaperMsg)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		line, fds, ok := receive(buf, oob)
		if !ok {
			break // the supervisor is gone
		}
		if line == "q" {
			return nil
		}
		rs.take(line, fds)
	}
	return rs.finish(appDir)
}

// receive reads one message from the supervisor (on stdin, a socket) and the file
// descriptors it carries; ok is false once the supervisor is gone.
func receive(buf, oob []byte) (line string, fds []int, ok bool) {
	for {
		n, oobn, _, _, err := unix.Recvmsg(0, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 && oobn <= 0 {
			return "", nil, false
		}
		if oobn > 0 {
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if got, err := unix.ParseUnixRights(&m); err == nil {
						fds = append(fds, got...)
					}
				}
			}
		}
		return string(buf[:n]), fds, true
	}
}

// reaperState is what the reaper holds for the app: its process groups, the read
// ends of its replicas' pipes, and its cgroup.
type reaperState struct {
	groups    map[int]bool
	pipes     map[int]heldPipe
	cgroupDir string
}

// take applies one message of the supervisor: "oID STREAM LOGDIR" with a pipe to
// hold, "xID" to let it go, "cDIR" for the cgroup, "+PGID" and "-PGID" for a process
// group started and ended. Descriptors a message does not keep are closed.
func (rs *reaperState) take(line string, fds []int) {
	if line != "" && line[0] == 'o' && len(fds) == 1 {
		idStr, rest, _ := strings.Cut(line[1:], " ")
		stream, logDir, _ := strings.Cut(rest, " ")
		id, err := strconv.Atoi(idStr)
		if err == nil && (stream == string(sched.Stdout) || stream == string(sched.Stderr)) && filepath.IsAbs(logDir) {
			rs.pipes[id] = heldPipe{f: os.NewFile(uintptr(fds[0]), "pipe"), stream: stream, logDir: logDir}
			return
		}
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	if len(line) < 2 {
		return
	}
	switch line[0] {
	case 'c':
		rs.cgroupDir = line[1:]
		return
	case 'x':
		if id, err := strconv.Atoi(line[1:]); err == nil {
			if p, ok := rs.pipes[id]; ok {
				p.f.Close()
				delete(rs.pipes, id)
			}
		}
		return
	}
	pgid, err := strconv.Atoi(line[1:])
	if err != nil || pgid <= 0 {
		return
	}
	switch line[0] {
	case '+':
		rs.groups[pgid] = true
	case '-':
		delete(rs.groups, pgid)
	}
}

// finish does what the supervisor, gone, cannot: it kills what is left of the app,
// puts what the pipes still hold in the logs and marks their end, and records the app
// as ended unless it had.
func (rs *reaperState) finish(appDir string) error {
	l, lerr := readLaunch(appDir)
	id := filepath.Base(appDir) // an app's directory is named by its id
	if lerr == nil {
		id = l.AppID
	}
	killed := killAppGroups(rs.groups, EnvAppID+"="+id)
	if rs.cgroupDir != "" {
		// What left the groups is still in the app's cgroup.
		if err := killCgroupDir(rs.cgroupDir); err != nil {
			fmt.Fprintf(os.Stderr, "wick reaper: %v\n", err)
		}
	}
	// What the replicas wrote that the supervisor had not taken out of the pipes goes
	// to the stream files; MarkEnd below indexes it.
	drainPipes(rs.pipes)
	if lerr != nil {
		return fmt.Errorf("reaper: %w", lerr)
	}
	for _, role := range l.Request.Roles {
		for _, r := range role.Replicas {
			if err := logs.MarkEnd(r.LogDir); err != nil {
				fmt.Fprintf(os.Stderr, "wick reaper %s: %v\n", l.AppID, err)
			}
		}
	}
	st, err := readState(appDir)
	if err != nil {
		return fmt.Errorf("reaper: %w", err)
	}
	if st.State.Terminal() {
		return nil
	}
	markGone(appDir, st)
	fmt.Fprintf(os.Stderr, "%s wick reaper %s: the supervisor died; killed %d process groups\n", time.Now().Format(time.RFC3339), l.AppID, killed)
	return st.save(appDir)
}

// killAppGroups kills those of groups that are still the app's, and returns how many:
// a group is when one of its processes has mark (WICK_APP_ID=ID, which every replica
// is given) in its environment. A group the reaper was told of may have ended with its
// "-PGID" still queued in the supervisor that died (reaperlink.go), and its number
// since be another program's group: Linux reuses a group's id once no process holds
// it. A live member keeps the id the app's, so the whole group goes, a member that
// cleared its environment included; a group whose every member did so is left to the
// cgroup's kill (where the machine has none, it outlives the supervisor).
func killAppGroups(groups map[int]bool, mark string) int {
	if len(groups) == 0 {
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	ours := map[int]bool{}
	var buf []byte
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		g, err := unix.Getpgid(pid)
		if err != nil || !groups[g] || ours[g] {
			continue
		}
		if buf == nil {
			buf = make([]byte, maxExecEnviron)
		}
		if env, err := readBounded("/proc/"+e.Name()+"/environ", buf); err == nil && hasEnv(env, mark) {
			ours[g] = true
		}
	}
	for g := range ours {
		killGroup(g, unix.SIGKILL)
	}
	return len(ours)
}
