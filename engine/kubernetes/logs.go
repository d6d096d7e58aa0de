package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
)

// Logs returns the lines of one replica: the logs of its pods, oldest attempt first,
// each line timed by the kubelet (timestamps=true). Kubernetes keeps one stream per
// container: stdout and stderr come mixed, as sched.Combined. Following waits for
// the replica's pods to start and for its retries, until the replica ends.
func (s *Scheduler) Logs(ctx context.Context, appID, role string, replica int, opts sched.LogOptions) (sched.LogIterator, error) {
	c, o, err := s.fetch(ctx, appID, false)
	if err != nil {
		return nil, err
	}
	r := o.record.App.Role(role)
	if r == nil {
		return nil, fmt.Errorf("%w: app %s has no role %q (roles: %v)", sched.ErrNotFound, appID, role, o.record.App.RoleNames())
	}
	if replica < 0 || replica >= r.NumReplicas {
		return nil, fmt.Errorf("%w: role %s of %s has replicas 0 to %d, not %d", sched.ErrNotFound, role, appID, r.NumReplicas-1, replica)
	}
	ictx, cancel := context.WithCancel(context.Background())
	it := &logIter{
		ch:     make(chan item, 1024),
		done:   make(chan struct{}),
		cancel: cancel,
		s:      s, c: c, ns: o.ns, appID: appID, id: o.id, role: role, replica: replica, opts: opts,
	}
	it.opts.Streams = "" // one stream: a filter on stdout or stderr cannot be applied
	go it.run(ictx)
	return it, nil
}

type item struct {
	line sched.Line
	err  error
}

// logIter reads a replica's pods' logs in a goroutine into a channel.
type logIter struct {
	ch     chan item
	done   chan struct{}
	cancel context.CancelFunc
	head   *item
	ended  bool

	s       *Scheduler
	c       *conn
	ns      string
	appID   string // as given (NAMESPACE:APP_ID maybe)
	id      string // without a namespace
	role    string
	replica int
	opts    sched.LogOptions
	last    time.Time
	// keptOnly names the pods that only wick has kept (keep.go): the cluster has
	// them no more.
	keptOnly map[string]bool
	// sent is what was sent of the current pod's log lately, so that a follow opened
	// again goes on after it.
	sent recentLines
}

// recentLines are the lines of a log sent in its last seconds (by the kubelet's
// times), as their time and a hash of their text: a follow opened again from a
// second before the newest gives them again, and they are skipped. stdout's and
// stderr's lines are stamped apart, so times in the log can go back a little: what is
// skipped is what was sent, never what is older than the newest.
type recentLines struct {
	seed   maphash.Seed
	keys   map[recentKey]int // how many lines of that key were sent
	again  map[recentKey]int // how many of them the stream being read gave again
	order  []recentKey
	newest time.Time
}

type recentKey struct {
	t int64 // UnixNano
	h uint64
}

// recentSpan is how far back of the newest line the lines sent are kept: more than
// a follow opened again reads back (a second, and the server's rounding down to a
// second). recentMax bounds them: a log faster than that a second can be given a
// line twice when a follow is opened again, never lose one.
const (
	recentSpan = 3 * time.Second
	recentMax  = 1 << 16
)

// since is where a stream taken up again begins, zero when nothing was sent: a
// second before the newest line sent (lines stamped a little before it may come after
// it), in whole seconds as the API takes it.
func (r *recentLines) since() time.Time {
	if r.newest.IsZero() {
		return time.Time{}
	}
	return r.newest.Add(-time.Second).Truncate(time.Second)
}

func (r *recentLines) reset() {
	if r.keys == nil {
		r.seed = maphash.MakeSeed()
	}
	r.keys, r.order, r.newest = map[recentKey]int{}, r.order[:0], time.Time{}
}

// reopen begins a stream that gives the lines sent since a second before the newest
// again.
func (r *recentLines) reopen() { r.again = map[recentKey]int{} }

// add counts a line of time t, whose line (stamp and text) is b, as sent.
func (r *recentLines) add(t time.Time, b []byte) {
	k := recentKey{t.UnixNano(), maphash.Bytes(r.seed, b)}
	r.keys[k]++
	r.order = append(r.order, k)
	if t.After(r.newest) {
		r.newest = t
	}
	old := r.newest.Add(-recentSpan).UnixNano()
	for len(r.order) > 0 && (r.order[0].t < old || len(r.order) > recentMax) {
		k := r.order[0]
		if r.keys[k]--; r.keys[k] <= 0 {
			delete(r.keys, k)
		}
		r.order = r.order[1:]
	}
}

