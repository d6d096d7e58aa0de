package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// replica is what the Engine says of one container of an app.
type replica struct {
	sum container.Summary
	// info is nil when the container vanished between the listing and the inspection.
	info *container.InspectResponse
	// cancelled is set when wick's cancel marker is in the container.
	cancelled bool
	// err is the error file of a failed container.
	err errorInfo
}

func (r *replica) role() string { return r.sum.Labels[LabelRole] }

func (r *replica) id() int {
	k, err := strconv.Atoi(r.sum.Labels[LabelReplicaID])
	if err != nil {
		return -1
	}
	return k
}

// containers lists the containers of an app, in any state, and warns of those that
// carry its app id but are not wick's (see ownReplica).
func (s *Scheduler) containers(ctx context.Context, cli *client.Client, appID string) ([]container.Summary, []string, error) {
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", LabelAppID+"="+appID)})
	if err != nil {
		return nil, nil, s.engineErr(err)
	}
	own, warns := ownContainers(res.Items)
	return own, warns, nil
}

// notFound is the error for an app the Engine has no container of.
func notFound(appID string) error {
	return fmt.Errorf("%w %q on %s", sched.ErrNotFound, appID, Name)
}

// inspect fills in every container's details and cancel marker, concurrently.
func (s *Scheduler) inspect(ctx context.Context, cli *client.Client, sums []container.Summary) ([]*replica, error) {
	reps := make([]*replica, len(sums))
	err := forEach(ctx, len(sums), func(i int) error {
		r := &replica{sum: sums[i]}
		reps[i] = r
		res, err := cli.ContainerInspect(ctx, sums[i].ID, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return s.engineErr(err)
		}
		r.info = &res.Container
		if st := r.info.State; st != nil && !st.Running && !st.Restarting && !st.Paused {
			r.cancelled = hasMarker(ctx, cli, r.sum.ID)
			r.err = s.readErrorFile(ctx, cli, r)
		}
		return nil
	})
	return reps, err
}

// appContainers returns the Engine client, every container of the app and warnings of
// containers skipped, or an error wrapping sched.ErrNotFound when it has none.
func (s *Scheduler) appContainers(ctx context.Context, appID string) (*client.Client, []container.Summary, []string, error) {
	if err := spec.ValidateName("app id", appID); err != nil {
		return nil, nil, nil, err
	}
	cli, err := s.engine(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	sums, warns, err := s.containers(ctx, cli, appID)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(sums) == 0 {
		if len(warns) > 0 {
			return nil, nil, nil, fmt.Errorf("%w (%s)", notFound(appID), warns[0])
		}
		return nil, nil, nil, notFound(appID)
	}
	return cli, sums, warns, nil
}

// Describe reports the app's status per replica and rebuilds its AppDef from the
// containers' labels.
func (s *Scheduler) Describe(ctx context.Context, appID string) (*sched.Description, error) {
	cli, sums, warns, err := s.appContainers(ctx, appID)
	if err != nil {
		return nil, err
	}
	reps, err := s.inspect(ctx, cli, sums)
	if err != nil {
		return nil, err
	}
	d := s.describe(appID, reps)
	s.torchrunCause(ctx, d, reps)
	d.Status.Warnings = append(d.Status.Warnings, warns...)
	return d, nil
}

// listTimeout bounds a listing: an Engine that has not answered in this time counts
// as not answering (busy or hung), and the listing answers with the last rows it
// knows and one calm line.
const listTimeout = 10 * time.Second

// List returns one status per app (not per container), of every session, oldest
// first: the apps of this WICK_HOME only, the Engine filtering on LabelHome, so that
// no other home's container is listed or inspected (a shared Engine may hold many).
func (s *Scheduler) List(ctx context.Context) ([]spec.AppStatus, error) {
	return s.list(ctx, false)
}

// ListAllHomes is List with the apps of every WICK_HOME on the Engine, other homes'
// marked Foreign (wick list --all, the UI's A).
func (s *Scheduler) ListAllHomes(ctx context.Context) ([]spec.AppStatus, error) {
	return s.list(ctx, true)
}

// list lists the apps, of every home when all. An Engine that does not answer within
// listTimeout gives the last rows this scheduler listed, with an error that says so
// in one line (ErrEngineSlow), never the client's request.
func (s *Scheduler) list(ctx context.Context, all bool) ([]spec.AppStatus, error) {
	start := time.Now()
	limit := listTimeout
	if s.listTimeout > 0 {
		limit = s.listTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, err := s.listNow(lctx, all)
	if err == nil {
		s.mu.Lock()
		if s.lastList == nil {
			s.lastList = map[bool][]spec.AppStatus{}
		}
		s.lastList[all] = out
		s.mu.Unlock()
		return out, nil
	}
	if !errors.Is(err, ErrEngineSlow) && !errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.Canceled) {
		return nil, err
	}
	secs := max(1, int(time.Since(start).Round(time.Second)/time.Second))
	s.mu.Lock()
	last, known := s.lastList[all]
	s.mu.Unlock()
	if known {
		rows := slices.Clone(last)
		for i := range rows {
			rows[i].LastKnown = true // views say so
		}
		return rows, fmt.Errorf("%w in %d s; showing the last known rows", ErrEngineSlow, secs)
	}
	return nil, fmt.Errorf("%w in %d s", ErrEngineSlow, secs)
}

// listNow lists the apps as the Engine has them now.
func (s *Scheduler) listNow(ctx context.Context, all bool) ([]spec.AppStatus, error) {
	cli, err := s.engine(ctx)
	if err != nil {
		return nil, err
	}
	f := client.Filters{}.Add("label", LabelAppID)
	home := s.homeID()
	if home != "" && !all {
		f.Add("label", LabelHome+"="+home) // label filters all hold: the Engine ANDs them
	}
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, s.engineErr(err)
	}
	byID := map[string][]container.Summary{}
	for _, c := range res.Items {
		id := c.Labels[LabelAppID]
		byID[id] = append(byID[id], c)
	}
	var sums []container.Summary
	warns := map[string][]string{}
	for id, cs := range byID {
		own, w := ownContainers(cs)
		sums = append(sums, own...)
		warns[id] = w
	}
	reps, err := s.inspectListed(ctx, cli, sums)
	if err != nil {
		return nil, err
	}
	if home != "" && !all {
		listed := make(map[string]bool, len(res.Items))
		for _, c := range res.Items {
			listed[c.ID] = true
		}
		s.pruneEnded(listed)
	}
	byApp := map[string][]*replica{}
	for _, r := range reps {
		id := r.sum.Labels[LabelAppID]
		byApp[id] = append(byApp[id], r)
	}
	out := make([]spec.AppStatus, 0, len(byApp))
	for id, reps := range byApp {
		st := s.describe(id, reps).Status
		st.Warnings = append(st.Warnings, warns[id]...)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].AppID < out[j].AppID
	})
	return out, nil
}

