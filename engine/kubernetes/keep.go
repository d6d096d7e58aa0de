package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Logs that outlive their pods.
//
// When one role of an app fails, the controllers end the others by deleting them:
// JobSet's controller deletes the roles' Jobs still running (foreground: the garbage
// collector deletes their pods), and the Job controller deletes the running pods of a
// Job that failed. The kubelet removes a deleted pod's containers, and their logs, as
// soon as they have stopped: the ranks that did not fail, whose lines say what they
// were doing, would lose their logs, and their pods would vanish from the status.
//
// So wick keeps them, on the machine that launched the app. Every pod carries the
// finalizer FinalizerLogs (its template's: the Job controller copies it), and a keeper
// (Keep: one per app, started detached by Schedule) follows each pod's log from its
// start into $WICK_HOME/kubernetes/logs/APP_ID/POD.log; once the pod has ended and its
// log is whole, it saves the pod (POD.json: its status, exit code and termination
// message) and takes the finalizer off; it ends once the app has ended and no pod
// holds the finalizer. Status and logs read the saved pods where the cluster no longer
// has them. The finalizer keeps a deleted pod's object (not its log: that goes with the
// container) until wick has seen how it ended. Were the keeper to die, the next wick
// that describes the app on that machine (status, wait, the UI) saves what the node
// still has and takes the finalizers off; `wick delete` takes them off in any case.

// FinalizerLogs is the finalizer of every pod of an app launched with a state
// directory: wick takes it off once it has kept the pod's log and end.
const FinalizerLogs = "wick.dev/logs"

// keptDir is where app id's kept pods are.
func (s *Scheduler) keptDir(id string) string {
	return filepath.Join(s.cfg.StateDir, "kubernetes", "logs", id)
}

// Bounds of the kept files.
const (
	// maxKeptPod bounds a saved pod's JSON.
	maxKeptPod = 1 << 20
	// maxKeptPods bounds how many saved pods one app's reads take.
	maxKeptPods = 4 * spec.MaxReplicas
)

// keptPods reads app id's saved pods (none without a state directory).
func (s *Scheduler) keptPods(id string) []corev1.Pod {
	if s.cfg.StateDir == "" || spec.ValidateName("app id", id) != nil {
		return nil
	}
	names, _ := filepath.Glob(filepath.Join(s.keptDir(id), "*.json"))
	if len(names) > maxKeptPods {
		names = names[:maxKeptPods]
	}
	var out []corev1.Pod
	for _, n := range names {
		b, err := readBounded(n, maxKeptPod)
		if err != nil {
			continue
		}
		var p corev1.Pod
		if json.Unmarshal(b, &p) == nil && p.Name != "" && p.Labels[LabelAppID] == id {
			out = append(out, p)
		}
	}
	return out
}

// readBounded reads a file of at most max bytes.
func readBounded(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: over %d bytes", name, max)
	}
	return b, nil
}

// withKept adds to pods (the cluster's) the saved pods of id that the cluster no
// longer has.
func (s *Scheduler) withKept(id string, pods []corev1.Pod) []corev1.Pod {
	kept := s.keptPods(id)
	if len(kept) == 0 {
		return pods
	}
	have := make(map[string]bool, len(pods))
	for i := range pods {
		have[pods[i].Name] = true
	}
	for _, p := range kept {
		if !have[p.Name] {
			pods = append(pods, p)
		}
	}
	return pods
}

// keptLog opens pod name's kept log: the whole one, else (whole false) the part a
// keeper wrote before it stopped; nil when there is none.
func (s *Scheduler) keptLog(id, name string) (f *os.File, whole bool) {
	if s.cfg.StateDir == "" {
		return nil, false
	}
	base := filepath.Join(s.keptDir(id), name+".log")
	if f, err := os.Open(base); err == nil {
		return f, true
	}
	if f, err := os.Open(base + ".part"); err == nil {
		return f, false
	}
	return nil, false
}

// hasLogsFinalizer says whether p still waits for wick to keep its log.
func hasLogsFinalizer(p *corev1.Pod) bool { return slices.Contains(p.Finalizers, FinalizerLogs) }

