package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// States maps Slurm's job states to wick's, as TorchX does. States it does not list
// read UNKNOWN.
var States = map[string]spec.AppState{
	"BOOT_FAIL":     spec.Failed,
	"CANCELLED":     spec.Cancelled,
	"COMPLETED":     spec.Succeeded,
	"DEADLINE":      spec.Failed,
	"FAILED":        spec.Failed,
	"NODE_FAIL":     spec.Failed,
	"OUT_OF_MEMORY": spec.Failed,
	"PENDING":       spec.Pending,
	"PREEMPTED":     spec.Failed,
	"RUNNING":       spec.Running,
	"REQUEUED":      spec.Pending,
	"REQUEUE_FED":   spec.Pending,
	"REQUEUE_HOLD":  spec.Pending,
	"RESIZING":      spec.Pending,
	"REVOKED":       spec.Failed,
	"SUSPENDED":     spec.Pending,
	"STOPPED":       spec.Pending,
	"TIMEOUT":       spec.Failed,
	"COMPLETING":    spec.Running,
	"CONFIGURING":   spec.Pending,
	"SPECIAL_EXIT":  spec.Failed,
	"SIGNALING":     spec.Running,
	"STAGE_OUT":     spec.Running,
}

// StateOf maps a Slurm state as squeue, scontrol or sacct print it ("CANCELLED by 0",
// "CANCELLED+", "RUNNING") to wick's.
func StateOf(slurm string) spec.AppState {
	f := strings.Fields(slurm)
	if len(f) == 0 {
		return spec.UnknownState
	}
	if st, ok := States[strings.TrimRight(f[0], "+")]; ok {
		return st
	}
	return spec.UnknownState
}

// ParseExitCode reads scontrol's and sacct's "CODE:SIGNAL" into an exit code (128+N
// for signal N).
func ParseExitCode(s string) (int, bool) {
	code, sig, ok := strings.Cut(strings.TrimSpace(s), ":")
	c, err1 := strconv.Atoi(code)
	if !ok {
		return c, err1 == nil
	}
	n, err2 := strconv.Atoi(sig)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	if n != 0 {
		return 128 + n, true
	}
	return c, true
}

// component is one job component as Slurm reports it.
type component struct {
	JobID    string // the component's own id
	Leader   string // the het job's leader id (JobID for a plain job)
	Offset   int
	Name     string
	State    string
	Reason   string
	Nodes    string
	ExitCode string // "CODE:SIGNAL", "" when unknown
	Restarts int
	Submit   time.Time
	Start    time.Time
	End      time.Time
}

// slurmTime reads Slurm's local times ("2026-11-23T13:28:26"); "Unknown", "N/A" and
// "None" are the zero time.
func slurmTime(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(s), time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}

// errGone says Slurm no longer knows a job (never did, or purged it).
var errGone = errors.New("job not known to slurmctld")

// scontrolJob asks scontrol for a job's components.
func scontrolJob(ctx context.Context, id string) ([]component, error) {
	return scontrolAnswer(start(ctx, nil, "scontrol", "show", "job", "-o", id).wait())
}

// scontrolAnswer reads scontrol's answer of a job's components.
func scontrolAnswer(out []byte, err error) ([]component, error) {
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && strings.Contains(ce.Stderr, "Invalid job id") {
			return nil, errGone
		}
		return nil, err
	}
	var comps []component
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := scontrolFields(line)
		c := component{
			JobID:    f["JobId"],
			Leader:   f["HetJobId"],
			Name:     f["JobName"],
			State:    f["JobState"],
			Reason:   f["Reason"],
			Nodes:    f["NodeList"],
			ExitCode: f["ExitCode"],
			Submit:   slurmTime(f["SubmitTime"]),
			Start:    slurmTime(f["StartTime"]),
			End:      slurmTime(f["EndTime"]),
		}
		if c.Leader == "" {
			c.Leader = c.JobID
		}
		c.Offset, _ = strconv.Atoi(f["HetJobOffset"])
		c.Restarts, _ = strconv.Atoi(f["Restarts"])
		if c.Nodes == "(null)" {
			c.Nodes = ""
		}
		comps = append(comps, c)
	}
	if len(comps) == 0 {
		return nil, errGone
	}
	return comps, nil
}

