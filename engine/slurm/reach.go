package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// Asking a controller that is down costs each Slurm command about 18 s (it retries
// its connection), while `scontrol ping` says DOWN in milliseconds. So before asking
// slurmctld about a job wick has a record of, the scheduler pings it, at most once per
// pingEvery for all its callers, and a controller that does not answer is answered for
// from the record and the job's files at once: the logs and the last known state. A
// controller that hangs (stopped, overloaded) gets pingTimeout to answer the ping;
// scontrol ping of a live one takes milliseconds.
const (
	pingEvery   = 2 * time.Second
	pingTimeout = 2 * time.Second
)

// reachState is what the last ping said.
type reachState struct {
	checked time.Time
	err     error // nil, or wraps ErrControllerDown
}

// reachable reports whether slurmctld answers: nil, or an error wrapping
// ErrControllerDown. Other failures (Slurm's commands missing) are left to the
// command that follows.
func (s *Scheduler) reachable(ctx context.Context) error {
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	s.mu.Lock()
	r := s.reach
	s.mu.Unlock()
	if !r.checked.IsZero() && time.Since(r.checked) < pingEvery {
		return r.err
	}
	err := Ping(ctx) // within pingTimeout (timeoutFor)
	var na *NoAnswerError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &na):
		err = fmt.Errorf("%w: %s", ErrControllerDown, na)
	case err != nil && !errors.Is(err, ErrControllerDown):
		return nil
	case err != nil:
		// Ping's message carries scontrol's banner of asterisks: keep what precedes it.
		msg := err.Error()
		if i := strings.Index(msg, "*"); i > 0 {
			msg = strings.TrimRight(msg[:i], " ;")
		}
		err = fmt.Errorf("%w%s", ErrControllerDown, strings.TrimPrefix(msg, ErrControllerDown.Error()))
	}
	s.noteReach(err)
	return err
}

// downError is whileReachable's error when the ping found the controller down.
type downError struct{ err error }

func (e *downError) Error() string { return e.err.Error() }
func (e *downError) Unwrap() error { return e.err }

// pingAfter is how long a command gets to answer before whileReachable pings the
// controller. A live slurmctld answers scontrol and squeue in milliseconds; the ping
// is a second Slurm process (about 3 ms of CPU, as much as the command itself) that
// would otherwise run beside every status and list on a machine that may be busy.
const pingAfter = 150 * time.Millisecond

// whileReachable runs ask (a Slurm command) and, unless a recent ping answers for it,
// pings slurmctld if ask has not succeeded within pingAfter: a command to a controller
// that is down would retry for about 18 s, and so when the ping says down, ask is
// stopped and a *downError returned. A command that fails (but for errGone, which is
// slurmctld's own answer) is followed by the ping too, which says whether the failure
// was the controller's. A command that succeeds while the ping runs is answered at
// once, the ping stopped: on a busy machine a squeue past pingAfter was otherwise
// held until its ping had ended too (a second Slurm process, 30-60 ms there).
func whileReachable[T any](ctx context.Context, s *Scheduler, ask func(context.Context) (T, error)) (T, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		v   T
		err error
	}
	got := make(chan answer, 1)
	go func() {
		v, err := ask(actx)
		got <- answer{v, err}
	}()
	var failed *answer // ask's failure, which waits for the ping's word
	known := s.reachKnown()
	if !known {
		t := time.NewTimer(pingAfter)
		select {
		case a := <-got:
			t.Stop()
			if a.err == nil || errors.Is(a.err, errGone) {
				return a.v, a.err // slurmctld answered
			}
			failed = &a
		case <-t.C:
		}
	}
	pctx, stopPing := context.WithCancel(ctx)
	defer stopPing()
	pinged := make(chan error, 1)
	go func() { pinged <- s.reachable(pctx) }()
	var err error
	if known {
		err = <-pinged // at once: the last ping's word
	} else if failed == nil {
		select {
		case a := <-got:
			if a.err == nil || errors.Is(a.err, errGone) {
				return a.v, a.err // slurmctld answered: the ping (stopped) has nothing to add
			}
			failed = &a
			err = <-pinged
		case err = <-pinged:
		}
	} else {
		err = <-pinged
	}
	if err != nil {
		cancel()
		if failed == nil {
			<-got
		}
		var zero T
		if errors.Is(err, ErrControllerDown) {
			return zero, &downError{err}
		}
		return zero, err
	}
	if failed != nil {
		return failed.v, failed.err
	}
	a := <-got
	return a.v, a.err
}

