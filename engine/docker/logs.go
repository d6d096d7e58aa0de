package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
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
)

// Logs returns the lines of one replica's container, read from the Engine with their
// timestamps. Lines keep their stream (the containers have no TTY) and are never split
// or merged: Docker's 16 KiB fragments of a long line are joined again. Since and Until
// go to the Engine and are applied again exactly; Follow reads until the replica has
// ended for good (across Docker's restarts of it). Docker does not say which run of a
// restarted container wrote a line, so Attempt is set only where wick sees it: on the
// lines a follower reads after a restart, which belong to the new run.
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
	info, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("replica %s/%d of %s: its container was removed", role, replica, appID)
		}
		return nil, s.engineErr(err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	it := &logIter{q: newLineQueue(), cancel: cancel, done: make(chan struct{})}
	r := &logReader{s: s, cli: cli, id: id, role: role, replica: replica, opts: opts, q: it.q}
	r.refresh(&info.Container)
	go func() {
		defer close(it.done)
		r.run(rctx)
	}()
	return it, nil
}

// findReplica returns the id of the container of role/replica of the app.
func (s *Scheduler) findReplica(ctx context.Context, cli *client.Client, appID, role string, k int) (string, error) {
	f := client.Filters{}.Add("label", LabelAppID+"="+appID, LabelRole+"="+role, LabelReplicaID+"="+strconv.Itoa(k))
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return "", s.engineErr(err)
	}
	if len(res.Items) > 0 {
		newest := res.Items[0]
		for _, c := range res.Items[1:] {
			if c.Created > newest.Created {
				newest = c
			}
		}
		return newest.ID, nil
	}
	all, err := s.containers(ctx, cli, appID)
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

// take returns every waiting line, in time order, or how the lines ended.
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
			sortBatch(lines)
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
	// attempt is the run the lines now read belong to, when known (after a restart
	// seen while following), else 0.
	attempt int

	// The cursor: at is the latest time of a raw line read, seen the count of raw lines
	// stamped exactly at. Docker's streams are not strictly in time order (stdout and
	// stderr are stamped apart), so the cursor skips lines only when resuming: a new
	// request since at repeats the lines stamped at, of which skip are dropped.
	at       time.Time
	seen     int
	resuming bool
	skip     int

	// ring holds the last opts.Tail matching lines while tailing client-side.
	ring *tailRing
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
	o := r.opts
	streams := o.Streams
	if streams == "" {
		streams = sched.Combined
	}
	engineTail := o.Tail > 0 && o.Regex == nil && streams == sched.Combined && o.Since.IsZero() && o.Until.IsZero()
	clientTail := o.Tail > 0 && !engineTail

	req := client.ContainerLogsOptions{
		ShowStdout: streams != sched.Stderr,
		ShowStderr: streams != sched.Stdout,
		Timestamps: true,
		Since:      engineTime(o.Since),
		Until:      engineTime(o.Until),
	}
	if engineTail {
		req.Tail = strconv.Itoa(o.Tail)
	}
	if clientTail {
		// First the backlog, up to now, of which only the last Tail lines are kept.
		t0 := time.Now()
		if !o.Until.IsZero() && o.Until.Before(t0) {
			t0 = o.Until
		}
		back := req
		back.Until = engineTime(t0)
		r.ring = newTailRing(o.Tail)
		if err := r.stream(ctx, back); err != nil {
			return err
		}
		ring := r.ring
		r.ring = nil
		for _, l := range ring.all() {
			if err := r.q.put(ctx, l); err != nil {
				return err
			}
		}
		if !o.Follow || !o.Until.IsZero() && !o.Until.After(time.Now()) {
			return nil
		}
		r.at, r.resuming, r.skip = t0, true, math.MaxInt
		req.Since = engineTime(t0)
	}
	if !o.Follow || !o.Until.IsZero() && !o.Until.After(time.Now()) {
		return r.stream(ctx, req) // nothing to follow past Until
	}
	req.Follow = true
	if !o.Until.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, o.Until.Add(untilSlack))
		defer cancel()
	}
	for {
		start := time.Now()
		err := r.stream(ctx, req)
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return nil // Until has passed
			}
			return err
		}
		// The stream ends when the container stops. Docker may be restarting it.
		info, err := r.cli.ContainerInspect(ctx, r.id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return nil
			}
			return err
		}
		st := info.Container.State
		if st == nil || !(st.Running || st.Restarting || st.Status == container.StateCreated) {
			return nil
		}
		r.refresh(&info.Container)
		r.attempt = info.Container.RestartCount
		if !r.at.IsZero() {
			// Resume after the last line read. (With nothing read yet, asking again for
			// the same is right, tail included.)
			req.Since, req.Tail = engineTime(r.at), ""
			r.resuming, r.skip = true, r.seen
		}
		if wait := restartPoll - time.Since(start); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				if ctx.Err() == context.DeadlineExceeded {
					return nil
				}
				return ctx.Err()
			}
		}
	}
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