// scontrolFields splits a one-line scontrol record into its Key=Value fields. Values
// run to the next " Key=" (JobName may hold spaces; Command and WorkDir are last).
func scontrolFields(line string) map[string]string {
	f := map[string]string{}
	words := strings.Split(strings.TrimSpace(line), " ")
	key := ""
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if ok && k != "" && !strings.ContainsAny(k, "/:") || ok && (k == "AllocNode:Sid" || k == "CPUs/Task") {
			key = k
			f[key] = v
			continue
		}
		if key != "" {
			f[key] += " " + w
		}
	}
	return f
}

// sacctJob asks the accounting database for a job's components. It returns errGone
// when accounting is disabled or knows no such job.
func sacctJob(ctx context.Context, id string) ([]component, error) {
	out, err := command(ctx, nil, "sacct", "-n", "-P", "-X", "-j", id,
		"-o", "JobID,State,ExitCode,NodeList,Submit,Start,End,Reason,JobName")
	if err != nil {
		var ce *CommandError
		var na *NoAnswerError
		if errors.As(err, &ce) || errors.As(err, &na) {
			return nil, errGone // accounting disabled ("Slurm accounting storage is disabled"), down or hung
		}
		return nil, err
	}
	var comps []component
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, "|", 9)
		if len(f) < 9 {
			continue
		}
		c := component{JobID: f[0], Leader: f[0], State: f[1], ExitCode: f[2], Nodes: f[3],
			Submit: slurmTime(f[4]), Start: slurmTime(f[5]), End: slurmTime(f[6]), Reason: f[7], Name: f[8]}
		if lead, off, ok := strings.Cut(f[0], "+"); ok {
			c.Leader = lead
			c.Offset, _ = strconv.Atoi(off)
		}
		if c.Leader != id {
			continue
		}
		if c.Nodes == "None assigned" {
			c.Nodes = ""
		}
		comps = append(comps, c)
	}
	if len(comps) == 0 {
		return nil, errGone
	}
	return comps, nil
}

// Describe returns the job's status: from scontrol while slurmctld holds the job, then
// from sacct when accounting is enabled, else from what wick recorded. A controller
// that does not answer is not waited on when wick has a record: the status is the
// last known one, marked as such (see reachable).
func (s *Scheduler) Describe(ctx context.Context, appID string) (*sched.Description, error) {
	d, _, err := s.describe(ctx, appID)
	if err == nil {
		s.torchrunCause(ctx, appID, &d.Status, d.App) // ranks.go
	}
	return d, err
}

// describe is Describe, and whether Slurm has forgotten a job whose end its files do
// not tell (it has ended, in a state nobody knows: waiting for more is in vain).
func (s *Scheduler) describe(ctx context.Context, appID string) (*sched.Description, bool, error) {
	if err := validJobID(appID); err != nil {
		return nil, false, err
	}
	b, err := s.readRecord(appID)
	if err != nil {
		return nil, false, err
	}
	var rec *record
	if b != nil && endedRecord(b) {
		if rec, err = decodeRecord(appID, b); err != nil {
			return nil, false, err
		}
		if rec.ended() {
			// Nothing can change the end of a job slurmctld has purged: it is not asked.
			return s.recordDescription(rec, s.fromRecord(rec, slurmForgot)), false, nil
		}
	}
	comps, gone, err := s.askJob(ctx, appID, b, &rec)
	var down *downError
	switch {
	case errors.As(err, &down):
		return s.recordDescription(rec, s.lastKnown(rec, down.err)), false, nil
	case errors.Is(err, ErrNoSlurm) && rec != nil:
		return s.recordDescription(rec, s.fromRecord(rec, noSlurmHere)), false, nil
	case errors.Is(err, errGone) && rec == nil:
		return nil, false, fmt.Errorf("%w: job %s is not known to Slurm and was not submitted by wick from here", sched.ErrNotFound, appID)
	case errors.Is(err, errGone):
		st := s.fromRecord(rec, slurmForgot)
		if st.State.Terminal() && !endedRecord(b) {
			last := st
			rec.Last, rec.Ended = &last, true
			_ = s.saveRecord(rec) // best effort: without it, Slurm is asked again
		}
		return s.recordDescription(rec, st), !st.State.Terminal(), nil
	case err != nil:
		return nil, false, err
	}
	if rec == nil && !isWick(comps) {
		return nil, false, fmt.Errorf("%w: job %s was not submitted by wick (its name does not start with %q)", sched.ErrNotFound, appID, JobNamePrefix)
	}
	st := buildStatus(appID, comps, rec)
	ended := gone && st.State.Terminal() // from the accounting database: final too
	if rec != nil && (rec.Last == nil || rec.Ended != ended || rec.Last.State != st.State || rec.Last.NumRestarts != st.NumRestarts || runningChanged(rec.Last, &st)) {
		last := st
		rec.Last, rec.Seen, rec.Ended = &last, time.Now().UTC(), ended
		_ = s.saveRecord(rec) // best effort: the record only backs up Slurm's answer
	}
	if rec != nil {
		return s.recordDescription(rec, st), false, nil
	}
	return &sched.Description{Status: st, App: appFromComponents(comps)}, false, nil
}

