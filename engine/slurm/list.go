package slurm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/spec"
)

// squeueFormat is what List asks squeue for, one line per job component. The name
// comes last: it is the only field that may hold the separator.
const squeueFormat = "%i|%A|%T|%r|%N|%V|%S|%e|%j"

// List returns the jobs wick submitted with this state directory ($WICK_HOME): one
// squeue call for every job slurmctld holds, matched to wick's records by job id and
// component name (wick's names start with JobNamePrefix, which tells them from the
// user's other jobs and from a reused job id), plus the recorded jobs Slurm has
// forgotten, as last seen. With no record it asks Slurm nothing, so a machine without
// Slurm, or with its controller down, lists nothing rather than failing every
// `wick list`. A controller that is down is reported beside the recorded jobs.
func (s *Scheduler) List(ctx context.Context) ([]spec.AppStatus, error) {
	ids, err := s.recordIDs()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	// squeue runs while the records are read. A controller that is down would keep it
	// 18 s: whileReachable pings it then.
	type queue struct {
		out []byte
		err error
	}
	queued := make(chan queue, 1)
	qctx, stopQueue := context.WithCancel(ctx)
	defer stopQueue()
	sq := start(qctx, nil, "squeue", "-h", "--me", "-t", "all", "-o", squeueFormat) // here, before the records
	go func() {
		out, err := whileReachable(ctx, s, func(actx context.Context) ([]byte, error) {
			// whileReachable gives up on squeue by cancelling actx.
			defer context.AfterFunc(actx, stopQueue)()
			return sq.wait()
		})
		queued <- queue{out, err}
	}()
	recs := make(map[string]*record, len(ids))
	for _, id := range ids {
		if rec, err := s.loadRecord(id); err == nil && rec != nil {
			recs[id] = rec
		}
	}
	q := <-queued
	out, qerr := q.out, q.err
	var down *downError
	if errors.As(qerr, &down) {
		qerr = down.err
	}
	if errors.Is(qerr, ErrControllerDown) {
		s.noteReach(qerr)
	}
	why := slurmForgot // what squeue does not list, slurmctld no longer holds
	switch {
	case errors.Is(qerr, ErrNoSlurm):
		why, qerr = noSlurmHere, nil // answer from the records alone
	case qerr != nil:
		why = slurmUnreachable
	}
	jobs := map[string][]component{}
	if qerr == nil {
		for _, line := range strings.Split(string(out), "\n") {
			c, ok := parseSqueueLine(line)
			if !ok || recs[c.Leader] == nil || !recs[c.Leader].hasJobName(c.Name) {
				continue
			}
			jobs[c.Leader] = append(jobs[c.Leader], c)
		}
	}
	apps := make([]spec.AppStatus, 0, len(recs))
	for id, rec := range recs {
		var st spec.AppStatus
		switch comps := jobs[id]; {
		case len(comps) > 0:
			st = buildStatus(id, comps, rec)
		case errors.Is(qerr, ErrControllerDown):
			st = s.lastKnown(rec, qerr)
		default:
			st = s.fromRecord(rec, why)
		}
		st.Handle = spec.Handle{Scheduler: Name, Session: rec.Session, AppID: id}.String()
		apps = append(apps, st)
	}
	if errors.Is(qerr, ErrControllerDown) {
		qerr = fmt.Errorf("%w; the states shown are the last known", qerr)
	}
	return apps, qerr
}

// hasJobName reports whether name is one of the record's components.
func (r *record) hasJobName(name string) bool {
	for _, rep := range r.Replicas {
		if rep.JobName == name {
			return true
		}
	}
	return false
}

// parseSqueueLine reads one line of squeueFormat.
func parseSqueueLine(line string) (component, bool) {
	f := strings.SplitN(line, "|", 9)
	if len(f) < 9 {
		return component{}, false
	}
	c := component{JobID: f[1], Leader: f[0], State: f[2], Reason: f[3], Nodes: f[4],
		Submit: slurmTime(f[5]), Start: slurmTime(f[6]), End: slurmTime(f[7]), Name: f[8]}
	if lead, off, ok := strings.Cut(f[0], "+"); ok {
		c.Leader = lead
		c.Offset, _ = strconv.Atoi(off)
	}
	if validJobID(c.Leader) != nil {
		return component{}, false
	}
	return c, true
}