// release takes FinalizerLogs off pod name in ns: a JSON patch that tests that the
// finalizer is where the pod last had it, read again on a conflict.
func release(ctx context.Context, c *conn, ns, name string) error {
	for try := 0; ; try++ {
		cctx, cancel := callCtx(ctx)
		p, err := c.core.Pods(ns).Get(cctx, name, metav1.GetOptions{})
		cancel()
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return c.apiError("reading pod "+name, err)
		}
		i := slices.Index(p.Finalizers, FinalizerLogs)
		if i < 0 {
			return nil
		}
		path := fmt.Sprintf("/metadata/finalizers/%d", i)
		patch, _ := json.Marshal([]map[string]string{{"op": "test", "path": path, "value": FinalizerLogs}, {"op": "remove", "path": path}})
		cctx, cancel = callCtx(ctx)
		_, err = c.core.Pods(ns).Patch(cctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "wick"})
		cancel()
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case try < 5 && (apierrors.IsInvalid(err) || apierrors.IsConflict(err)):
			continue // the finalizers moved: read them again
		}
		return c.apiError("taking the finalizer "+FinalizerLogs+" off pod "+name, err)
	}
}

// releaseAll takes FinalizerLogs off every pod of app id that has it.
func releaseAll(ctx context.Context, c *conn, ns, id string) error {
	cctx, cancel := callCtx(ctx)
	pl, err := c.core.Pods(ns).List(cctx, metav1.ListOptions{LabelSelector: selector(id)})
	cancel()
	if err != nil {
		return c.apiError("listing the pods of "+id, err)
	}
	var errs []error
	for i := range pl.Items {
		if hasLogsFinalizer(&pl.Items[i]) {
			errs = append(errs, release(ctx, c, ns, pl.Items[i].Name))
		}
	}
	return errors.Join(errs...)
}

// releaseGone takes FinalizerLogs off the pods of an app whose Jobs are deleted (a
// delete, a launch rolled back), twice a second apart and more while some still held
// it: a pod that a Job's controller was creating as its Job went lands a moment
// later, and with the finalizer it would stay Terminating.
func releaseGone(ctx context.Context, c *conn, ns, id string) error {
	var err error
	for round := 0; round < 5; round++ {
		if round > 0 && !sleep(ctx, time.Second) {
			return ctx.Err()
		}
		held := false
		cctx, cancel := callCtx(ctx)
		pl, lerr := c.core.Pods(ns).List(cctx, metav1.ListOptions{LabelSelector: selector(id)})
		cancel()
		if lerr != nil {
			return c.apiError("listing the pods of "+id, lerr)
		}
		var errs []error
		for i := range pl.Items {
			if hasLogsFinalizer(&pl.Items[i]) {
				held = true
				errs = append(errs, release(ctx, c, ns, pl.Items[i].Name))
			}
		}
		err = errors.Join(errs...)
		if round > 0 && !held {
			break
		}
	}
	return err
}

// savePod writes p (its last state: how it ended) as app id's kept pod.
func (s *Scheduler) savePod(id string, p *corev1.Pod) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if len(b) > maxKeptPod {
		q := p.DeepCopy()
		q.ManagedFields, q.Spec = nil, corev1.PodSpec{NodeName: p.Spec.NodeName}
		if b, err = json.Marshal(q); err != nil {
			return err
		}
	}
	return writeAtomic(filepath.Join(s.keptDir(id), p.Name+".json"), b)
}

// writeAtomic writes b to name through a temporary file.
func writeAtomic(name string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// lockKeeper takes app id's keeper lock without waiting: nil when another holds it.
// Closing the file lets it go.
func (s *Scheduler) lockKeeper(id string) (*os.File, error) {
	dir := s.keptDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "keeper.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, err
	}
	return f, nil
}