// recordDescription describes a job wick has a record of.
func (s *Scheduler) recordDescription(rec *record, st spec.AppStatus) *sched.Description {
	return &sched.Description{Status: st, App: rec.App, Cfg: s.RunOpts().CfgValues(rec.Cfg)}
}

// askJob asks slurmctld for the job's components and, once it no longer holds the job
// (gone: it said so, or holds another job under the id), the accounting database,
// which returns errGone when it is disabled or knows no such job either. The record,
// from its bytes b (nil: none), is decoded into *recp while scontrol runs. A controller
// that does not answer is not waited on (see whileReachable): with a record, the error
// is a *downError.
func (s *Scheduler) askJob(ctx context.Context, appID string, b []byte, recp **record) (comps []component, gone bool, err error) {
	type job struct {
		comps []component
		err   error
	}
	qctx, stopAsk := context.WithCancel(ctx)
	defer stopAsk()
	asked := make(chan job, 1)
	sc := start(qctx, nil, "scontrol", "show", "job", "-o", appID)
	go func() {
		comps, err := scontrolAnswer(sc.wait())
		asked <- job{comps, err}
	}()
	answer := func(ctx context.Context) ([]component, error) {
		select {
		case j := <-asked:
			return j.comps, j.err
		case <-ctx.Done():
			stopAsk()
			<-asked // scontrol killed, with what it started (execx): nothing outlives wick
			return nil, ctx.Err()
		}
	}
	rec := *recp
	if rec == nil && b != nil {
		if rec, err = decodeRecord(appID, b); err != nil {
			stopAsk()
			<-asked
			return nil, false, err
		}
		*recp = rec
	}
	// Ping only if no answer comes soon (see whileReachable): a controller that is down
	// is known in milliseconds, not after scontrol's deadline.
	comps, err = whileReachable(ctx, s, answer)
	var down *downError
	if rec == nil && errors.As(err, &down) {
		err = down.err // no record to answer from: the error is the answer
	}
	if errors.Is(err, ErrControllerDown) && !errors.As(err, &down) {
		s.noteReach(err)
		if rec != nil {
			err = &downError{err}
		}
	}
	if err == nil && rec != nil && !rec.owns(comps) {
		err = errGone // the id is another job's now (a cluster whose job ids started over)
	}
	if !errors.Is(err, errGone) {
		return comps, false, err
	}
	comps, err = sacctJob(ctx, appID)
	if errors.Is(err, ErrNoSlurm) || err == nil && rec != nil && !rec.owns(comps) {
		err = errGone
	}
	return comps, true, err
}

// runningChanged reports whether the count of running or ended replicas changed.
func runningChanged(a, b *spec.AppStatus) bool {
	ra, ta := a.Replicas()
	rb, tb := b.Replicas()
	_, ea := a.ExitCode()
	_, eb := b.ExitCode()
	return ra != rb || ta != tb || ea != eb
}

// owns reports whether the components are the record's job: one of them has a name
// the record gave.
func (r *record) owns(comps []component) bool {
	for _, c := range comps {
		if r.hasJobName(c.Name) {
			return true
		}
	}
	return false
}

func isWick(comps []component) bool {
	for _, c := range comps {
		if strings.HasPrefix(c.Name, JobNamePrefix) {
			return true
		}
	}
	return false
}

// appFromComponents rebuilds what it can of an AppDef from the job's names.
func appFromComponents(comps []component) *spec.AppDef {
	app := &spec.AppDef{}
	for _, c := range comps {
		_, name, role, _, ok := parseJobName(c.Name)
		if !ok {
			continue
		}
		app.Name = name
		if r := app.Role(role); r != nil {
			r.NumReplicas++
			continue
		}
		r := spec.NewRole(role, "", spec.Unknown)
		app.Roles = append(app.Roles, r)
	}
	return app
}

