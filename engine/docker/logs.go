package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Log reading knobs.
const (
	// batchLines is how many waiting lines wake Next at once. A 200k-line log must not
	// pay a goroutine handoff per line: the Engine sends one small chunk per line.
	batchLines = 512
	// maxPending bounds the lines read ahead of Next.
	maxPending = 8 * batchLines
	// coalesce is how long the first waiting line may wait for company before Next is
	// woken: invisible to a follower, and lines come in batches instead of one by one.
	coalesce = time.Millisecond
	// restartPoll is how often a follower looks again at a replica whose stream ended
	// while Docker restarts it.
	restartPoll = 200 * time.Millisecond
	// untilSlack is how long a follower with Until in the future keeps reading after
	// Until, for lines stamped before it that are still in flight.
	untilSlack = time.Second
	// resumeSlack is how far before the cursor a resumed read starts. The Engine
	// stamps stdout and stderr apart, so a message stored after the cursor's can be
	// stamped a little before it; the messages a resumed read repeats are skipped.
	resumeSlack = time.Second
	// fragmentSize is the size of the Engine's log buffer (its copier's, 16 KiB): a
	// line longer than that is stored as messages of exactly this size without a
	// newline, then a last one with it. A shorter message without a newline is text
	// the replica left unterminated when its output ended (its run ended).
	fragmentSize = 16 << 10
	// maxLineBytes bounds a line joined from fragments in memory. A longer line (a
	// progress bar redrawn with \r for an hour without a newline) is first collapsed
	// to its last \r segment; what is still too long is delivered in pieces marked
	// Partial.
	maxLineBytes = 1 << 20
	// maxPendingText bounds the text of a pending line (LogOptions.Pending): the start
	// of its last \r segment. The wall shows no more of a line.
	maxPendingText = 16 << 10
)

// Logs returns the lines of one replica's container, read from the Engine with their
// timestamps. Lines keep their stream (the containers have no TTY) and are never
// merged: Docker's 16 KiB fragments of a long line are joined again, and text a run
// left without a newline ends there, as a Partial line. Since and Until go to the
// Engine and are applied again exactly. Follow reads until the replica has ended for
// good (across Docker's restarts of it) and every stored line is read, also where
// the Engine's own follow stream ends early. Docker does not say which run of a
// restarted container wrote a line, so Attempt is set only where wick sees it: on the
// lines a follower reads of runs it saw Docker start.
func (s *Scheduler) Logs(ctx context.Context, appID, role string, replica int, opts sched.LogOptions) (sched.LogIterator, error) {
	if err := spec.ValidateName("app id", appID); err != nil {
		return nil, err
	}
	if err := spec.ValidateName("role", role); err != nil {
		return nil, err
	}
	cli, err := s.engine(ctx)
	if err != nil {
		return nil, err
	}
	id, err := s.findReplica(ctx, cli, appID, role, replica)
	if err != nil {
		return nil, err
	}
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("replica %s/%d of %s: its container was removed", role, replica, appID)
		}
		return nil, s.engineErr(err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	it := &logIter{q: newLineQueue(), cancel: cancel, done: make(chan struct{})}
	r := &logReader{s: s, cli: cli, id: id, role: role, replica: replica, opts: opts, q: it.q}
	info := &res.Container
	r.refresh(info)
	r.restarts = info.RestartCount
	r.ended = !liveState(info.State)
	go func() {
		defer close(it.done)
		r.run(rctx)
	}()
	return it, nil
}

// liveState reports whether a container may still write to its log: it runs, is
// paused, is being restarted by Docker, or was never started.
func liveState(st *container.State) bool {
	return st != nil && (st.Running || st.Paused || st.Restarting || st.Status == container.StateCreated)
}

// findReplica returns the id of the container of role/replica of the app.
func (s *Scheduler) findReplica(ctx context.Context, cli *client.Client, appID, role string, k int) (string, error) {
	f := client.Filters{}.Add("label", LabelAppID+"="+appID, LabelRole+"="+role, LabelReplicaID+"="+strconv.Itoa(k))
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return "", s.engineErr(err)
	}
	if own, _ := ownContainers(res.Items); len(own) > 0 {
		newest := own[0]
		for _, c := range own[1:] {
			if c.Created > newest.Created {
				newest = c
			}
		}
		return newest.ID, nil
	}
	all, _, err := s.containers(ctx, cli, appID)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "", notFound(appID)
	}
	return "", fmt.Errorf("app %s has no replica %s/%d", appID, role, k)
}

