package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// appObjects are an app's Jobs and pods as the API server holds them.
type appObjects struct {
	ns string
	id string // the app id, without a namespace
	// owner is the object that holds the app: its JobSet's, else its first Job's.
	owner  *metav1.ObjectMeta
	set    *JobSet // the app's JobSet; nil for an app of Jobs
	jobs   []batchv1.Job
	pods   []corev1.Pod
	record appRecord
}

// selector selects every object of appID.
func selector(appID string) string { return LabelAppID + "=" + appID }

// fetch reads appID's Jobs and, with pods, its pods (those that ran or may still
// run): one list call each.
func (s *Scheduler) fetch(ctx context.Context, appID string, pods bool) (*conn, *appObjects, error) {
	c, ns, id, err := s.locate(appID)
	if err != nil {
		return nil, nil, err
	}
	o := &appObjects{ns: ns, id: id}
	if o.set, err = s.findJobSet(ctx, c, ns, id); err != nil {
		return c, nil, err
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	jl, err := c.batch.Jobs(ns).List(cctx, metav1.ListOptions{LabelSelector: selector(id)})
	if err != nil {
		return c, nil, c.apiError("listing the Jobs of "+appID, err)
	}
	o.jobs = jl.Items
	if err := o.findOwner(appID); err != nil {
		return c, nil, err
	}
	if err := json.Unmarshal([]byte(o.owner.Annotations[AnnotationApp]), &o.record); err != nil || o.record.App == nil {
		return c, nil, fmt.Errorf("kubernetes: app %s: its %s annotation is damaged: %v", appID, AnnotationApp, err)
	}
	if pods {
		pl, err := c.core.Pods(ns).List(cctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return c, nil, c.apiError("listing the pods of "+appID, err)
		}
		o.pods = pl.Items[:0]
		for _, p := range s.withKept(id, pl.Items) {
			if started, _ := containerStarted(&p); !started && p.DeletionTimestamp != nil {
				// Never ran and going: not an attempt (a Job that a cancel suspends
				// deletes the pods it made meanwhile).
				continue
			}
			o.pods = append(o.pods, p)
		}
	}
	return c, o, nil
}

// findJobSet reads app id's JobSet in ns where the cluster has JobSet: nil when it
// has none (an app of Jobs, or none).
func (s *Scheduler) findJobSet(ctx context.Context, c *conn, ns, id string) (*JobSet, error) {
	if has, err := s.useJobSet(ctx, c); err != nil || !has {
		return nil, err
	}
	return c.getJobSet(ctx, ns, id)
}

// findOwner sets o's owner: its JobSet, else the Job that holds the app's annotation.
func (o *appObjects) findOwner(appID string) error {
	if o.set != nil {
		o.owner = &o.set.ObjectMeta
		return nil
	}
	if len(o.jobs) == 0 {
		return fmt.Errorf("%w: %s (no Job labelled %s in namespace %s)", sched.ErrNotFound, appID, selector(o.id), o.ns)
	}
	o.owner = ownerJob(o.jobs)
	if o.owner == nil {
		return fmt.Errorf("%w: %s (its Jobs have no %s annotation: not launched by wick)", sched.ErrNotFound, appID, AnnotationApp)
	}
	return nil
}

// ownerJob is the metadata of the Job of jobs that holds the app's annotation.
func ownerJob(jobs []batchv1.Job) *metav1.ObjectMeta {
	for i := range jobs {
		if _, ok := jobs[i].Annotations[AnnotationApp]; ok {
			return &jobs[i].ObjectMeta
		}
	}
	return nil
}

// Describe returns the app's status from its Jobs and pods, and its AppDef and run
// options from the owner's annotation. A Pending app says why (the scheduler's
// reason, an image the node cannot get).
//
// A role that failed fails the app, and its other roles are stopped here (stop: their
// pods kept, with their logs), as TorchX's gang does: Kubernetes knows no app of
// several Jobs, so the first Describe that sees the failure (wick status, wait, the
// UI) asks the cluster to stop them, without waiting for their pods to end. A context
// that ends first leaves the rest to the next one.
func (s *Scheduler) Describe(ctx context.Context, appID string) (*sched.Description, error) {
	c, o, err := s.fetch(ctx, appID, true)
	if err != nil {
		return nil, err
	}
	s.rescue(ctx, c, o)
	if role, ok := failedRoleWithOthers(o); ok {
		if err := s.stop(ctx, c, o, "role "+role+" failed"); err == nil {
			if _, again, err := s.fetch(ctx, appID, true); err == nil {
				o = again
			}
		}
	}
	st := s.status(appID, o)
	newest := newestPods(o)
	groupRanks(&st, o.record.App, newest)
	s.torchrunCause(ctx, appID, &st, o.record.App, newest)
	if st.State == spec.Pending {
		ev := s.pendingEvents(ctx, c, o)
		if st.Msg == "" && len(ev) > 0 {
			st.Msg = ev[0]
		}
		st.Warnings = append(st.Warnings, ev...)
	}
	cfg := spec.Cfg{}
	for k, v := range o.record.Cfg {
		cfg[k] = v
	}
	return &sched.Description{Status: st, App: o.record.App, Cfg: cfg}, nil
}

// failedRoleWithOthers names the role whose Job failed when another Job of the app
// has not finished (and was not suspended): the app is FAILED, and that one must stop.
func failedRoleWithOthers(o *appObjects) (string, bool) {
	if o.owner.Annotations[AnnotationCancelled] != "" || o.set != nil {
		// A JobSet's controller ends the other Jobs of a failed one itself.
		return "", false
	}
	failed, open := "", false
	for i := range o.jobs {
		js := stateOfJob(&o.jobs[i])
		switch {
		case js.failed && failed == "":
			failed = o.jobs[i].Labels[LabelRole]
		case !js.failed && !js.complete && !js.suspended:
			open = true
		}
	}
	return failed, failed != "" && open
}

// jobState is what a Job's conditions say: finished, failed (with why), suspended.
type jobState struct {
	complete, failed, suspended bool
	msg                         string
	ended                       time.Time
}

func stateOfJob(j *batchv1.Job) jobState {
	var js jobState
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			js.complete = true
			js.ended = c.LastTransitionTime.Time
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			js.failed = true
			js.msg = c.Reason + ": " + c.Message
			js.ended = c.LastTransitionTime.Time
		case batchv1.JobSuspended:
			js.suspended = true
		}
	}
	return js
}