// startKeeper starts the keeper of app id just launched: in the helper binary
// (wick-kubernetes), a process of its own (`wick-kubernetes keep`), detached in its
// own session, which outlives wick; elsewhere (the tests) a goroutine.
func (s *Scheduler) startKeeper(id string) error {
	if s.cfg.StateDir == "" {
		return nil
	}
	if s.keeper != nil {
		return s.keeper(id)
	}
	exe, err := os.Executable()
	if err != nil || filepath.Base(exe) != remote.Helper {
		go func() { _ = s.Keep(context.Background(), id) }()
		return nil
	}
	if err := os.MkdirAll(s.keptDir(id), 0o700); err != nil {
		return fmt.Errorf("kubernetes: the keeper of %s: %w", id, err)
	}
	logf, err := os.OpenFile(filepath.Join(s.keptDir(id), "keeper.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("kubernetes: the keeper of %s: %w", id, err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "keep", "--session", s.cfg.Session, "--state-dir", s.cfg.StateDir, id)
	cmd.Dir, cmd.Stdout, cmd.Stderr = "/", logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kubernetes: starting the keeper of %s: %w", id, err)
	}
	go func() { _ = cmd.Wait() }() // reaped while this helper lives; init's after
	return nil
}

// keepRecheck bounds how long the keeper watches the pods before it asks again
// whether the app has ended (a Job's end changes no pod).
const keepRecheck = 30 * time.Second

// After a replica fails, the keeper describes the app every gangRecheck for gangWait
// at most, so that the app's other roles stop once its Job has failed (Describe).
const (
	gangRecheck = 2 * time.Second
	gangWait    = time.Minute
)

// keepAfterEnd bounds how long the keeper waits, once the app has ended, for pods
// that hold the finalizer but neither run nor go.
const keepAfterEnd = 10 * time.Minute

// keepGiveUp is how long the keeper tries a cluster that does not answer.
const keepGiveUp = time.Hour

// Keep keeps the logs of app appID's pods until the app has ended and every pod's log
// is kept (see FinalizerLogs); it returns at once when another keeper holds the app.
func (s *Scheduler) Keep(ctx context.Context, appID string) error {
	c, ns, id, err := s.locate(appID)
	if err != nil {
		return err
	}
	lock, err := s.lockKeeper(id)
	if err != nil || lock == nil {
		return err
	}
	defer lock.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k := &keeper{ctx: ctx, s: s, c: c, ns: ns, id: id, followed: map[types.UID]bool{}, marked: map[types.UID]bool{}, failures: map[types.UID]bool{}, last: map[string]*corev1.Pod{}}
	defer k.wg.Wait()
	var failingSince, endedAt, gangUntil time.Time
	var round time.Time
	for {
		if time.Since(round) < time.Second {
			// A watch that ended at once (see said done): not more than once a second.
			sleep(ctx, time.Second-time.Since(round))
		}
		round = time.Now()
		recheck := keepRecheck
		if time.Now().Before(gangUntil) {
			recheck = gangRecheck
		}
		wctx, wcancel := context.WithTimeout(ctx, recheck)
		err := watchPods(wctx, c, ns, selector(id), k.see)
		wcancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if k.takeFailure() {
			gangUntil = time.Now().Add(gangWait)
		}
		if time.Now().Before(gangUntil) {
			// A replica failed: once its Job has, Describe stops the app's other
			// roles (an app of Jobs: nobody else may be looking).
			if d, err := s.Describe(ctx, appID); err == nil && d.Status.State.Terminal() {
				gangUntil = time.Time{}
			}
		}
		if err != nil && wctx.Err() == nil {
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if time.Since(failingSince) > keepGiveUp {
				return fmt.Errorf("kubernetes: keeping the logs of %s: %w", id, err)
			}
			sleep(ctx, 5*time.Second)
			continue
		}
		failingSince = time.Time{}
		if k.idle() {
			_, o, err := s.fetch(ctx, appID, false)
			switch {
			case errors.Is(err, sched.ErrNotFound):
				return releaseAll(ctx, c, ns, id) // deleted: nothing left to keep
			case err != nil:
				continue
			}
			if state, _, _ := appState(o.owner, o.set, o.jobs); state.Terminal() {
				if endedAt.IsZero() {
					endedAt = time.Now()
				}
				if !k.holding(ctx) {
					return nil
				}
				if time.Since(endedAt) > keepAfterEnd {
					// Pods that hold the finalizer and never ran nor went: let them go.
					return releaseAll(ctx, c, ns, id)
				}
			}
		}
	}
}

// keeper follows the logs of one app's pods.
type keeper struct {
	ctx context.Context // the keeper's: its end stops the followers
	s   *Scheduler
	c   *conn
	ns  string
	id  string

	wg       sync.WaitGroup
	mu       sync.Mutex // guards followed, last and busy
	followed map[types.UID]bool
	marked   map[types.UID]bool     // pods seen deleted while they ran
	failures map[types.UID]bool     // pods seen failed on their own
	failed   bool                   // a new one since takeFailure
	last     map[string]*corev1.Pod // each pod's last state seen
	busy     int
}

// see looks at the app's pods (a watch's view): it starts following each that has
// started and still holds the finalizer, and lets go at once of those that never
// started and will not. It says done when a replica has failed on its own (Keep then
// describes the app) or when every pod has ended and let go (Keep asks whether the
// app has ended); else Keep's watch ends at its recheck.
func (k *keeper) see(pods map[string]*corev1.Pod) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	newFailure := false
	for name, p := range pods {
		k.last[name] = p
		if p.Status.Phase == corev1.PodFailed && !k.failures[p.UID] && p.Annotations[AnnotationStopped] == "" && !killedByDeletion(p) {
			k.failures[p.UID], k.failed, newFailure = true, true, true
		}
		if !hasLogsFinalizer(p) {
			continue
		}
		if started, ended := containerStarted(p); p.DeletionTimestamp != nil && started && !ended &&
			p.Annotations[AnnotationDeleted] == "" && !k.marked[p.UID] {
			// Deleted while it runs: its end is no failure of its own.
			k.marked[p.UID] = true
			k.wg.Go(func() {
				patch := []byte(`{"metadata":{"annotations":{"` + AnnotationDeleted + `":"true"}}}`)
				cctx, cancel := callCtx(k.ctx)
				defer cancel()
				_, _ = k.c.core.Pods(k.ns).Patch(cctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "wick"})
			})
		}
		if k.followed[p.UID] {
			continue
		}
		started, ended := containerStarted(p)
		switch {
		case started:
			k.followed[p.UID] = true
			k.busy++
			k.wg.Go(func() { k.follow(p.Name) })
		case ended || p.DeletionTimestamp != nil:
			// Never ran: no log to keep.
			k.followed[p.UID] = true
			k.busy++
			k.wg.Go(func() {
				defer k.done()
				_ = release(k.ctx, k.c, k.ns, name)
			})
		}
	}
	if newFailure {
		return true // Keep describes the app
	}
	// Every pod ended and let go: Keep asks whether the app has ended too, now rather
	// than at its recheck.
	if k.busy > 0 || len(pods) == 0 {
		return false
	}
	for _, p := range pods {
		if hasLogsFinalizer(p) || !podEnded(p) {
			return false
		}
	}
	return true
}