// lineQueue hands lines from the reading goroutine to Next. The reader adds lines one
// by one; Next takes all that wait at once, woken when batchLines wait or the first has
// waited coalesce, whichever comes first.
type lineQueue struct {
	mu      sync.Mutex
	pending []sched.Line
	spare   []sched.Line // a slice Next is done with, for reuse
	err     error        // how the lines end, once they have
	armed   bool
	timer   *time.Timer
	ready   chan struct{} // wakes Next
	space   chan struct{} // wakes a reader waiting for room
}

func newLineQueue() *lineQueue {
	q := &lineQueue{ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
	q.timer = time.AfterFunc(time.Hour, func() {
		q.mu.Lock()
		q.armed = false
		q.mu.Unlock()
		q.wake()
	})
	q.timer.Stop()
	return q
}

func (q *lineQueue) wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// put adds a line, waiting while maxPending lines wait.
func (q *lineQueue) put(ctx context.Context, l sched.Line) error {
	q.mu.Lock()
	for len(q.pending) >= maxPending {
		q.mu.Unlock()
		q.wake()
		select {
		case <-q.space:
		case <-ctx.Done():
			return ctx.Err()
		}
		q.mu.Lock()
	}
	if q.pending == nil && q.spare != nil {
		q.pending, q.spare = q.spare, nil
	}
	q.pending = append(q.pending, l)
	n := len(q.pending)
	arm := !q.armed && n < batchLines
	if arm {
		q.armed = true
	}
	q.mu.Unlock()
	switch {
	case n >= batchLines:
		q.wake()
	case arm:
		q.timer.Reset(coalesce)
	}
	return nil
}

// end records how the lines end and wakes Next.
func (q *lineQueue) end(err error) {
	q.mu.Lock()
	q.err = err
	q.mu.Unlock()
	q.timer.Stop()
	q.wake()
}

// hasLines reports whether take would return at once.
func (q *lineQueue) hasLines() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending) > 0 || q.err != nil
}