// parse reads the Engine's log stream: frames of stdcopy's multiplexed format (an
// 8-byte header giving the stream and the size, then the message), or the raw text of
// a container with a TTY.
func (r *logReader) parse(ctx context.Context, body io.Reader) error {
	br := bufio.NewReaderSize(body, 64<<10)
	var pending [3]pendingLine
	emitRest := func() error {
		for st := range pending {
			if p := &pending[st]; p.buf.Len() > 0 {
				if err := r.line(ctx, sched.Stream(streamName(stdcopy.StdType(st))), p.t, p.buf.Bytes(), true); err != nil {
					return err
				}
				p.buf.Reset()
			}
		}
		return nil
	}
	var hdr [8]byte
	var payload []byte
	for {
		var st stdcopy.StdType
		if r.tty {
			b, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				b = append([]byte(nil), b...)
				for err == bufio.ErrBufferFull {
					var more []byte
					more, err = br.ReadSlice('\n')
					b = append(b, more...)
				}
			}
			if err == io.EOF && len(b) == 0 {
				return emitRest()
			}
			if err != nil && err != io.EOF {
				return err
			}
			payload, st = b, stdcopy.Stdout
		} else {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				if err == io.EOF {
					return emitRest()
				}
				return err
			}
			st = stdcopy.StdType(hdr[0])
			size := int(binary.BigEndian.Uint32(hdr[4:]))
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
		if err := r.frame(ctx, st, payload, &pending[st]); err != nil {
			return err
		}
	}
}

// pendingLine is the start of a line whose end has not come yet.
type pendingLine struct {
	t   time.Time
	buf bytes.Buffer
}

// frame takes one timestamped message of the Engine: "TIMESTAMP TEXT", where TEXT is a
// line with its newline, or a fragment of a long line without one.
func (r *logReader) frame(ctx context.Context, st stdcopy.StdType, payload []byte, p *pendingLine) error {
	t, rest := splitTimestamp(payload)
	name := streamName(st)
	for len(rest) > 0 {
		if p.buf.Len() == 0 {
			p.t = t
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			p.buf.Write(rest)
			return nil
		}
		text := rest[:i]
		if p.buf.Len() > 0 {
			p.buf.Write(text)
			text = p.buf.Bytes()
		}
		if err := r.line(ctx, name, p.t, text, false); err != nil {
			return err
		}
		p.buf.Reset()
		rest = rest[i+1:]
	}
	return nil
}

func streamName(st stdcopy.StdType) sched.Stream {
	if st == stdcopy.Stderr {
		return sched.Stderr
	}
	return sched.Stdout
}

// line moves the cursor past a raw line and keeps it when it passes the filters.
func (r *logReader) line(ctx context.Context, st sched.Stream, t time.Time, text []byte, partial bool) error {
	if r.resuming {
		switch {
		case t.Before(r.at):
			return nil
		case t.Equal(r.at) && r.skip > 0:
			r.skip--
			return nil
		case t.After(r.at):
			r.resuming = false
		}
	}
	if t.After(r.at) {
		r.at, r.seen = t, 1
	} else if t.Equal(r.at) {
		r.seen++
	}
	l := sched.Line{Time: t, Stream: st, Role: r.role, Replica: r.replica, Attempt: r.attempt, Text: string(text), Partial: partial}
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

// sortBatch puts a batch in time order: the Engine stamps stdout and stderr apart
// and may write two lines a few microseconds out of order.
func sortBatch(lines []sched.Line) {
	if !slices.IsSortedFunc(lines, byTime) {
		slices.SortStableFunc(lines, byTime)
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