// appState is the app's state from its owner and Jobs alone (what List can afford):
// cancelled, failed, succeeded, running (a pod ready) or pending. A JobSet (set) says
// itself when the app ended; a failed Job fails the app at once.
func appState(owner *metav1.ObjectMeta, set *JobSet, jobs []batchv1.Job) (spec.AppState, string, time.Time) {
	if owner.Annotations[AnnotationCancelled] != "" {
		return spec.Cancelled, "cancelled", time.Time{}
	}
	if set != nil {
		if st, msg, at, ok := jobSetState(set, jobs); ok {
			return st, msg, at
		}
	}
	complete, running := 0, false
	var ended time.Time
	for i := range jobs {
		js := stateOfJob(&jobs[i])
		if js.failed {
			return spec.Failed, "Job " + jobs[i].Name + ": " + js.msg, js.ended
		}
		if js.complete {
			complete++
			if js.ended.After(ended) {
				ended = js.ended
			}
		}
		if jobs[i].Status.Ready != nil && *jobs[i].Status.Ready > 0 {
			running = true
		}
	}
	switch {
	case complete == len(jobs) && set == nil:
		return spec.Succeeded, "", ended
	case running || complete > 0:
		return spec.Running, "", time.Time{}
	}
	return spec.Pending, "", time.Time{}
}