// take returns every waiting line (see orderBatch), or how the lines ended.
func (q *lineQueue) take(ctx context.Context, done []sched.Line) ([]sched.Line, error) {
	for {
		q.mu.Lock()
		if done != nil && q.spare == nil {
			q.spare, done = done[:0], nil
		}
		if lines := q.pending; len(lines) > 0 {
			q.pending = nil
			q.mu.Unlock()
			select {
			case q.space <- struct{}{}:
			default:
			}
			orderBatch(lines)
			return lines, nil
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// logIter is the LogIterator of one container.
type logIter struct {
	q      *lineQueue
	cur    []sched.Line
	next   int
	err    error
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Next returns the next line, io.EOF once they are all read, or ctx's error.
func (it *logIter) Next(ctx context.Context) (sched.Line, error) {
	if it.next == len(it.cur) {
		if it.err != nil {
			return sched.Line{}, it.err
		}
		lines, err := it.q.take(ctx, it.cur)
		if err != nil {
			if ctx.Err() == nil {
				it.err = err
			}
			it.cur, it.next = nil, 0
			return sched.Line{}, err
		}
		it.cur, it.next = lines, 0
	}
	l := it.cur[it.next]
	it.next++
	return l, nil
}

// Ready reports whether Next would return at once (sched.Readier): a line is read,
// or the lines have ended.
func (it *logIter) Ready() bool {
	return it.next < len(it.cur) || it.err != nil || it.q.hasLines()
}

// Close stops the reading and waits for its goroutine to end.
func (it *logIter) Close() error {
	it.once.Do(func() {
		it.cancel()
		<-it.done
		it.q.timer.Stop()
		if it.err == nil {
			it.err = errors.New("log iterator closed")
		}
	})
	return nil
}

// logReader reads one container's log stream(s) into a line queue.
type logReader struct {
	s       *Scheduler
	cli     *client.Client
	id      string
	role    string
	replica int
	opts    sched.LogOptions
	q       *lineQueue

	tty bool
	// ended is set when the container had ended for good when the reading began: its
	// stored log is complete and one plain read has it all.
	ended bool
	// live is set when pending lines are wanted: following a replica that runs.
	live bool
	// restarts is the container's restart count when last seen.
	restarts int
	// attempt is the run the messages now read belong to, when known (after a
	// restart seen while following), else 0.
	attempt int
	// runs are the restarts seen and not yet reached in the log, oldest first.
	runs []runStart

	// The cursor: the stamp of the last message read, in the Engine's order (not the
	// latest stamp: the wall clock may step back), and how many messages stamped
	// exactly so were read. A resumed read starts a little before it, and skip counts
	// the messages stamped at it still to pass before the new ones begin.
	at   time.Time
	seen int
	skip int

	// lines are the lines being joined, by stream (0 stdout, 1 stderr).
	lines [2]joining

	// ring holds the last opts.Tail matching lines while tailing client-side.
	ring *tailRing
}

// runStart is a run of the container that wick saw Docker start: the messages stamped
// after the previous run ended belong to it.
type runStart struct {
	after   time.Time
	attempt int
}

// joining is a line whose end has not come yet.
type joining struct {
	t       time.Time // when its first byte was stored
	attempt int
	buf     []byte
	shown   string // the pending text last yielded (LogOptions.Pending)
}

func (r *logReader) refresh(info *container.InspectResponse) {
	r.tty = info.Config != nil && info.Config.Tty
}

// run reads until the lines end, then records how they ended.
func (r *logReader) run(ctx context.Context) {
	err := r.read(ctx)
	switch {
	case err == nil:
		err = io.EOF
	case ctx.Err() != nil:
		err = errors.New("log iterator closed")
	default:
		err = fmt.Errorf("logs of %s/%d: %w", r.role, r.replica, r.s.engineErr(err))
	}
	r.q.end(err)
}

func (r *logReader) read(ctx context.Context) error {
	req, clientTail, follow := r.request()
	if clientTail {
		if err := r.tailBacklog(ctx, &req, follow); err != nil || !follow {
			return err
		}
	}
	if !follow {
		if err := r.stream(ctx, req); err != nil {
			return err
		}
		return r.flush(ctx)
	}
	return r.follow(ctx, req)
}

// request is the Engine's log request for the reader's options; clientTail is set
// when the tail must be kept here (the Engine tails both streams as one, before any
// filter or time bound), follow when the log is followed.
func (r *logReader) request() (req client.ContainerLogsOptions, clientTail, follow bool) {
	o := r.opts
	streams := o.Streams
	if streams == "" {
		streams = sched.Combined
	}
	engineTail := o.Tail > 0 && o.Regex == nil && streams == sched.Combined && o.Since.IsZero() && o.Until.IsZero()
	clientTail = o.Tail > 0 && !engineTail
	// A container that has ended for good has its whole log stored: following it is
	// reading it once.
	follow = o.Follow && !r.ended && (o.Until.IsZero() || o.Until.After(time.Now()))
	r.live = follow && o.Pending
	req = client.ContainerLogsOptions{
		ShowStdout: streams != sched.Stderr,
		ShowStderr: streams != sched.Stdout,
		Timestamps: true,
		Since:      engineTime(o.Since),
		Until:      engineTime(o.Until),
	}
	if engineTail {
		req.Tail = strconv.Itoa(o.Tail)
	}
	return req, clientTail, follow
}

// tailBacklog reads the backlog, up to now, of which only the last Tail lines are
// kept, and queues them. When following, req then reads on from the cursor.
func (r *logReader) tailBacklog(ctx context.Context, req *client.ContainerLogsOptions, follow bool) error {
	t0 := time.Now()
	if u := r.opts.Until; !u.IsZero() && u.Before(t0) {
		t0 = u
	}
	back := *req
	back.Until = engineTime(t0)
	r.ring = newTailRing(r.opts.Tail)
	if err := r.stream(ctx, back); err != nil {
		return err
	}
	if !follow {
		if err := r.flush(ctx); err != nil {
			return err
		}
	}
	ring := r.ring
	r.ring = nil
	for _, l := range ring.all() {
		if err := r.q.put(ctx, l); err != nil {
			return err
		}
	}
	if follow {
		r.resume(req)
	}
	return nil
}

// follow follows the log until the container has ended for good (through Docker's
// restarts of it) or Until has passed.
func (r *logReader) follow(ctx context.Context, req client.ContainerLogsOptions) error {
	req.Follow = true
	if !r.opts.Until.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, r.opts.Until.Add(untilSlack))
		defer cancel()
	}
	for {
		start := time.Now()
		if err := r.stream(ctx, req); err != nil {
			return untilPassed(ctx, err)
		}
		if done, err := r.streamEnded(ctx, &req); done || err != nil {
			return err
		}
		if wait := restartPoll - time.Since(start); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return untilPassed(ctx, ctx.Err())
			}
		}
	}
}