// buildStatus makes the app's status from its components, the replicas' exit files
// and the record.
func buildStatus(id string, comps []component, rec *record) spec.AppStatus {
	sort.Slice(comps, func(i, j int) bool { return comps[i].Offset < comps[j].Offset })
	lead := comps[0]
	st := jobStatus(id, lead, rec)
	roles := roleSet{byName: map[string]*spec.RoleStatus{}}
	for _, c := range comps {
		_, app, role, k, ok := parseJobName(c.Name)
		if !ok {
			role, k = c.Name, c.Offset
		}
		if st.Name == "" {
			st.Name = app
		}
		rs := roles.get(role)
		rs.Replicas = append(rs.Replicas, replicaStatus(c, role, k, rec, st.State))
	}
	if st.State.Terminal() && st.State != spec.Succeeded {
		roles.jobExitCode(lead)
	}
	for _, role := range roles.order {
		rs := roles.byName[role]
		sort.Slice(rs.Replicas, func(i, j int) bool { return rs.Replicas[i].ID < rs.Replicas[j].ID })
		st.Roles = append(st.Roles, *rs)
	}
	if st.State.Terminal() {
		lastEnd(&st)
	}
	if st.State == spec.Failed {
		failFast(&st)
		portRefusedCause(rec, &st) // ranks.go
	}
	return st
}

// jobStatus is the app's status as its lead component (the job) says: its state,
// times and why it waits or ended; the record's name and submission time.
func jobStatus(id string, lead component, rec *record) spec.AppStatus {
	st := spec.AppStatus{AppID: id, State: StateOf(lead.State), NumRestarts: lead.Restarts, Created: lead.Submit}
	if st.State.Terminal() {
		st.Ended = lead.End
	}
	if rec != nil {
		st.Name = rec.App.Name
		if !rec.Submitted.IsZero() {
			st.Created = rec.Submitted
		}
	}
	switch {
	case st.State == spec.Pending && lead.Reason != "" && lead.Reason != "None":
		st.Msg = "pending: " + lead.Reason
	case st.State.Terminal() || st.State == spec.UnknownState:
		st.Msg = strings.TrimSpace(lead.State + " " + reasonText(lead.Reason))
	}
	return st
}

// replicaStatus is the status of replica k of role, from its component c and, once
// it has started, its exit file; app is the app's state.
func replicaStatus(c component, role string, k int, rec *record, app spec.AppState) spec.ReplicaStatus {
	state := StateOf(c.State)
	rep := spec.ReplicaStatus{ID: k, Role: role, State: state, Hostname: c.Nodes, Restarts: c.Restarts}
	if ran(c, state) {
		rep.Started = c.Start
	}
	if state.Terminal() {
		rep.Ended = c.End
	}
	if rec != nil {
		for _, r := range rec.Replicas {
			if r.Role != role || r.Replica != k {
				continue
			}
			rep.LogDir = rec.JobDir
			// A requeued job waits PENDING with the last attempt's exit files,
			// which the next attempt removes: they are not this attempt's.
			if state.Started() {
				applyExitFile(&rep, r.ExitFile, app)
				applyGroupRank(&rep, r.ExitFile)
			}
		}
	}
	if rep.State == spec.Pending && c.Reason != "" && c.Reason != "None" {
		rep.StructuredError = "pending: " + c.Reason
	}
	return rep
}

// ran reports whether a component has started: Slurm's StartTime of a pending job is
// when it expects to start it (a time to come), and a job cancelled while pending
// has one but never had nodes.
func ran(c component, state spec.AppState) bool {
	return state != spec.Pending && c.Nodes != "" && !c.Start.IsZero()
}

// roleSet gathers the replicas' statuses by role, the roles in the order first seen.
type roleSet struct {
	byName map[string]*spec.RoleStatus
	order  []string
}

func (s *roleSet) get(role string) *spec.RoleStatus {
	rs, ok := s.byName[role]
	if !ok {
		rs = &spec.RoleStatus{Role: role}
		s.byName[role] = rs
		s.order = append(s.order, role)
	}
	return rs
}