// status builds the AppStatus of o: the app's state from its Jobs, each replica's from
// its pods (the newest pod of an index is its current attempt, the older ones its
// earlier attempts).
func (s *Scheduler) status(appID string, o *appObjects) spec.AppStatus {
	state, msg, ended := appState(o.owner, o.set, o.jobs)
	st := spec.AppStatus{
		Handle:    spec.Handle{Scheduler: Name, Session: o.owner.Labels[LabelSession], AppID: appID}.String(),
		AppID:     appID,
		Scheduler: Name,
		Name:      o.record.App.Name,
		State:     state,
		Msg:       msg,
		Created:   o.owner.CreationTimestamp.Time,
		Ended:     ended,
	}
	byReplica := map[string][]corev1.Pod{}
	for _, p := range o.pods {
		key := p.Labels[LabelRole] + "/" + p.Labels[labelCompletionIndex]
		byReplica[key] = append(byReplica[key], p)
	}
	var firstErr time.Time
	var pending string
	for _, role := range o.record.App.Roles {
		rs := spec.RoleStatus{Role: role.Name}
		for k := range role.NumReplicas {
			pods := byReplica[role.Name+"/"+strconv.Itoa(k)]
			sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
			r := replicaStatus(role.Name, k, untilStopped(pods), state)
			if r.State == spec.Pending && pending == "" {
				pending = pendingReason(pods)
			}
			if r.State == spec.Failed && r.StructuredError != "" && (firstErr.IsZero() || r.Ended.Before(firstErr)) {
				firstErr = r.Ended
				st.StructuredError = r.StructuredError
			}
			if r.Restarts > st.NumRestarts {
				st.NumRestarts = r.Restarts
			}
			rs.Replicas = append(rs.Replicas, r)
		}
		st.Roles = append(st.Roles, rs)
	}
	if st.State == spec.Pending && pending != "" {
		st.Msg = pending
	}
	return st
}

// untilStopped is pods (oldest first) up to the first that wick stopped: the pods the
// Job controller makes for that index after it (a released pod no longer counts as the
// Job's, and the Job is suspended only once the controller let go of it) are no
// attempts of the app, which was ending; under load one of them can start running.
func untilStopped(pods []corev1.Pod) []corev1.Pod {
	for i := range pods {
		if _, ok := pods[i].Annotations[AnnotationStopped]; ok {
			return pods[:i+1]
		}
	}
	return pods
}

// replicaStatus is replica k's status from its pods, oldest first.
func replicaStatus(role string, k int, pods []corev1.Pod, app spec.AppState) spec.ReplicaStatus {
	r := spec.ReplicaStatus{ID: k, Role: role, State: spec.Pending}
	if len(pods) == 0 {
		if app.Terminal() {
			r.State = app
		}
		return r
	}
	for i, p := range pods[:len(pods)-1] {
		a := spec.Attempt{Attempt: i}
		a.ExitCode, a.Started, a.Ended, a.Error = terminated(&p)
		r.Attempts = append(r.Attempts, a)
	}
	if len(r.Attempts) > spec.MaxAttempts {
		r.Attempts = r.Attempts[len(r.Attempts)-spec.MaxAttempts:]
	}
	p := &pods[len(pods)-1]
	r.Restarts = len(pods) - 1
	r.Hostname = p.Spec.NodeName
	r.ContainerID = p.Name
	r.ExitCode, r.Started, r.Ended, r.StructuredError = terminated(p)
	switch p.Status.Phase {
	case corev1.PodRunning:
		r.State = spec.Running
	case corev1.PodSucceeded:
		r.State = spec.Succeeded
	case corev1.PodFailed:
		r.State = spec.Failed
	}
	if _, ok := p.Annotations[AnnotationStopped]; ok && p.Status.Reason == "DeadlineExceeded" {
		// Stopped by wick (cancel, or another role's failure), not failed on its own.
		r.State, r.StructuredError = spec.Cancelled, ""
	}
	if killedByDeletion(p) {
		// Deleted while it ran, by the cluster ending the app (another role's or
		// replica's failure: JobSet's controller, the Job controller) or by a user,
		// and kept by wick's finalizer: it did not fail on its own.
		r.State, r.StructuredError = spec.Cancelled, ""
	}
	if app == spec.Cancelled && !r.State.Terminal() {
		r.State = spec.Cancelled
	}
	if r.State == spec.Running && p.DeletionTimestamp != nil && app.Terminal() {
		r.State = app
	}
	return r
}