// streamEnded looks at the container when its followed stream has ended: the stream
// ends when the container stops, and Engine 20.10 may end it before it has sent
// every stored line. Docker may be restarting it (the next run's lines follow: done
// is false), or it has ended for good (the rest of its log is read: done is true).
func (r *logReader) streamEnded(ctx context.Context, req *client.ContainerLogsOptions) (done bool, err error) {
	res, err := r.cli.ContainerInspect(ctx, r.id, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return true, r.flush(ctx)
	}
	if err != nil {
		return true, untilPassed(ctx, err)
	}
	c := &res.Container
	r.refresh(c)
	if c.RestartCount > r.restarts && c.State != nil {
		r.restarts = c.RestartCount
		if len(r.runs) < spec.MaxAttempts {
			r.runs = append(r.runs, runStart{after: parseTime(c.State.FinishedAt), attempt: c.RestartCount})
		}
	}
	r.resume(req)
	if liveState(c.State) {
		return false, nil
	}
	// Ended for good. The Engine closes a container's log before it reports the
	// container stopped, so the stored log is complete: read the rest of it from the
	// cursor, once, unless its last messages are the cursor's.
	if r.complete(ctx, *req) {
		return true, r.flush(ctx)
	}
	drain := *req
	drain.Follow = false
	if err := r.stream(ctx, drain); err != nil {
		return true, untilPassed(ctx, err)
	}
	return true, r.flush(ctx)
}

// untilPassed is err, or nil when it came of Until having passed (the deadline of a
// followed read): the lines up to Until have all been read.
func untilPassed(ctx context.Context, err error) error {
	if ctx.Err() == context.DeadlineExceeded {
		return nil
	}
	return err
}

// resume makes req read on after the cursor. With nothing read yet, asking again for
// the same is right, tail included.
func (r *logReader) resume(req *client.ContainerLogsOptions) {
	if r.seen == 0 {
		return
	}
	since := r.at.Add(-resumeSlack)
	if since.Before(r.opts.Since) {
		since = r.opts.Since
	}
	req.Since, req.Tail = engineTime(since), ""
	r.skip = r.seen
}

// complete reports whether the stored log ends with the message at the cursor, asking
// the Engine for its last few messages only (a tail is read from the end of the log,
// where a read since the cursor decodes the whole log). It answers false when it
// cannot tell: with one stream selected, the Engine counts the tail over both.
func (r *logReader) complete(ctx context.Context, req client.ContainerLogsOptions) bool {
	if r.seen == 0 || !req.ShowStdout || !req.ShowStderr || req.Until != "" {
		return false
	}
	check := req
	check.Follow, check.Since, check.Tail = false, "", strconv.Itoa(r.seen+1)
	body, err := r.cli.ContainerLogs(ctx, r.id, check)
	if err != nil {
		return false
	}
	defer body.Close()
	var stamps []time.Time
	br := bufio.NewReader(body)
	var hdr [8]byte
	for len(stamps) <= r.seen {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			break
		}
		size := int(binary.BigEndian.Uint32(hdr[4:]))
		b, err := br.Peek(min(size, 64))
		if err != nil && len(b) < min(size, 64) {
			return false
		}
		t, _ := splitTimestamp(b)
		if _, err := br.Discard(size); err != nil {
			return false
		}
		stamps = append(stamps, t)
	}
	n := len(stamps)
	if n < r.seen {
		return false
	}
	for _, t := range stamps[n-r.seen:] {
		if !t.Equal(r.at) {
			return false
		}
	}
	return n == r.seen || !stamps[0].Equal(r.at)
}

// engineTime formats a time for the Engine's since and until: Unix seconds and
// nanoseconds, the Engine's full precision.
func engineTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
}

// stream reads one log request to its end.
func (r *logReader) stream(ctx context.Context, req client.ContainerLogsOptions) error {
	body, err := r.cli.ContainerLogs(ctx, r.id, req)
	if err != nil {
		return err
	}
	defer body.Close()
	return r.parse(ctx, body)
}

// maxFrame bounds one message of the Engine's log stream: the Engine cuts lines into
// messages of 16 KiB (and a timestamp).
const maxFrame = 1 << 20