// jobExitCode puts Slurm's exit code of the job (the batch script's) on the first
// replica when no replica left an exit status (killed, or never started): it stands
// for the job.
func (s *roleSet) jobExitCode(lead component) {
	for _, rs := range s.byName {
		for _, rep := range rs.Replicas {
			if rep.ExitCode != nil {
				return
			}
		}
	}
	// A zero says nothing of a job that did not succeed (cancelled while pending:
	// "0:0"): no exit code is shown rather than a 0 that reads as success.
	if code, ok := ParseExitCode(lead.ExitCode); ok && code != 0 && len(s.order) > 0 && len(s.byName[s.order[0]].Replicas) > 0 {
		s.byName[s.order[0]].Replicas[0].ExitCode = spec.IntPtr(code)
	}
}

// lastEnd makes the end of an ended app that of its last replica: Slurm's times are
// whole seconds, the exit files' finer. It is never before the app's creation.
func lastEnd(st *spec.AppStatus) {
	for _, r := range st.Roles {
		for _, rep := range r.Replicas {
			if rep.Ended.After(st.Ended) {
				st.Ended = rep.Ended
			}
		}
	}
	if st.Ended.Before(st.Created) {
		st.Ended = st.Created
	}
}

// failFast names the replica that failed first as the app's error, and marks the
// replicas srun stopped because of it (--kill-on-bad-exit: killed by a signal after
// that failure) CANCELLED, as the local schedulers do.
func failFast(st *spec.AppStatus) {
	var first *spec.ReplicaStatus
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			rep := &st.Roles[i].Replicas[j]
			if rep.ExitCode == nil || *rep.ExitCode == 0 || *rep.ExitCode > 128 {
				continue
			}
			if first == nil || rep.Ended.Before(first.Ended) {
				first = rep
			}
		}
	}
	if first == nil {
		for i := range st.Roles {
			for j := range st.Roles[i].Replicas {
				if rep := &st.Roles[i].Replicas[j]; rep.ExitCode != nil && *rep.ExitCode != 0 && first == nil {
					first = rep
				}
			}
		}
	}
	if first == nil {
		return
	}
	st.StructuredError = fmt.Sprintf("%s/%d exited with code %d", first.Role, first.ID, *first.ExitCode)
	if e := first.StructuredError; e != "" && !strings.HasPrefix(e, "exited with code") {
		st.StructuredError = first.Role + "/" + strconv.Itoa(first.ID) + ": " + e
	}
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			rep := &st.Roles[i].Replicas[j]
			if rep == first || *first.ExitCode > 128 {
				continue
			}
			if rep.ExitCode == nil && rep.State == spec.Failed || rep.ExitCode != nil && *rep.ExitCode > 128 && !rep.Ended.Before(first.Ended) {
				rep.State = spec.Cancelled
				rep.StructuredError = fmt.Sprintf("stopped: %s/%d failed", first.Role, first.ID)
			}
		}
	}
}

func reasonText(r string) string {
	if r == "" || r == "None" {
		return ""
	}
	return "(" + r + ")"
}

// maxErrorFile bounds a torchelastic error file read for a status.
const maxErrorFile = 1 << 20