// takeFailure says whether a replica failed on its own since the last call.
func (k *keeper) takeFailure() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	f := k.failed
	k.failed = false
	return f
}

func (k *keeper) done() {
	k.mu.Lock()
	k.busy--
	k.mu.Unlock()
}

// idle says whether no pod is being followed.
func (k *keeper) idle() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.busy == 0
}

// holding says whether a pod of the app still holds the finalizer.
func (k *keeper) holding(ctx context.Context) bool {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	pl, err := k.c.core.Pods(k.ns).List(cctx, metav1.ListOptions{LabelSelector: selector(k.id)})
	if err != nil {
		return true
	}
	for i := range pl.Items {
		if hasLogsFinalizer(&pl.Items[i]) {
			return true
		}
	}
	return false
}

// lastSeen is pod name's last state the watch gave.
func (k *keeper) lastSeen(name string) *corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last[name]
}

// follow keeps pod name's log: it follows it into POD.log.part until its container
// has ended (a stream that ends before is taken up again where it stopped), renames
// it POD.log, saves the pod as it ended and takes the finalizer off.
func (k *keeper) follow(name string) {
	defer k.done()
	ctx := k.ctx
	dir := k.s.keptDir(k.id)
	part := filepath.Join(dir, name+".log.part")
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "keeping the log of pod %s: %v\n", name, err)
		return
	}
	w := &resumeWriter{w: bufio.NewWriterSize(f, 64<<10)}
	for {
		err := k.stream(ctx, name, w)
		if ferr := w.w.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "keeping the log of pod %s: %v\n", name, err)
		}
		if ctx.Err() != nil {
			f.Close()
			return // stopped: a later keeper or look takes it up
		}
		p, gone := k.current(ctx, name)
		if gone || p == nil {
			break
		}
		if _, ended := containerStarted(p); ended || podEnded(p) {
			// Once more, now that the container has ended: a stream opened as it
			// started may have ended before its last lines (or held none yet).
			err := k.stream(ctx, name, w)
			if ferr := w.w.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "keeping the log of pod %s: %v\n", name, err)
			}
			break
		}
		sleep(ctx, time.Second) // the stream broke: take it up again
	}
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "keeping the log of pod %s: %v\n", name, err)
		return
	}
	if err := os.Rename(part, filepath.Join(dir, name+".log")); err != nil {
		fmt.Fprintf(os.Stderr, "keeping the log of pod %s: %v\n", name, err)
		return
	}
	k.finish(ctx, name)
}