// parse reads the Engine's log stream: frames of stdcopy's multiplexed format (an
// 8-byte header giving the stream and the size, then the message), or the raw text of
// a container with a TTY. Lines unfinished when the stream ends stay in r.lines: the
// next read may finish them.
func (r *logReader) parse(ctx context.Context, body io.Reader) error {
	br := bufio.NewReaderSize(body, 64<<10)
	var hdr [8]byte
	var payload []byte
	for {
		var st stdcopy.StdType
		if r.tty {
			b, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				b = append([]byte(nil), b...)
				for err == bufio.ErrBufferFull && len(b) <= maxFrame {
					var more []byte
					more, err = br.ReadSlice('\n')
					b = append(b, more...)
				}
				if len(b) > maxFrame {
					return fmt.Errorf("log line over %d bytes from a container with a TTY", maxFrame)
				}
			}
			if err == io.EOF && len(b) == 0 {
				return nil
			}
			if err != nil && err != io.EOF {
				return err
			}
			payload, st = b, stdcopy.Stdout
		} else {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			st = stdcopy.StdType(hdr[0])
			size := int(binary.BigEndian.Uint32(hdr[4:]))
			if size > maxFrame {
				return fmt.Errorf("log message of %d bytes: the Engine's messages are at most 16 KiB (read up to %d)", size, maxFrame)
			}
			if cap(payload) < size {
				payload = make([]byte, size)
			}
			payload = payload[:size]
			if _, err := io.ReadFull(br, payload); err != nil {
				return err
			}
			if st == stdcopy.Systemerr {
				return errors.New(string(payload))
			}
			if st != stdcopy.Stderr {
				st = stdcopy.Stdout
			}
		}
		if err := r.message(ctx, st, payload); err != nil {
			return err
		}
		// Show the lines still being written once nothing more is waiting: a
		// progress bar's latest state, not each of its redraws.
		if r.opts.Pending && r.live && br.Buffered() == 0 {
			if err := r.pending(ctx); err != nil {
				return err
			}
		}
	}
}

// message takes one timestamped message of the Engine: "TIMESTAMP TEXT", where TEXT is
// a line with its newline, a 16 KiB fragment of a long line, or the unterminated
// text a run ended with. It moves the cursor past the message, or skips it when a
// resumed read repeats it.
func (r *logReader) message(ctx context.Context, st stdcopy.StdType, payload []byte) error {
	t, text := splitTimestamp(payload)
	if r.skip > 0 {
		if t.Equal(r.at) {
			r.skip--
		}
		return nil
	}
	if t.Equal(r.at) {
		r.seen++
	} else {
		r.at, r.seen = t, 1
	}
	for len(r.runs) > 0 && t.After(r.runs[0].after) {
		// The first message of a run wick saw Docker start: what earlier runs left
		// unfinished ends here.
		if err := r.flush(ctx); err != nil {
			return err
		}
		r.attempt = r.runs[0].attempt
		r.runs = r.runs[1:]
	}
	i := 0
	if st == stdcopy.Stderr {
		i = 1
	}
	return r.join(ctx, i, t, text)
}

// join adds a message's text to the line of its stream and yields what it ends.
func (r *logReader) join(ctx context.Context, i int, t time.Time, text []byte) error {
	j := &r.lines[i]
	for {
		nl := bytes.IndexByte(text, '\n')
		if nl < 0 {
			break
		}
		line := text[:nl]
		if len(j.buf) == 0 {
			j.t, j.attempt = t, r.attempt
		} else {
			j.buf = append(j.buf, line...)
			line = j.buf
		}
		if err := r.emit(ctx, i, j, line, false); err != nil {
			return err
		}
		text = text[nl+1:]
	}
	if len(text) == 0 {
		return nil
	}
	if len(j.buf) == 0 {
		j.t, j.attempt = t, r.attempt
	}
	j.buf = append(j.buf, text...)
	if len(text) < fragmentSize && !r.tty {
		// Not a fragment of a long line: the run's output ended without a newline.
		return r.emit(ctx, i, j, j.buf, true)
	}
	if len(j.buf) > maxLineBytes {
		if k := bytes.LastIndexByte(j.buf, '\r'); k > 0 {
			j.buf = j.buf[:copy(j.buf, j.buf[k:])]
		}
		if len(j.buf) > maxLineBytes {
			return r.emit(ctx, i, j, j.buf, true)
		}
	}
	return nil
}