// inspectListed is inspect for the listing: an ended container the ended cache
// holds needs no call at all; one that runs, only its inspection (no archive read);
// one that has ended since the last listing is inspected in full once and kept.
func (s *Scheduler) inspectListed(ctx context.Context, cli *client.Client, sums []container.Summary) ([]*replica, error) {
	reps := make([]*replica, len(sums))
	var todo []container.Summary
	var at []int
	for i, c := range sums {
		r := &replica{sum: c}
		if s.cachedReplica(r) {
			reps[i] = r
			continue
		}
		todo = append(todo, c)
		at = append(at, i)
	}
	got, err := s.inspect(ctx, cli, todo)
	if err != nil {
		return nil, err
	}
	for j, r := range got {
		reps[at[j]] = r
		s.keepReplica(r)
	}
	return reps, nil
}

// describe builds the description of an app from its containers.
func (s *Scheduler) describe(appID string, reps []*replica) *sched.Description {
	sort.Slice(reps, func(i, j int) bool {
		if reps[i].role() != reps[j].role() {
			return reps[i].role() < reps[j].role()
		}
		return reps[i].id() < reps[j].id()
	})
	rec := s.record(reps)
	app := rec.App
	if app == nil {
		app = rebuildApp(reps)
	}
	d := &sched.Description{App: app, Cfg: s.RunOpts().CfgValues(rec.Cfg)}
	st := &d.Status
	st.AppID, st.Scheduler, st.Name = appID, Name, app.Name
	st.Warnings = append(st.Warnings, rec.Warnings...)
	session := spec.DefaultSession
	for _, r := range reps {
		if v := r.sum.Labels[LabelSession]; v != "" {
			session = v
			break
		}
	}
	st.Handle = spec.Handle{Scheduler: Name, Session: session, AppID: appID}.String()
	st.Foreign = len(reps) == 0 || reps[0].sum.Labels[LabelHome] != s.homeID()

	byKey := map[string]*replica{}
	for _, r := range reps {
		byKey[r.role()+"/"+strconv.Itoa(r.id())] = r
	}
	var states []spec.ReplicaStatus
	var errAt []time.Time // when each of states wrote its error file, if it did
	for _, role := range app.Roles {
		rs := spec.RoleStatus{Role: role.Name}
		for k := range role.NumReplicas {
			key := role.Name + "/" + strconv.Itoa(k)
			r, ok := byKey[key]
			delete(byKey, key)
			var rep spec.ReplicaStatus
			var at time.Time
			if ok {
				rep, at = replicaStatus(r), r.err.at
			} else {
				rep = spec.ReplicaStatus{ID: k, Role: role.Name, State: spec.Failed, Hostname: containerName(appID, role.Name, k),
					StructuredError: "container " + containerName(appID, role.Name, k) + " was removed outside wick"}
			}
			rs.Replicas = append(rs.Replicas, rep)
			states = append(states, rep)
			errAt = append(errAt, at)
		}
		st.Roles = append(st.Roles, rs)
	}
	// Containers the AppDef does not account for (a partial record) still show.
	for _, r := range reps {
		key := r.role() + "/" + strconv.Itoa(r.id())
		if _, extra := byKey[key]; !extra {
			continue
		}
		rep := replicaStatus(r)
		states = append(states, rep)
		errAt = append(errAt, r.err.at)
		i := len(st.Roles) - 1
		if i < 0 || st.Roles[i].Role != rep.Role {
			st.Roles = append(st.Roles, spec.RoleStatus{Role: rep.Role})
			i++
		}
		st.Roles[i].Replicas = append(st.Roles[i].Replicas, rep)
	}

	for _, r := range reps {
		if r.info == nil {
			continue
		}
		if t := parseTime(r.info.Created); !t.IsZero() && (st.Created.IsZero() || t.Before(st.Created)) {
			st.Created = t
		}
	}
	if st.Created.IsZero() {
		for _, r := range reps {
			if t := time.Unix(r.sum.Created, 0); r.sum.Created > 0 && (st.Created.IsZero() || t.Before(st.Created)) {
				st.Created = t
			}
		}
	}
	appState(st, states, errAt)
	groupRanks(d)
	return d
}