// finish saves pod name as it ended and takes the finalizer off; a pod not yet
// ended (its log stream ended first) is waited for a little.
func (k *keeper) finish(ctx context.Context, name string) {
	var p *corev1.Pod
	for range 30 {
		var gone bool
		if p, gone = k.current(ctx, name); gone || p == nil || podEnded(p) {
			break
		}
		sleep(ctx, time.Second)
	}
	if p == nil {
		p = k.lastSeen(name)
	}
	if p != nil {
		k.mu.Lock()
		if k.marked[p.UID] && p.Annotations[AnnotationDeleted] == "" {
			p = p.DeepCopy()
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, AnnotationDeleted, "true")
		}
		k.mu.Unlock()
		if err := k.s.savePod(k.id, p); err != nil {
			fmt.Fprintf(os.Stderr, "keeping pod %s: %v\n", name, err)
		}
	}
	if err := release(ctx, k.c, k.ns, name); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
	}
}

// current reads pod name: gone says the cluster no longer has it (then p is its last
// state seen).
func (k *keeper) current(ctx context.Context, name string) (p *corev1.Pod, gone bool) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	p, err := k.c.core.Pods(k.ns).Get(cctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return k.lastSeen(name), true
	}
	if err != nil {
		return k.lastSeen(name), false
	}
	return p, false
}

// stream copies pod name's log (followed, with timestamps) to w, from where w stopped.
func (k *keeper) stream(ctx context.Context, name string, w *resumeWriter) error {
	o := &corev1.PodLogOptions{Container: containerName, Follow: true, Timestamps: true}
	if t := w.sent.since(); !t.IsZero() {
		since := metav1.NewTime(t)
		o.SinceTime = &since
	}
	rc, err := k.c.core.Pods(k.ns).GetLogs(name, o).Stream(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			return nil // gone, or its container is
		}
		return k.c.apiError("reading the log of pod "+name, err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	w.begin()
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if werr := w.write(line, err == nil); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil
		}
		return fmt.Errorf("reading the log of pod %s: %w", name, err)
	}
}

// resumeWriter writes a log's lines ("TIME TEXT\n", as the kubelet gives them), and
// when the stream is taken up again (from a second before the newest line written),
// skips the lines it has already written (recentLines: the lines of the last seconds,
// as the follows of wick log skip them), never one it has not.
type resumeWriter struct {
	w    *bufio.Writer
	sent recentLines
	// of the stream being read:
	resumed bool // taken up again
	mid     bool // within a line (a chunk of one longer than the buffer)
	drop    bool // the line being read is one already written
}

// begin starts a new stream.
func (w *resumeWriter) begin() {
	if w.sent.keys == nil {
		w.sent.reset()
	}
	w.resumed, w.mid, w.drop = !w.sent.newest.IsZero(), false, false
	if w.resumed {
		w.sent.reopen()
	}
}