// killedByDeletion says whether pod p failed because it was deleted: wick saw it
// deleted while it ran (AnnotationDeleted), or its container finished no earlier than
// deletionSlack before its deletion time (the kubelet's last delete of a pod it has
// stopped brings that time down to when it did; without that delete, the time is
// later still).
func killedByDeletion(p *corev1.Pod) bool {
	if p.DeletionTimestamp == nil || p.Status.Phase != corev1.PodFailed {
		return false
	}
	if p.Annotations[AnnotationDeleted] != "" {
		return true
	}
	_, _, ended, _ := terminated(p)
	return !ended.IsZero() && !ended.Before(p.DeletionTimestamp.Add(-deletionSlack))
}

// deletionSlack is how long before a deleted pod's deletion time its container may
// have ended and still count as stopped by the deletion.
const deletionSlack = 2 * time.Second

// terminated reads the main container's end: exit code, start, end, and its error
// (the termination message: torchelastic's error file, else the log's last lines;
// else the kubelet's reason, such as OOMKilled).
func terminated(p *corev1.Pod) (*int, time.Time, time.Time, string) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != containerName {
			continue
		}
		if run := cs.State.Running; run != nil {
			return nil, run.StartedAt.Time, time.Time{}, ""
		}
		t := cs.State.Terminated
		if t == nil {
			return nil, time.Time{}, time.Time{}, ""
		}
		code := int(t.ExitCode)
		msg := ""
		if code != 0 {
			msg = strings.TrimSpace(t.Message)
			if msg == "" || t.Reason == "OOMKilled" {
				msg = strings.TrimSpace(t.Reason + " " + msg)
			}
		}
		return &code, t.StartedAt.Time, t.FinishedAt.Time, msg
	}
	return nil, time.Time{}, time.Time{}, ""
}

// pendingReason says why the newest of pods is not running: the scheduler's reason
// (Unschedulable and its message), or the container's waiting reason
// (ErrImageNeverPull, ImagePullBackOff, ...), as kubectl describe shows them.
func pendingReason(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return ""
	}
	p := &pods[len(pods)-1]
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("pod %s: %s: %s", p.Name, c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			return fmt.Sprintf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
		}
	}
	return ""
}

// List returns the apps launched with this state directory ($WICK_HOME), from their
// Jobs alone: one list call per namespace they were launched in. With no record it
// asks the cluster nothing, so a machine without Kubernetes, or with its server
// down, lists nothing rather than failing every `wick list`.
func (s *Scheduler) List(ctx context.Context) ([]spec.AppStatus, error) {
	places, err := s.records()
	if err != nil || len(places) == 0 {
		return nil, err
	}
	var out []spec.AppStatus
	var errs []error
	for _, w := range sortedPlaces(places) {
		apps, err := s.listIn(ctx, w, places[w])
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, apps...)
	}
	return out, errors.Join(errs...)
}

// records reads the app records: each app id by its context and namespace.
func (s *Scheduler) records() (map[where]map[string]bool, error) {
	if s.cfg.StateDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(s.recordDir())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("kubernetes: reading the app records: %w", err)
	}
	places := map[where]map[string]bool{}
	for _, e := range entries {
		id := e.Name()
		if strings.HasPrefix(id, ".") || spec.ValidateName("app id", id) != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.recordDir(), id))
		if err != nil || len(b) > 4096 {
			continue
		}
		w := parseWhere(string(b))
		if places[w] == nil {
			places[w] = map[string]bool{}
		}
		places[w][id] = true
	}
	return places, nil
}

func sortedPlaces(m map[where]map[string]bool) []where {
	out := make([]where, 0, len(m))
	for w := range m {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Context+"/"+out[i].Namespace < out[j].Context+"/"+out[j].Namespace
	})
	return out
}

// listIn lists wick's Jobs (and JobSets, where the cluster has them) in one namespace
// and returns the apps of ids among them.
func (s *Scheduler) listIn(ctx context.Context, w where, ids map[string]bool) ([]spec.AppStatus, error) {
	c, err := s.client(w.Context)
	if err != nil {
		return nil, err
	}
	ns := w.Namespace
	if ns == "" {
		ns = c.namespace
	}
	sets, err := s.listSets(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	jl, err := c.batch.Jobs(ns).List(cctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + managedBy})
	if err != nil {
		return nil, c.apiError("listing wick's Jobs in namespace "+ns, err)
	}
	return appsOf(jl.Items, sets, func(_, id string) (string, bool) { return id, ids[id] }), nil
}