// take says whether a line of time t (b) was sent, and counts it as given again by
// the stream being read.
func (r *recentLines) take(t time.Time, b []byte) bool {
	k := recentKey{t.UnixNano(), maphash.Bytes(r.seed, b)}
	if r.again[k] >= r.keys[k] {
		return false
	}
	r.again[k]++
	return true
}

// Next returns the next line, io.EOF at the end, or ctx's error.
func (it *logIter) Next(ctx context.Context) (sched.Line, error) {
	if it.head != nil {
		h := *it.head
		it.head = nil
		return h.line, h.err
	}
	if it.ended {
		return sched.Line{}, io.EOF
	}
	select {
	case <-ctx.Done():
		return sched.Line{}, ctx.Err()
	case x, ok := <-it.ch:
		if !ok {
			it.ended = true
			return sched.Line{}, io.EOF
		}
		return x.line, x.err
	}
}

// readyWait bounds how long Ready waits for the next line of a log that is not
// followed.
const readyWait = 5 * time.Second

// Ready reports whether Next would return at once. A log that is not followed has
// every line already (in the API server's answer on its way): "none ready" would be
// false, and a merge of several replicas (engine/logs.Merge) would put another's later
// lines first. So Ready waits for its next line or end, for readyWait at most; a
// followed log says what it holds now.
func (it *logIter) Ready() bool {
	if it.head != nil || it.ended {
		return true
	}
	var wait <-chan time.Time
	if !it.opts.Follow {
		t := time.NewTimer(readyWait)
		defer t.Stop()
		wait = t.C
	}
	take := func(x item, ok bool) bool {
		if !ok {
			it.ended = true
		} else {
			it.head = &x
		}
		return true
	}
	select {
	case x, ok := <-it.ch:
		return take(x, ok)
	default:
	}
	if wait == nil {
		return false
	}
	select {
	case x, ok := <-it.ch:
		return take(x, ok)
	case <-wait:
		return false
	}
}

// Close stops the reader and waits for it.
func (it *logIter) Close() error {
	it.cancel()
	<-it.done
	return nil
}

// send hands a line over, or gives up when ctx ends.
func (it *logIter) send(ctx context.Context, x item) bool {
	select {
	case it.ch <- x:
		return true
	case <-ctx.Done():
		return false
	}
}

