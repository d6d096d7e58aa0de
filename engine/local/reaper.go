package local

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/safefs"
)

// The reaper covers the one case the supervisor cannot: its own SIGKILL. Pdeathsig
// kills every replica's leader then, but not the processes those leaders started
// (torchrun's workers, a shell's background jobs), which would live on as orphans. So
// the supervisor starts a small helper in a session of its own, and tells it through a
// pipe which process groups exist ("+PGID", "-PGID"). If the pipe ends without "q",
// the supervisor died: the reaper kills every group it was told about, ends the
// replicas' logs so that followers stop, and records the app as FAILED.

// The reaper process starts only once the app has run for reaperDelay: most short
// apps end before, and never pay for a second process. The pipe exists from the start,
// so the groups of the first replicas are in it when the reaper comes to read it; only
// a SIGKILL of the supervisor within reaperDelay of the start leaves grandchildren
// unkilled (the replicas themselves still die by Pdeathsig).
const reaperDelay = 25 * time.Millisecond

// reaperWriteTimeout bounds a write to the reaper: a stuck reaper must not stall the
// supervisor.
const reaperWriteTimeout = time.Second

// openReaper creates the pipe to the reaper. Failing is logged, not fatal: the reaper
// only matters if the supervisor is killed.
func (sv *supervisor) openReaper() {
	pr, pw, err := os.Pipe()
	if err != nil {
		sv.logf("no reaper: %v", err)
		return
	}
	sv.reaperR, sv.reaper = pr, pw
}

// startReaper starts the reaper, `wick __supervise DIR` with envReaper set, on the
// pipe's read end.
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
	argv := append(append([]string{}, sv.l.Self...), SuperviseVerb, sv.dir)
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

// tellReaper sends "+PGID" or "-PGID".
func (sv *supervisor) tellReaper(op byte, pgid int) {
	sv.tellReaperLine(string(op) + strconv.Itoa(pgid))
}

// tellReaperLine sends one line to the reaper: "+PGID", "-PGID", or "cDIR", the
// app's cgroup.
func (sv *supervisor) tellReaperLine(line string) {
	if sv.reaper == nil {
		return
	}
	_ = sv.reaper.SetWriteDeadline(time.Now().Add(reaperWriteTimeout))
	if _, err := sv.reaper.WriteString(line + "\n"); err != nil {
		sv.logf("reaper: %v", err)
		sv.reaper.Close()
		sv.reaper = nil
	}
}

// quitReaper dismisses the reaper: the supervisor ends normally.
func (sv *supervisor) quitReaper() {
	if sv.reaper == nil {
		return
	}
	_ = sv.reaper.SetWriteDeadline(time.Now().Add(reaperWriteTimeout))
	_, _ = sv.reaper.WriteString("q\n")
	sv.reaper.Close()
	sv.reaper = nil
	if sv.reaperR != nil {
		sv.reaperR.Close() // never started: the app was short
		sv.reaperR = nil
	}
}

// reap is the reaper's main: see the comment at the top of this file.
func reap(appDir string) error {
	// Signals meant for the app's processes are not for the reaper.
	signal.Ignore(unix.SIGHUP, unix.SIGINT, unix.SIGTERM)
	groups := map[int]bool{}
	cgroupDir := ""
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := sc.Text()
		if line == "q" {
			return nil
		}
		if len(line) < 2 {
			continue
		}
		if line[0] == 'c' {
			cgroupDir = line[1:]
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 0 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	for pgid := range groups {
		killGroup(pgid, unix.SIGKILL)
	}
	if cgroupDir != "" {
		// What left the groups is still in the app's cgroup.
		if err := killCgroupDir(cgroupDir); err != nil {
			fmt.Fprintf(os.Stderr, "wick reaper: %v\n", err)
		}
	}
	l, err := readLaunch(appDir)
	if err != nil {
		return fmt.Errorf("reaper: %w", err)
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
	fmt.Fprintf(os.Stderr, "%s wick reaper %s: the supervisor died; killed %d process groups\n", time.Now().Format(time.RFC3339), l.AppID, len(groups))
	return st.save(appDir)
}