// listSets lists wick's JobSets in ns (metav1.NamespaceAll: all) where the cluster has
// JobSet; none elsewhere.
func (s *Scheduler) listSets(ctx context.Context, c *conn, ns string) ([]JobSet, error) {
	if has, err := s.useJobSet(ctx, c); err != nil || !has {
		return nil, err
	}
	sets, err := c.listJobSets(ctx, ns)
	if err != nil {
		where := "namespace " + ns
		if ns == metav1.NamespaceAll {
			where = "all namespaces"
		}
		return nil, c.apiError("listing wick's JobSets in "+where, err)
	}
	return sets, nil
}

// appsOf groups Jobs and JobSets into apps by key (which says an object's app, and
// whether it is listed), and returns each app's status from them alone.
func appsOf(jobs []batchv1.Job, sets []JobSet, key func(ns, id string) (string, bool)) []spec.AppStatus {
	byKey := map[string][]batchv1.Job{}
	setOf := map[string]*JobSet{}
	var order []string
	add := func(k string) {
		if _, ok := byKey[k]; !ok {
			byKey[k] = nil
			order = append(order, k)
		}
	}
	for i := range jobs {
		if k, ok := key(jobs[i].Namespace, jobs[i].Labels[LabelAppID]); ok {
			add(k)
			byKey[k] = append(byKey[k], jobs[i])
		}
	}
	for i := range sets {
		if k, ok := key(sets[i].Namespace, sets[i].Labels[LabelAppID]); ok {
			add(k)
			setOf[k] = &sets[i]
		}
	}
	out := make([]spec.AppStatus, 0, len(order))
	for _, k := range order {
		owner := ownerJob(byKey[k])
		if set := setOf[k]; set != nil {
			owner = &set.ObjectMeta
		}
		if st, ok := listed(k, owner, setOf[k], byKey[k]); ok {
			out = append(out, st)
		}
	}
	return out
}

// listed is the status of app id from its owner (nil: not an app of wick's) and Jobs
// alone.
func listed(id string, owner *metav1.ObjectMeta, set *JobSet, jobs []batchv1.Job) (spec.AppStatus, bool) {
	if owner == nil {
		return spec.AppStatus{}, false
	}
	state, msg, ended := appState(owner, set, jobs)
	var rec appRecord
	name := ""
	if json.Unmarshal([]byte(owner.Annotations[AnnotationApp]), &rec) == nil && rec.App != nil {
		name = rec.App.Name
	}
	st := spec.AppStatus{
		Handle:    spec.Handle{Scheduler: Name, Session: owner.Labels[LabelSession], AppID: id}.String(),
		AppID:     id,
		Scheduler: Name,
		Name:      name,
		State:     state,
		Msg:       msg,
		Created:   owner.CreationTimestamp.Time,
		Ended:     ended,
	}
	if rec.App != nil {
		st.Roles = listedRoles(rec.App, jobs, state)
	}
	return st, true
}

// listedRoles are the replicas' states as the Jobs' status counts them (what the list
// shows: running of total), without listing pods: an index the Job lists completed
// SUCCEEDED (exit 0), failed FAILED, then as many RUNNING as the Job has ready pods,
// the rest PENDING; an ended app's unfinished ones take its state.
func listedRoles(app *spec.AppDef, jobs []batchv1.Job, state spec.AppState) []spec.RoleStatus {
	byRole := map[string]*batchv1.Job{}
	for i := range jobs {
		byRole[jobs[i].Labels[LabelRole]] = &jobs[i]
	}
	roles := make([]spec.RoleStatus, 0, len(app.Roles))
	for _, role := range app.Roles {
		rs := spec.RoleStatus{Role: role.Name}
		var done, failed map[int]bool
		ready := 0
		if j := byRole[role.Name]; j != nil {
			done = parseIndexes(j.Status.CompletedIndexes)
			if j.Status.FailedIndexes != nil {
				failed = parseIndexes(*j.Status.FailedIndexes)
			}
			if j.Status.Ready != nil {
				ready = int(*j.Status.Ready)
			}
		}
		for k := range role.NumReplicas {
			r := spec.ReplicaStatus{ID: k, Role: role.Name, State: spec.Pending}
			switch {
			case done[k]:
				zero := 0
				r.State, r.ExitCode = spec.Succeeded, &zero
			case failed[k]:
				r.State = spec.Failed
			case ready > 0:
				r.State = spec.Running
				ready--
			}
			if state.Terminal() && !r.State.Terminal() {
				r.State = state
			}
			rs.Replicas = append(rs.Replicas, r)
		}
		roles = append(roles, rs)
	}
	return roles
}