// pods lists the replica's pods, oldest first.
func (it *logIter) pods(ctx context.Context) ([]corev1.Pod, error) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	pl, err := it.c.core.Pods(it.ns).List(cctx, metav1.ListOptions{LabelSelector: it.selector()})
	if err != nil {
		return nil, it.c.apiError("listing the pods of "+it.appID, err)
	}
	pods := pl.Items
	it.keptOnly = map[string]bool{}
	have := make(map[string]bool, len(pods))
	for i := range pods {
		have[pods[i].Name] = true
	}
	for _, p := range it.s.keptPods(it.id) {
		if !have[p.Name] && p.Labels[LabelRole] == it.role && p.Labels[labelCompletionIndex] == strconv.Itoa(it.replica) {
			it.keptOnly[p.Name] = true
			pods = append(pods, p)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	return pods, nil
}

// run reads each attempt's pod in turn; following, it waits for pods to start and for
// the next attempt until the app ends.
func (it *logIter) run(ctx context.Context) {
	defer close(it.done)
	defer close(it.ch)
	attempt := 0
	for {
		pods, err := it.pods(ctx)
		if err != nil {
			it.send(ctx, item{err: err})
			return
		}
		if it.opts.Tail > 0 && len(pods) > 1 && attempt == 0 {
			attempt = len(pods) - 1 // the last lines are the last attempt's
		}
		if attempt < len(pods) {
			p := &pods[attempt]
			started, ended := containerStarted(p)
			if !started && it.opts.Follow && !ended && p.DeletionTimestamp == nil {
				if !it.waitChange(ctx, pods) {
					return
				}
				continue
			}
			if started {
				if err := it.streamPod(ctx, p, attempt, it.opts.Follow && !ended); err != nil {
					if ctx.Err() == nil {
						it.send(ctx, item{err: err})
					}
					return
				}
			}
			attempt++
			continue
		}
		if !it.opts.Follow || it.finished(ctx, pods) {
			return
		}
		if !it.waitChange(ctx, pods) {
			return
		}
	}
}

// recheck bounds a wait for the replica's pods to change: then run asks again whether
// the app has ended (another role's failure, a suspended Job: no pod of this replica
// changes for those).
const recheck = 5 * time.Second

// waitChange waits until the replica's pods differ from pods (a pod created, started,
// ended or gone), watching them, for recheck at most; false when ctx has ended.
func (it *logIter) waitChange(ctx context.Context, pods []corev1.Pod) bool {
	seen := make(map[string]string, len(pods))
	for i := range pods {
		if !it.keptOnly[pods[i].Name] {
			seen[pods[i].Name] = pods[i].ResourceVersion
		}
	}
	wctx, cancel := context.WithTimeout(ctx, recheck)
	defer cancel()
	err := watchPods(wctx, it.c, it.ns, it.selector(), func(now map[string]*corev1.Pod) bool {
		if len(now) != len(seen) {
			return true
		}
		for name, p := range now {
			if seen[name] != p.ResourceVersion {
				return true
			}
		}
		return false
	})
	if err != nil && ctx.Err() == nil && wctx.Err() == nil {
		// The watch failed: wait a little, as a poll would, and look again.
		return sleep(ctx, time.Second)
	}
	return ctx.Err() == nil
}

// selector selects the replica's pods.
func (it *logIter) selector() string {
	return selector(it.id) + "," + LabelRole + "=" + it.role + "," + labelCompletionIndex + "=" + strconv.Itoa(it.replica)
}

// finished reports whether no more attempts will come: the last pod succeeded, or the
// app ended.
func (it *logIter) finished(ctx context.Context, pods []corev1.Pod) bool {
	if n := len(pods); n > 0 && pods[n-1].Status.Phase == corev1.PodSucceeded {
		return true
	}
	_, o, err := it.s.fetch(ctx, it.appID, false)
	if err != nil {
		return true
	}
	state, _, _ := appState(o.owner, o.set, o.jobs)
	if state.Terminal() {
		return true
	}
	for i := range o.jobs {
		if o.jobs[i].Labels[LabelRole] == it.role {
			js := stateOfJob(&o.jobs[i])
			return js.complete || js.failed || js.suspended
		}
	}
	return false
}

// containerStarted says whether the main container has started, and whether it has
// ended (or will never start: the pod failed or succeeded).
func containerStarted(p *corev1.Pod) (started, ended bool) {
	ended = p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != containerName {
			continue
		}
		if cs.State.Running != nil {
			return true, ended
		}
		if cs.State.Terminated != nil {
			return true, true
		}
		if cs.LastTerminationState.Terminated != nil {
			return true, ended
		}
	}
	return false, ended
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// streamPod reads one pod's log and sends its lines; following, until its container
// has ended. The kubelet can end a follow while the container runs: it ends the ones
// it cannot watch (a node out of inotify instances, 128 a user by default, which the
// follows of 64 pods by wick and by its keeper exhaust), or it restarts; the follow is
// opened again after the last line sent, a second later at most once a second.
func (it *logIter) streamPod(ctx context.Context, p *corev1.Pod, attempt int, follow bool) error {
	it.sent.reset()
	for {
		opened := time.Now()
		if err := it.stream(ctx, p, attempt, follow); err != nil || !follow {
			return err
		}
		cctx, cancel := callCtx(ctx)
		now, err := it.c.core.Pods(it.ns).Get(cctx, p.Name, metav1.GetOptions{})
		cancel()
		if err != nil || now.UID != p.UID || now.DeletionTimestamp != nil {
			return nil // gone: the next look at the replica's pods says what follows
		}
		if started, ended := containerStarted(now); !started || ended {
			// Ended: what it wrote since the follow ended, then the next attempt.
			follow = false
		}
		if wait := time.Second - time.Since(opened); follow && wait > 0 && !sleep(ctx, wait) {
			return nil
		}
		p = now
	}
}

// stream reads one pod's log, with timestamps, and sends its lines: the cluster's,
// else (the pod or its container gone) the copy wick kept; after it.upTo when the pod's
// log was read before.
func (it *logIter) stream(ctx context.Context, p *corev1.Pod, attempt int, follow bool) error {
	kept, _ := it.s.keptLog(it.id, p.Name)
	if kept != nil {
		defer kept.Close()
		if it.keptOnly[p.Name] {
			return it.sendLines(ctx, kept, attempt, "the kept log of pod "+p.Name, true, false)
		}
	}
	o := &corev1.PodLogOptions{Container: containerName, Follow: follow, Timestamps: true}
	resumed := !it.sent.newest.IsZero()
	if resumed {
		it.sent.reopen()
	}
	switch {
	case resumed:
		since := metav1.NewTime(it.sent.since())
		o.SinceTime = &since
	case !it.opts.Since.IsZero():
		since := metav1.NewTime(it.opts.Since.Add(-time.Second))
		o.SinceTime = &since
	}
	if it.opts.Tail > 0 && !resumed {
		n := int64(it.opts.Tail)
		o.TailLines = &n
	}
	rc, err := it.c.core.Pods(it.ns).GetLogs(p.Name, o).Stream(ctx)
	if err != nil {
		if kept != nil {
			// Gone from the node ("unable to retrieve container logs"): what the
			// keeper had of it.
			return it.sendLines(ctx, kept, attempt, "the kept log of pod "+p.Name, true, false)
		}
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			return nil // gone (deleted by cancel) or never started
		}
		return it.c.apiError("reading the log of pod "+p.Name, err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	if head, _ := br.Peek(len(noContainerLog)); string(head) == noContainerLog {
		// The kubelet's word for a container it no longer has (a deleted pod's),
		// answered as the log itself.
		if kept != nil {
			return it.sendLines(ctx, kept, attempt, "the kept log of pod "+p.Name, true, false)
		}
		return nil
	}
	return it.sendLines(ctx, br, attempt, "the log of pod "+p.Name, false, resumed)
}

// noContainerLog begins what the kubelet answers, as a log, for a container it has
// removed.
const noContainerLog = "unable to retrieve container logs"

// sendLines sends the lines of a log read from r ("TIME TEXT" each); local, a kept
// file, applies the tail itself.
func (it *logIter) sendLines(ctx context.Context, r io.Reader, attempt int, what string, local, resumed bool) error {
	var tail []sched.Line
	keep := 0
	if local && it.opts.Tail > 0 {
		keep = it.opts.Tail
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		text, cut, size, err := readLine(br)
		if !local && (len(text) > 0 || err == nil) && it.sentBefore(text, resumed) {
			continue
		}
		if len(text) > 0 || err == nil {
			l := it.line(text, attempt)
			if cut {
				l.Cut, l.Size = true, size
			}
			switch {
			case !it.opts.Match(l):
			case keep > 0:
				if len(tail) == keep {
					tail = tail[1:]
				}
				tail = append(tail, l)
			case !it.send(ctx, item{line: l}):
				return nil
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				for _, l := range tail {
					if !it.send(ctx, item{line: l}) {
						return nil
					}
				}
				return nil
			}
			return fmt.Errorf("reading %s: %w", what, err)
		}
	}
}

// sentBefore says whether a line of the cluster's log ("TIMESTAMP TEXT") is not to be
// sent: sent before, by a follow that ended (resumed: this stream is one opened
// again), or the kubelet's own word; and counts it as sent when it is to be.
func (it *logIter) sentBefore(b []byte, resumed bool) bool {
	stamp, _, _ := bytes.Cut(b, []byte(" "))
	t, err := time.Parse(time.RFC3339Nano, string(stamp))
	if err != nil {
		// Every line of the container's has its time: one without is the kubelet's
		// why it ended the follow ("failed to create fsnotify watcher: too many open
		// files"), and the follow is opened again.
		return true
	}
	if resumed && it.sent.take(t, b) {
		return true
	}
	it.sent.add(t, b)
	return false
}

// line parses "TIMESTAMP TEXT" (the kubelet's RFC 3339 time with nanoseconds). Times
// never go backwards within the replica.
func (it *logIter) line(b []byte, attempt int) sched.Line {
	l := sched.Line{Stream: sched.Combined, Role: it.role, Replica: it.replica, Attempt: attempt}
	if i := bytes.IndexByte(b, ' '); i > 0 {
		if t, err := time.Parse(time.RFC3339Nano, string(b[:i])); err == nil {
			l.Time = t
			b = b[i+1:]
		}
	}
	if l.Time.Before(it.last) {
		l.Time = it.last
	}
	it.last = l.Time
	l.Text = string(b)
	return l
}

// readLine reads one line without its newline; a line longer than logs.MaxLine is cut
// there (the rest is skipped) and its full size given.
func readLine(br *bufio.Reader) (text []byte, cut bool, size int64, err error) {
	for {
		chunk, e := br.ReadSlice('\n')
		size += int64(len(chunk))
		if len(text) < logs.MaxLine {
			room := logs.MaxLine - len(text)
			if len(chunk) > room {
				text = append(text, chunk[:room]...)
				cut = true
			} else {
				text = append(text, chunk...)
			}
		} else {
			cut = true
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		if e != nil {
			return text, cut, size, e
		}
		text = bytes.TrimSuffix(text, []byte("\n"))
		return text, cut, size - 1, nil
	}
}