// flush yields the unfinished lines as Partial: their run or their stream has ended.
func (r *logReader) flush(ctx context.Context) error {
	for i := range r.lines {
		if j := &r.lines[i]; len(j.buf) > 0 {
			if err := r.emit(ctx, i, j, j.buf, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// pending yields each stream's unfinished line when its text changed: its last \r
// segment, at most maxPendingText bytes.
func (r *logReader) pending(ctx context.Context) error {
	for i := range r.lines {
		j := &r.lines[i]
		if len(j.buf) == 0 || r.ring != nil {
			continue
		}
		seg := bytes.TrimRight(j.buf, "\r")
		if k := bytes.LastIndexByte(seg, '\r'); k >= 0 {
			seg = seg[k+1:]
		}
		if len(seg) > maxPendingText {
			seg = seg[:maxPendingText]
		}
		if string(seg) == j.shown {
			continue
		}
		j.shown = string(seg)
		l := sched.Line{Time: j.t, Stream: streamOf(i), Role: r.role, Replica: r.replica, Attempt: j.attempt, Text: j.shown, Pending: true}
		if r.opts.Match(l) {
			if err := r.q.put(ctx, l); err != nil {
				return err
			}
		}
	}
	return nil
}

func streamOf(i int) sched.Stream {
	if i == 1 {
		return sched.Stderr
	}
	return sched.Stdout
}

// emit yields a line of stream i that passes the filters, and empties j.
func (r *logReader) emit(ctx context.Context, i int, j *joining, text []byte, partial bool) error {
	l := sched.Line{Time: j.t, Stream: streamOf(i), Role: r.role, Replica: r.replica, Attempt: j.attempt, Text: string(text), Partial: partial}
	j.buf, j.shown = j.buf[:0], ""
	if !r.opts.Match(l) {
		return nil
	}
	if r.ring != nil {
		r.ring.add(l)
		return nil
	}
	return r.q.put(ctx, l)
}

// tailRing keeps the last n lines it is given.
type tailRing struct {
	lines []sched.Line
	next  int // where the oldest line is, once full
}

func newTailRing(n int) *tailRing { return &tailRing{lines: make([]sched.Line, 0, n)} }

func (t *tailRing) add(l sched.Line) {
	if len(t.lines) < cap(t.lines) {
		t.lines = append(t.lines, l)
		return
	}
	t.lines[t.next] = l
	t.next = (t.next + 1) % len(t.lines)
}

// all returns the lines, oldest first.
func (t *tailRing) all() []sched.Line {
	out := make([]sched.Line, 0, len(t.lines))
	return append(append(out, t.lines[t.next:]...), t.lines[:t.next]...)
}

// orderBatch puts a batch in time order while keeping each stream's lines in the
// order the Engine stored them: the Engine stamps stdout and stderr apart and may store
// two lines a few microseconds out of order, but the lines of one stream are in the
// order they were written even when the wall clock stepped back between them.
func orderBatch(lines []sched.Line) {
	if slices.IsSortedFunc(lines, byTime) {
		return
	}
	var out, errs []sched.Line
	for _, l := range lines {
		if l.Stream == sched.Stderr {
			errs = append(errs, l)
		} else {
			out = append(out, l)
		}
	}
	i, j := 0, 0
	for k := range lines {
		if j == len(errs) || i < len(out) && !errs[j].Time.Before(out[i].Time) {
			lines[k] = out[i]
			i++
		} else {
			lines[k] = errs[j]
			j++
		}
	}
}

func byTime(a, b sched.Line) int { return a.Time.Compare(b.Time) }

// splitTimestamp cuts the Engine's RFC 3339 timestamp off a message.
func splitTimestamp(b []byte) (time.Time, []byte) {
	i := bytes.IndexByte(b, ' ')
	if i < 0 {
		return time.Time{}, b
	}
	t, ok := parseStamp(b[:i])
	if !ok {
		return time.Time{}, b
	}
	return t, b[i+1:]
}

// parseStamp reads "2006-01-02T15:04:05.999999999Z" without allocating, falling back
// on time.Parse for any other offset or precision.
func parseStamp(b []byte) (time.Time, bool) {
	if n := len(b); n >= 21 && n <= 30 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' && b[19] == '.' && b[n-1] == 'Z' {
		num := func(s []byte) (int, bool) {
			v := 0
			for _, c := range s {
				if c < '0' || c > '9' {
					return 0, false
				}
				v = v*10 + int(c-'0')
			}
			return v, true
		}
		y, ok1 := num(b[0:4])
		mo, ok2 := num(b[5:7])
		d, ok3 := num(b[8:10])
		h, ok4 := num(b[11:13])
		mi, ok5 := num(b[14:16])
		sec, ok6 := num(b[17:19])
		frac := b[20 : n-1]
		ns, ok7 := num(frac)
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && len(frac) > 0 {
			for i := len(frac); i < 9; i++ {
				ns *= 10
			}
			return time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC), true
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	return t, err == nil
}