// write takes a chunk of a line; end says that it ends the line.
func (w *resumeWriter) write(chunk []byte, end bool) error {
	if !w.mid {
		t := lineTime(chunk)
		// Every line of the log has the kubelet's time; one without is the kubelet's
		// word on a container it no longer has ("unable to retrieve container logs
		// for ..."), which it answers as the log itself, or on why it ended a follow.
		// A line longer than the buffer is told by its first chunk.
		w.drop = t.IsZero() || w.resumed && w.sent.take(t, chunk)
		if !w.drop {
			w.sent.add(t, chunk)
		}
	}
	w.mid = !end
	if w.drop {
		return nil
	}
	_, err := w.w.Write(chunk)
	return err
}

// lineTime reads the kubelet's time at the start of a log line (zero if none).
func lineTime(b []byte) time.Time {
	i := bytes.IndexByte(b, ' ')
	if i <= 0 || i > 64 {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, string(b[:i]))
	if err != nil {
		return time.Time{}
	}
	return t
}

// rescue does a dead keeper's work for app id, once it has ended, where no keeper
// holds it (and this machine launched it: its record is here): for each pod that
// holds the finalizer and has ended, it keeps what the node still has of its log and
// the pod, and takes the finalizer off; a pod that never started just loses the
// finalizer.
func (s *Scheduler) rescue(ctx context.Context, c *conn, o *appObjects) {
	if s.cfg.StateDir == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(s.recordDir(), o.id)); err != nil {
		return
	}
	var held []*corev1.Pod
	for i := range o.pods {
		p := &o.pods[i]
		if _, ended := containerStarted(p); hasLogsFinalizer(p) && (ended || p.DeletionTimestamp != nil) {
			held = append(held, p)
		}
	}
	if len(held) == 0 {
		return
	}
	lock, err := s.lockKeeper(o.id)
	if err != nil || lock == nil {
		return
	}
	defer lock.Close()
	sort.Slice(held, func(i, j int) bool { return held[i].Name < held[j].Name })
	for _, p := range held {
		if started, _ := containerStarted(p); started {
			if _, err := os.Stat(filepath.Join(s.keptDir(o.id), p.Name+".log")); err != nil {
				s.keepOnce(ctx, c, o, p)
			}
			_ = s.savePod(o.id, p)
		}
		_ = release(ctx, c, o.ns, p.Name)
	}
}

// keepOnce keeps what the node has of ended pod p's log, unless a kept part is longer.
func (s *Scheduler) keepOnce(ctx context.Context, c *conn, o *appObjects, p *corev1.Pod) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	base := filepath.Join(s.keptDir(o.id), p.Name+".log")
	rc, err := c.core.Pods(o.ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: containerName, Timestamps: true}).Stream(cctx)
	if err != nil {
		// Gone from the node: what a keeper wrote of it is all there is.
		_ = os.Rename(base+".part", base)
		return
	}
	defer rc.Close()
	tmp := base + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	cw := &countWriter{w: f}
	w := &resumeWriter{w: bufio.NewWriterSize(cw, 64<<10)}
	w.begin()
	br := bufio.NewReaderSize(rc, 64<<10)
	for {
		line, rerr := br.ReadSlice('\n')
		if len(line) > 0 {
			if err = w.write(line, rerr == nil); err != nil {
				break
			}
		}
		if rerr != nil && !errors.Is(rerr, bufio.ErrBufferFull) {
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			break
		}
	}
	if ferr := w.w.Flush(); err == nil {
		err = ferr
	}
	n := cw.n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if st, serr := os.Stat(base + ".part"); err != nil || (serr == nil && st.Size() > n) {
		_ = os.Remove(tmp)
		_ = os.Rename(base+".part", base)
		return
	}
	_ = os.Rename(tmp, base)
	_ = os.Remove(base + ".part")
}

// countWriter counts what it writes.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// forgetKept removes app id's kept pods and logs.
func (s *Scheduler) forgetKept(id string) {
	if s.cfg.StateDir != "" && spec.ValidateName("app id", id) == nil {
		_ = os.RemoveAll(s.keptDir(id))
	}
}