// parseIndexes reads a Job's list of indexes, such as "0,2-4".
func parseIndexes(s string) map[int]bool {
	out := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > spec.MaxReplicas {
				continue
			}
		}
		for k := a; k <= b; k++ {
			out[k] = true
		}
	}
	return out
}

// Wait returns the app's status once it has ended and the pods wick stopped (a cancel,
// a failed role's others) have ended too. It watches the app's Jobs (one list, then
// their changes) rather than asking again and again; then it describes the app, which
// stops the other roles of a failed one, and watches the pods until the stopped ones,
// and any other still running, have ended.
func (s *Scheduler) Wait(ctx context.Context, appID string) (*spec.AppStatus, error) {
	c, ns, id, err := s.locate(appID)
	if err != nil {
		return nil, err
	}
	if err := s.waitEnded(ctx, c, ns, id); err != nil {
		return nil, err
	}
	d, err := s.Describe(ctx, appID)
	if err != nil {
		return nil, err
	}
	waited := false
	err = watchPods(ctx, c, ns, selector(id), func(pods map[string]*corev1.Pod) bool {
		for _, p := range pods {
			// A pod still running once the app ended is on its way out too: one that
			// reached its node just after the stop looked (stop leaves a pod with no
			// node to the suspension) runs until its Job's controller deletes it, and
			// its replica would read RUNNING in an app that ended.
			if stopping(p) || p.Status.Phase == corev1.PodRunning {
				waited = true
				return false
			}
		}
		return true
	})
	if err != nil {
		return &d.Status, fmt.Errorf("waiting for the stopped pods of %s to end: %w", appID, err)
	}
	// Described again when the watch waited, or when the first description still had
	// a replica running: that Describe stopped it, and a pod its Job's controller
	// deleted before the watch listed the pods was never seen stopping (CI: srv/0
	// RUNNING in a FAILED app).
	if waited || replicaRunning(&d.Status) {
		if d, err = s.Describe(ctx, appID); err != nil {
			return nil, err
		}
	}
	return &d.Status, nil
}

// replicaRunning reports whether a replica of st has not ended.
func replicaRunning(st *spec.AppStatus) bool {
	for _, r := range st.Roles {
		for _, x := range r.Replicas {
			if !x.State.Terminal() {
				return true
			}
		}
	}
	return false
}

// waitEnded watches app id's owner until the app has ended (or is gone): its JobSet
// where it has one, else its Jobs.
func (s *Scheduler) waitEnded(ctx context.Context, c *conn, ns, id string) error {
	set, err := s.findJobSet(ctx, c, ns, id)
	if err != nil {
		return err
	}
	if set != nil {
		return watchObjects(ctx, c, jobSetLister(c, ns, set.Name), func(sets map[string]*JobSet) bool {
			js, ok := sets[set.Name]
			if !ok || js.Labels[LabelAppID] != id {
				return true // gone: Describe says so
			}
			state, _, _ := appState(&js.ObjectMeta, js, nil)
			return state.Terminal()
		})
	}
	return watchObjects(ctx, c, jobLister(c, ns, selector(id)), func(jobs map[string]*batchv1.Job) bool {
		all := make([]batchv1.Job, 0, len(jobs))
		for _, j := range jobs {
			all = append(all, *j)
		}
		owner := ownerJob(all)
		if owner == nil {
			return true // gone (or not wick's): Describe says so
		}
		state, _, _ := appState(owner, nil, all)
		return state.Terminal()
	})
}