// reachKnown reports whether a ping within pingEvery already says whether slurmctld
// answers (reachable answers from it at once).
func (s *Scheduler) reachKnown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.reach.checked.IsZero() && time.Since(s.reach.checked) < pingEvery
}

// noteReach records what a ping, or a command that met a controller that is down,
// learnt.
func (s *Scheduler) noteReach(err error) {
	s.mu.Lock()
	s.reach = reachState{checked: time.Now(), err: err}
	s.mu.Unlock()
}

// lastKnown is the status of a job whose controller does not answer: what the
// replicas' exit files say, else the state last seen, marked as such.
func (s *Scheduler) lastKnown(rec *record, cause error) spec.AppStatus {
	st := s.fromRecord(rec, slurmUnreachable)
	if st.State.Terminal() {
		return st
	}
	if rec.Last != nil {
		st.State = rec.Last.State
	}
	note := "Slurm controller unreachable: last known state " + lastSeen(rec)
	st.Msg, st.LastKnown = note, true
	st.Warnings = append(st.Warnings, note+" ("+cause.Error()+")")
	return st
}

// The notices slurmstepd and wick's batch script leave in a job's files, which say
// how a job ended once Slurm itself has forgotten it (and the script's line of a
// rendezvous port in use, portRefused).
var (
	// srunExitRe is the batch script's own line (see script).
	srunExitRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^wick: srun exited with code (\d+)$`) })
	// cancelRe is slurmstepd's notice, in the batch log and in every replica's .err:
	// "slurmstepd: error: *** JOB 12 ON node1 CANCELLED AT 2026-11-25T21:09:15 DUE TO TIME LIMIT ***".
	cancelRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\*\*\* (?:JOB|STEP) [0-9.+]+ ON \S+ CANCELLED AT \S+( DUE TO TIME LIMIT)?`)
	})
)

// maxEvidence is how much of the end of each file is read for those notices.
const maxEvidence = 64 << 10

// evidence is what a forgotten job's files say of its end.
type evidence struct {
	code      *int // srun's exit status, from the batch log
	port      int  // the chosen rendezvous port the batch script found in use
	cancelled bool
	timeLimit bool
	source    string // the file that said it
	at        time.Time
}

// endEvidence reads the end of the batch log and of every replica's .err.
func endEvidence(rec *record) evidence {
	var ev evidence
	look := func(path string) {
		tail, mod, err := readTail(path, maxEvidence)
		if err != nil {
			return
		}
		said := false
		if m := srunExitRe().FindAllSubmatch(tail, -1); len(m) > 0 {
			if c, err := strconv.Atoi(string(m[len(m)-1][1])); err == nil {
				ev.code, said = spec.IntPtr(c), true
			}
		}
		if p := portRefused(tail, rec.App); p != 0 && path == rec.BatchLog {
			ev.port, said = p, true // the last attempt stopped before srun
		}
		if m := cancelRe().FindAllSubmatch(tail, -1); len(m) > 0 {
			ev.cancelled, said = true, true
			ev.timeLimit = ev.timeLimit || len(m[len(m)-1][1]) > 0
		}
		if said {
			if ev.source == "" || ev.timeLimit && !strings.HasSuffix(ev.source, ".err") {
				ev.source = path
			}
			if mod.After(ev.at) {
				ev.at = mod
			}
		}
	}
	look(rec.BatchLog)
	for _, r := range rec.Replicas {
		look(r.Stderr)
	}
	return ev
}

// readTail reads at most max bytes of the end of a file, and its modification time.
func readTail(path string, limit int64) ([]byte, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, time.Time{}, fmt.Errorf("%s: not a regular file", path)
	}
	off := max(0, fi.Size()-limit)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	return b, fi.ModTime(), err
}