// appState sets the app's state, restarts, message and end from its replicas': while
// any replica is not terminal the app is RUNNING (or PENDING, or SUBMITTED); once all
// are, it is CANCELLED if wick cancelled any, FAILED if any failed, else SUCCEEDED.
// errAt[i], when set, is when reps[i] wrote its error file: the app's error is the
// oldest error file's, as in TorchX, and its message names that replica.
func appState(st *spec.AppStatus, reps []spec.ReplicaStatus, errAt []time.Time) {
	first := oldestError(reps, errAt)
	if first >= 0 {
		st.StructuredError = reps[first].StructuredError
	}
	seen := map[spec.AppState]bool{}
	var failed []spec.ReplicaStatus
	for _, r := range reps {
		st.NumRestarts += r.Restarts
		if st.StructuredError == "" && r.StructuredError != "" {
			st.StructuredError = r.StructuredError
		}
		seen[r.State] = true
		if r.State == spec.Failed {
			failed = append(failed, r)
		}
		if r.State.Terminal() && r.Ended.After(st.Ended) {
			st.Ended = r.Ended
		}
	}
	st.State = combinedState(seen)
	if st.State == spec.Cancelled {
		st.Msg = "cancelled"
	}
	if !st.State.Terminal() {
		st.Ended = time.Time{}
	}
	if len(failed) > 0 && st.State != spec.Cancelled {
		f := failed[0]
		if first >= 0 {
			f = reps[first]
		}
		st.Msg = failureMsg(f, len(failed))
	}
}

// oldestError is the index of the failed replica with the oldest error file (errAt
// is when each replica's was written, zero without one), or -1.
func oldestError(reps []spec.ReplicaStatus, errAt []time.Time) int {
	first := -1
	for i, at := range errAt {
		if !at.IsZero() && reps[i].State == spec.Failed && (first < 0 || at.Before(errAt[first])) {
			first = i
		}
	}
	return first
}

// combinedState is the app's state from the states its replicas are in: the first of
// running, pending, submitted, unknown (a state of none of these), cancelled, failed
// that one is in; succeeded when all are.
func combinedState(seen map[spec.AppState]bool) spec.AppState {
	for _, s := range []spec.AppState{spec.Running, spec.Pending, spec.Submitted} {
		if seen[s] {
			return s
		}
	}
	for s := range seen {
		switch s {
		case spec.Cancelled, spec.Failed, spec.Succeeded:
		default:
			return spec.UnknownState
		}
	}
	for _, s := range []spec.AppState{spec.Cancelled, spec.Failed} {
		if seen[s] {
			return s
		}
	}
	return spec.Succeeded
}