// applyExitFile sets a replica's end from its exit file, if it has one: a replica can
// end before the job does, and Slurm keeps one exit code for the whole job.
func applyExitFile(rep *spec.ReplicaStatus, path string, app spec.AppState) {
	b, err := readBounded(path, 64)
	if err != nil {
		return
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	rep.ExitCode = spec.IntPtr(code)
	if fi, err := os.Stat(path); err == nil {
		rep.Ended = fi.ModTime()
	}
	switch {
	case code == 0:
		rep.State = spec.Succeeded
	case app == spec.Cancelled:
		rep.State = spec.Cancelled
	default:
		rep.State = spec.Failed
		rep.StructuredError = fmt.Sprintf("exited with code %d", code)
		if raw, err := readBounded(errorFile(path), maxErrorFile); err == nil && len(raw) > 0 {
			rep.StructuredError = spec.ErrorMessage(string(raw))
		}
	}
}

// applyGroupRank sets a torchrun node's group rank from the .rank file the replica's
// wrapper writes beside its exit file, if it has one.
func applyGroupRank(rep *spec.ReplicaStatus, exitFile string) {
	b, err := readBounded(strings.TrimSuffix(exitFile, ".exit")+".rank", 64)
	if err != nil {
		return
	}
	if g, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && g >= 0 {
		rep.GroupRank = spec.IntPtr(g)
	}
}

// unasked is why a status comes from wick's record rather than from Slurm.
type unasked int

const (
	slurmForgot      unasked = iota // slurmctld answered, and holds no such job
	slurmUnreachable                // slurmctld did not answer
	noSlurmHere                     // Slurm's commands are not installed here
)

// from says where a status from the record came from, for its message.
func (u unasked) from() string {
	switch u {
	case slurmForgot:
		return "Slurm no longer knows the job"
	case noSlurmHere:
		return "no Slurm commands here"
	default:
		return "Slurm controller unreachable"
	}
}

// fromRecord answers from wick's record: the last status wick saw, with the replicas'
// exit files. Every replica that left an exit status decides the state. When Slurm
// has forgotten the job (slurmForgot: it answered, and knows no such job), the job has
// ended: what its files say of the end (the batch log's "srun exited with code N",
// slurmstepd's "CANCELLED AT ... DUE TO TIME LIMIT") decides for the replicas that
// left none, and none of them stays RUNNING; with no such word the state is UNKNOWN,
// never a guess.
func (s *Scheduler) fromRecord(rec *record, why unasked) spec.AppStatus {
	var st spec.AppStatus
	if rec.Last != nil {
		st = *rec.Last
		st.Roles = cloneRoles(rec.Last.Roles)
		st.Warnings = nil
	} else {
		st = spec.AppStatus{State: spec.UnknownState}
		for _, r := range rec.App.Roles {
			rs := spec.RoleStatus{Role: r.Name}
			for k := range r.NumReplicas {
				rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{ID: k, Role: r.Name, State: spec.UnknownState})
			}
			st.Roles = append(st.Roles, rs)
		}
	}
	st.AppID, st.Name, st.Created = rec.JobID, rec.App.Name, rec.Submitted
	if st.State.Terminal() {
		portRefusedCause(rec, &st) // Last has it, unless the batch log's line came late
		return st
	}
	all, failed := true, false
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			rep := &st.Roles[i].Replicas[j]
			for _, r := range rec.Replicas {
				if r.Role == rep.Role && r.Replica == rep.ID {
					applyExitFile(rep, r.ExitFile, spec.UnknownState)
					applyGroupRank(rep, r.ExitFile)
				}
			}
			if rep.ExitCode == nil {
				all = false
			} else if *rep.ExitCode != 0 {
				failed = true
			}
		}
	}
	switch {
	case all && failed:
		st.State = spec.Failed
	case all:
		st.State = spec.Succeeded
	case why == slurmForgot:
		s.concludeForgotten(rec, &st)
	default:
		st.State = spec.UnknownState
		st.Msg = fmt.Sprintf("%s: last known state %s", why.from(), lastSeen(rec))
	}
	if all {
		st.Msg = "ended; " + why.from() + ": state from the replicas' exit files"
		if why == slurmUnreachable {
			// Also a warning: the message gives way to the failure's cause (ranks.go),
			// and the user must still be told that Slurm was not asked.
			st.Warnings = append(st.Warnings, "Slurm controller unreachable: the state is from the replicas' exit files")
		}
	}
	if st.State.Terminal() {
		for _, r := range st.Roles {
			for _, rep := range r.Replicas {
				if rep.Ended.After(st.Ended) {
					st.Ended = rep.Ended
				}
			}
		}
	}
	portRefusedCause(rec, &st)
	return st
}

// concludeForgotten decides the end of a job Slurm has forgotten, some of whose
// replicas left no exit status, from what its files say (endEvidence).
func (s *Scheduler) concludeForgotten(rec *record, st *spec.AppStatus) {
	ev := endEvidence(rec)
	end := ev.at
	if end.IsZero() {
		end = rec.Seen
	}
	state, why := ev.verdict()
	var open []*spec.ReplicaStatus // the replicas that left no exit status
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			if rep := &st.Roles[i].Replicas[j]; rep.ExitCode == nil && !rep.State.Terminal() {
				open = append(open, rep)
			}
		}
	}
	for _, rep := range open {
		ev.close(rep, state, len(open) == 1)
		if rep.Ended.IsZero() && !rep.Started.IsZero() {
			rep.Ended = end
		}
		if rep.State == spec.Failed || rep.State == spec.UnknownState {
			rep.StructuredError = "no exit status: " + cmpOr(why, "Slurm no longer knows the job and its files do not say how it ended")
		}
	}
	// A replica that did fail decides the app's state over srun's word for it.
	for _, r := range st.Roles {
		for _, rep := range r.Replicas {
			if rep.ExitCode != nil && *rep.ExitCode != 0 && state != spec.Cancelled {
				state = spec.Failed
			}
		}
	}
	st.State = state
	if state == spec.UnknownState {
		st.Msg = fmt.Sprintf("Slurm no longer knows job %s (no accounting) and its files do not say how it ended; last seen %s", rec.JobID, lastSeen(rec))
		return
	}
	st.Msg = "ended; Slurm no longer knows the job: " + why
	if state == spec.Failed && st.StructuredError == "" {
		st.StructuredError = why
	}
}