// maxEventObjects bounds the objects whose events one Describe reads.
const maxEventObjects = 4

// pendingEvents reads the warnings Kubernetes recorded about what keeps the app
// pending, as kubectl describe shows them: of a JobSet that lacks a Job, of each Job
// that has no pod (its controller
// could not make one: FailedCreate, a quota, an admission refusal, a missing service
// account) and of each pod not yet running (FailedScheduling, FailedMount, image
// pulls). One line each, "Job x: Reason: message", the same reason once.
func (s *Scheduler) pendingEvents(ctx context.Context, c *conn, o *appObjects) []string {
	withPods := map[string]bool{}
	var objs [][2]string // kind, name
	for i := range o.pods {
		p := &o.pods[i]
		withPods[p.Labels[LabelRole]] = true
		if p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil {
			objs = append(objs, [2]string{"Pod", p.Name})
		}
	}
	for i := range o.jobs {
		if !withPods[o.jobs[i].Labels[LabelRole]] {
			objs = append(objs, [2]string{"Job", o.jobs[i].Name})
		}
	}
	if o.set != nil && len(o.jobs) < len(o.set.Spec.ReplicatedJobs) {
		// Its controller has not made every Job: the JobSet's events say why.
		objs = append(objs, [2]string{"JobSet", o.set.Name})
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i][0]+objs[i][1] < objs[j][0]+objs[j][1] })
	if len(objs) > maxEventObjects {
		objs = objs[:maxEventObjects]
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	var out []string
	seen := map[string]bool{}
	for _, obj := range objs {
		el, err := c.core.Events(o.ns).List(cctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=" + obj[0] + ",involvedObject.name=" + obj[1] + ",type=Warning"})
		if err != nil {
			continue // the status says what it can without them
		}
		evs := el.Items
		sort.Slice(evs, func(i, j int) bool { return eventTime(&evs[i]).After(eventTime(&evs[j])) })
		for _, e := range evs {
			key := obj[1] + "/" + e.Reason
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, fmt.Sprintf("%s %s: %s: %s", obj[0], obj[1], e.Reason, strings.TrimSpace(e.Message)))
		}
	}
	return out
}

// eventTime is when an event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// ListAllHomes is List (`wick list --all`/`-A`) with every app wick launched in the
// current context's cluster, in every namespace: the Jobs labelled
// app.kubernetes.io/managed-by=wick of all namespaces, one call (as kubectl get -A).
// Those this $WICK_HOME did not launch are Foreign, with the id NAMESPACE:APP_ID by
// which later verbs find them. A user who may not list Jobs in every namespace gets
// RBAC's reason, and this home's apps all the same.
func (s *Scheduler) ListAllHomes(ctx context.Context) ([]spec.AppStatus, error) {
	own, err := s.List(ctx)
	mine := map[string]bool{}
	for _, st := range own {
		mine[st.AppID] = true
	}
	places, rerr := s.records()
	if rerr == nil {
		for _, ids := range places {
			for id := range ids {
				mine[id] = true
			}
		}
	}
	c, cerr := s.client("")
	if errors.Is(cerr, ErrNoConfig) {
		return own, err // no cluster configured: nothing more to list
	}
	if cerr != nil {
		return own, errors.Join(err, cerr)
	}
	sets, serr := s.listSets(ctx, c, metav1.NamespaceAll)
	if serr != nil {
		return own, errors.Join(err, serr)
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	jl, lerr := c.batch.Jobs(metav1.NamespaceAll).List(cctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + managedBy})
	if lerr != nil {
		return own, errors.Join(err, c.apiError("listing wick's Jobs in all namespaces", lerr))
	}
	foreign := appsOf(jl.Items, sets, func(ns, id string) (string, bool) {
		return ns + ":" + id, !mine[id] && spec.ValidateName("app id", id) == nil
	})
	for _, st := range foreign {
		st.Foreign = true
		own = append(own, st)
	}
	return own, err
}