// failureMsg is the app's message when replica f's failure failed it, n replicas
// having failed: its exit code and its error's first line.
func failureMsg(f spec.ReplicaStatus, n int) string {
	var msg string
	switch {
	case f.ExitCode != nil:
		msg = fmt.Sprintf("replica %s/%d exited with code %d", f.Role, f.ID, *f.ExitCode)
		if e := spec.ErrorMessage(f.StructuredError); e != "" {
			msg += ": " + firstLine(e)
		}
	case f.StructuredError != "":
		msg = fmt.Sprintf("replica %s/%d: %s", f.Role, f.ID, firstLine(spec.ErrorMessage(f.StructuredError)))
	}
	if n > 1 {
		msg += fmt.Sprintf(" (and %d more failed)", n-1)
	}
	return msg
}

// replicaStatus maps one container's state to a replica status. Docker's states:
// created -> SUBMITTED, running -> RUNNING, restarting/paused/removing -> PENDING,
// exited -> SUCCEEDED or FAILED by exit code, dead -> FAILED; a replica wick cancelled
// reads CANCELLED once it has ended.
func replicaStatus(r *replica) spec.ReplicaStatus {
	rep := spec.ReplicaStatus{ID: r.id(), Role: r.role(), ContainerID: r.sum.ID}
	if len(r.sum.Names) > 0 {
		rep.Hostname = trimSlash(r.sum.Names[0])
	}
	if r.info == nil || r.info.State == nil {
		rep.State = spec.Failed
		rep.StructuredError = "container " + rep.Hostname + " was removed outside wick"
		return rep
	}
	info, cs := r.info, r.info.State
	if info.Config != nil && info.Config.Hostname != "" {
		rep.Hostname = info.Config.Hostname
	}
	rep.Restarts = info.RestartCount
	rep.Started = parseTime(cs.StartedAt)
	switch cs.Status {
	case container.StateCreated:
		rep.State = spec.Submitted
	case container.StateRunning:
		rep.State = spec.Running
	case container.StateRestarting, container.StatePaused, container.StateRemoving:
		rep.State = spec.Pending
	case container.StateExited:
		rep.ExitCode = spec.IntPtr(cs.ExitCode)
		rep.Ended = parseTime(cs.FinishedAt)
		if cs.ExitCode == 0 {
			rep.State = spec.Succeeded
		} else {
			rep.State = spec.Failed
		}
	case container.StateDead:
		rep.State = spec.Failed
		rep.Ended = parseTime(cs.FinishedAt)
		rep.StructuredError = "container is dead (the Engine failed to stop or remove it)"
	default:
		rep.State = spec.UnknownState
	}
	if !rep.Ended.IsZero() && rep.Ended.Before(rep.Started) {
		// Docker stamps the start once the process is running: a replica that ends at
		// once can end "before" it started.
		rep.Started = rep.Ended
	}
	if r.cancelled && (rep.State.Terminal() || rep.State == spec.Submitted) {
		rep.State = spec.Cancelled
	}
	switch {
	case cs.OOMKilled:
		rep.StructuredError = "killed: out of memory (memMB limit)"
	case r.err.text != "":
		rep.StructuredError = r.err.text
	case cs.Error != "":
		rep.StructuredError = cs.Error
	}
	return rep
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func trimSlash(name string) string {
	if len(name) > 0 && name[0] == '/' {
		return name[1:]
	}
	return name
}

// parseTime reads the Engine's RFC 3339 times; its zero time ("0001-01-01T00:00:00Z")
// reads as the zero time.Time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// record returns the app record of the first container that carries one.
func (s *Scheduler) record(reps []*replica) appRecord {
	for _, r := range reps {
		raw := r.sum.Labels[LabelApp]
		if raw == "" {
			continue
		}
		var rec appRecord
		if len(raw) > maxRecord || json.Unmarshal([]byte(raw), &rec) != nil || rec.App == nil || rec.App.Validate() != nil {
			continue // not one wick wrote: rebuild what the labels say
		}
		return rec
	}
	return appRecord{}
}

// rebuildApp makes what AppDef it can from labels alone: roles, their images and
// replica counts. The replicas it accounts for are at most spec.MaxReplicas in all;
// containers past that still show, as extras (see describe).
func rebuildApp(reps []*replica) *spec.AppDef {
	app := &spec.AppDef{}
	total := 0
	for _, r := range reps {
		if app.Name == "" {
			app.Name = r.sum.Labels[LabelAppID]
		}
		role := app.Role(r.role())
		if role == nil {
			app.Roles = append(app.Roles, spec.NewRole(r.role(), r.sum.Image, spec.Unknown))
			role = &app.Roles[len(app.Roles)-1]
			role.NumReplicas = 0
		}
		if n := max(role.NumReplicas, r.id()+1); total+n-role.NumReplicas <= spec.MaxReplicas {
			total += n - role.NumReplicas
			role.NumReplicas = n
		}
	}
	return app
}