// verdict is the state the evidence gives the job, and why; UNKNOWN and "" when it
// says nothing.
func (ev evidence) verdict() (spec.AppState, string) {
	switch {
	case ev.timeLimit:
		return spec.Failed, "killed by Slurm at its time limit (DUE TO TIME LIMIT in " + ev.source + ")"
	case ev.cancelled:
		return spec.Cancelled, "cancelled (CANCELLED in " + ev.source + ")"
	case ev.port != 0:
		return spec.Failed, ranks.PortInUse(ev.port) + " (in " + ev.source + ")"
	case ev.code != nil && *ev.code == 0:
		return spec.Succeeded, "srun exited with code 0 (in " + ev.source + ")"
	case ev.code != nil:
		return spec.Failed, fmt.Sprintf("srun exited with code %d (in %s)", *ev.code, ev.source)
	}
	return spec.UnknownState, ""
}

// close ends a replica that left no exit status (it ran, or waited, when last seen:
// it is over now, however it ended) in the job's state; alone says it is the only
// such replica, whose exit status srun's is.
func (ev evidence) close(rep *spec.ReplicaStatus, state spec.AppState, alone bool) {
	rep.State = state
	switch {
	case ev.timeLimit || ev.cancelled:
		// Slurm ended the whole job: every replica that was left.
	case ev.code != nil && *ev.code == 0:
		// srun exits 0 only when every task did.
		rep.ExitCode = spec.IntPtr(0)
	case alone && ev.code != nil:
		// srun's status is this replica's: the others left their own.
		rep.ExitCode = spec.IntPtr(*ev.code)
	default:
		rep.State = spec.UnknownState
	}
}

// cmpOr returns a, or b when a is "".
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// cloneRoles copies roles deeply enough to change their replicas.
func cloneRoles(roles []spec.RoleStatus) []spec.RoleStatus {
	out := make([]spec.RoleStatus, len(roles))
	for i, r := range roles {
		out[i] = spec.RoleStatus{Role: r.Role, Replicas: append([]spec.ReplicaStatus(nil), r.Replicas...)}
	}
	return out
}

func lastSeen(rec *record) string {
	if rec.Last == nil {
		return "never (submitted " + sched.Timestamp(rec.Submitted) + ")"
	}
	return rec.Last.State.String() + " at " + sched.Timestamp(rec.Seen)
}

// pollInterval bounds how often Wait asks Slurm, from the first poll to the slowest.
const (
	pollMin = 100 * time.Millisecond
	pollMax = 2 * time.Second
)

// Wait returns the job's status once it is terminal, polling Slurm with backoff (the
// runner would otherwise poll every few milliseconds, which is one scontrol each).
func (s *Scheduler) Wait(ctx context.Context, appID string) (*spec.AppStatus, error) {
	if st, ok := s.endedStatus(appID); ok {
		// A follower of its logs just saw it end (an attached run).
		if st.State == spec.Failed {
			if rec, err := s.loadRecord(appID); err == nil && rec != nil {
				st.Roles = cloneRoles(st.Roles)
				s.torchrunCause(ctx, appID, &st, rec.App)
			}
		}
		return &st, nil
	}
	delay := pollMin
	for {
		d, gone, err := s.describe(ctx, appID)
		if err != nil {
			return nil, err
		}
		if d.Status.State.Terminal() || gone {
			// A job Slurm has forgotten will not end later: its status says so.
			s.torchrunCause(ctx, appID, &d.Status, d.App)
			return &d.Status, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return &d.Status, ctx.Err()
		case <-t.C:
		}
		delay = min(delay*3/2, pollMax)
	}
}
