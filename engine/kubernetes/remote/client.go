package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Client is a scheduler whose calls run in a helper process, started on the first
// call that needs it and ended by Close. Name and RunOpts are its own, and List asks
// HasApps before starting anything. It is safe for concurrent use.
type Client struct {
	name    string
	runOpts spec.RunOpts
	cfg     sched.Config
	// command makes the helper's command line; an error says why there is none.
	command func() ([]string, error)
	// hasApps says whether List could find anything (nil: always ask the helper).
	hasApps func() bool

	mu     sync.Mutex // guards p and closed
	p      *proc
	closed bool
}

// cancelWait bounds how long a cancelled call waits for the helper's answer (a
// launch's rollback) before it returns the context's error.
const cancelWait = 45 * time.Second

// stopWait is how long Close lets the helper end on its own before killing it.
const stopWait = 5 * time.Second

// Name returns the scheduler's name.
func (c *Client) Name() string { return c.name }

// RunOpts returns the scheduler's run options, known without the helper.
func (c *Client) RunOpts() spec.RunOpts { return c.runOpts }

// proc is one running helper.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail
	stop   context.CancelFunc

	wmu sync.Mutex // guards enc
	enc *json.Encoder

	mu      sync.Mutex // guards pending, nextID and err
	pending map[uint64]*pendingCall
	nextID  uint64
	err     error         // why the helper ended, once it has
	dead    chan struct{} // closed when the helper's output ends
	waited  chan struct{} // closed when cmd.Wait returned
}

type pendingCall struct {
	done     chan response // one answer
	progress sched.Progress
}

// start runs the helper.
func (c *Client) start() (*proc, error) {
	argv, err := c.command()
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = stopWait
	p := &proc{cmd: cmd, stderr: &tail{max: 8 << 10}, stop: stop, pending: map[uint64]*pendingCall{}, dead: make(chan struct{}), waited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		stop()
		return nil, fmt.Errorf("%s: helper: %w", c.name, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		stop()
		return nil, fmt.Errorf("%s: helper: %w", c.name, err)
	}
	if err := cmd.Start(); err != nil {
		stop()
		return nil, fmt.Errorf("%s: starting its helper %s: %w", c.name, argv[0], err)
	}
	p.enc = json.NewEncoder(p.stdin)
	go p.read(c, out)
	return p, nil
}

// read routes the helper's answers until its output ends, then fails every call
// still waiting with why.
func (p *proc) read(c *Client, out io.Reader) {
	dec := json.NewDecoder(out)
	var err error
	for {
		var r response
		if err = dec.Decode(&r); err != nil {
			break
		}
		p.route(c, r)
	}
	werr := p.cmd.Wait()
	close(p.waited)
	why := "ended"
	if werr != nil {
		why = "ended: " + werr.Error()
	} else if !errors.Is(err, io.EOF) {
		why = "wrote what is not its protocol: " + err.Error()
	}
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		why += ": " + s
	}
	p.mu.Lock()
	p.err = fmt.Errorf("%s: its helper %s %s", c.name, p.cmd.Path, why)
	p.mu.Unlock()
	close(p.dead)
}

func (p *proc) route(c *Client, r response) {
	if r.ID == 0 {
		if r.Warn != "" && c.cfg.Warn != nil {
			c.cfg.Warn(r.Warn)
		}
		return
	}
	p.mu.Lock()
	pc := p.pending[r.ID]
	if pc != nil && r.Progress == nil {
		delete(p.pending, r.ID)
	}
	p.mu.Unlock()
	switch {
	case pc == nil:
	case r.Progress != nil:
		pc.progress.Report("%s", *r.Progress)
	default:
		pc.done <- r
	}
}

// send writes one request.
func (p *proc) send(r request) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.enc.Encode(r)
}

// helper returns the running helper, starting one when there is none or the last one
// ended.
func (c *Client) helper() (*proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("%s: the scheduler is closed", c.name)
	}
	if c.p != nil {
		select {
		case <-c.p.dead:
			c.p = nil
		default:
			return c.p, nil
		}
	}
	p, err := c.start()
	if err != nil {
		return nil, err
	}
	c.p = p
	return p, nil
}

// call runs method in the helper (started if need be): see proc.call.
func (c *Client) call(ctx context.Context, method string, params, result any, progress sched.Progress) error {
	p, err := c.helper()
	if err != nil {
		return err
	}
	return p.call(ctx, c.name, method, params, result, progress)
}

// call runs method in the helper with params and decodes its result into result (nil:
// none). When ctx ends first the helper is told to cancel the call, and its answer
// (a launch's rollback) is still awaited, for cancelWait at most.
func (p *proc) call(ctx context.Context, name, method string, params, result any, progress sched.Progress) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", name, method, err)
	}
	pc := &pendingCall{done: make(chan response, 1), progress: progress}
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.pending[id] = pc
	p.mu.Unlock()
	req := request{ID: id, Method: method, Params: raw}
	if d, ok := ctx.Deadline(); ok {
		req.Deadline = d
	}
	if err := p.send(req); err != nil {
		p.forget(id)
		<-p.dead
		return p.err
	}
	var r response
	select {
	case r = <-pc.done:
	case <-p.dead:
		return p.err
	case <-ctx.Done():
		_ = p.send(request{ID: id, Cancel: true})
		t := time.NewTimer(cancelWait)
		defer t.Stop()
		select {
		case r = <-pc.done:
		case <-p.dead:
			return p.err
		case <-t.C:
			p.forget(id)
			return ctx.Err()
		}
	}
	if r.Err != nil {
		return fromWire(r.Err)
	}
	if result != nil {
		if err := json.Unmarshal(r.Result, result); err != nil {
			return fmt.Errorf("%s: the answer of its helper to %s: %w", name, method, err)
		}
	}
	return nil
}

func (p *proc) forget(id uint64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

// Close ends the helper: its input closes, so that it cancels its calls and exits; it
// is killed when it has not within stopWait. Running apps are not touched.
func (c *Client) Close() error {
	c.mu.Lock()
	p := c.p
	c.p, c.closed = nil, true
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	_ = p.stdin.Close()
	t := time.NewTimer(stopWait)
	defer t.Stop()
	select {
	case <-p.waited:
	case <-t.C:
		p.stop()
		<-p.waited
	}
	p.stop()
	return nil
}

// DryRun plans sub in the helper; the request comes back as its JSON.
func (c *Client) DryRun(ctx context.Context, sub sched.Submission) (any, error) {
	var raw json.RawMessage
	if err := c.call(ctx, mDryRun, subToWire(sub), &raw, nil); err != nil {
		return nil, err
	}
	return raw, nil
}

// Schedule submits a planned app; the helper's steps reach progress.
func (c *Client) Schedule(ctx context.Context, info *sched.DryRunInfo, progress sched.Progress) error {
	raw, err := json.Marshal(info.Request)
	if err != nil {
		return fmt.Errorf("%s: the request: %w", c.name, err)
	}
	return c.call(ctx, mSchedule, scheduleParams{Scheduler: info.Scheduler, Sub: subToWire(info.Submission), Request: raw}, nil, progress)
}

// Describe returns the app's status and definition.
func (c *Client) Describe(ctx context.Context, appID string) (*sched.Description, error) {
	var d wireDescription
	if err := c.call(ctx, mDescribe, appParams{AppID: appID}, &d, nil); err != nil {
		return nil, err
	}
	return &sched.Description{Status: d.Status, App: d.App, Cfg: c.runOpts.CfgValues(d.Cfg)}, nil
}

// Wait returns the app's status once it has ended, as the helper's scheduler waits for
// it (engine/runner prefers it to asking Describe again and again).
func (c *Client) Wait(ctx context.Context, appID string) (*spec.AppStatus, error) {
	var st spec.AppStatus
	if err := c.call(ctx, mWait, appParams{AppID: appID}, &st, nil); err != nil {
		return nil, err
	}
	return &st, nil
}

// List returns the apps of the scheduler; nothing, without starting the helper, when
// HasApps says there is none.
func (c *Client) List(ctx context.Context) ([]spec.AppStatus, error) {
	if c.hasApps != nil && !c.hasApps() {
		return nil, nil
	}
	var apps []spec.AppStatus
	err := c.call(ctx, mList, struct{}{}, &apps, nil)
	return apps, err
}

// ListAllHomes returns the apps of the scheduler's every home (sched.AllHomesLister):
// what the helper's scheduler lists so, or its List. Without a record of this home and
// without the helper, nothing, quietly: a machine without Kubernetes.
func (c *Client) ListAllHomes(ctx context.Context) ([]spec.AppStatus, error) {
	if c.hasApps != nil && !c.hasApps() {
		if _, err := c.command(); err != nil {
			return nil, nil
		}
	}
	var apps []spec.AppStatus
	err := c.call(ctx, mListAll, struct{}{}, &apps, nil)
	return apps, err
}

// Cancel asks the app to stop.
func (c *Client) Cancel(ctx context.Context, appID string) error {
	return c.call(ctx, mCancel, appParams{AppID: appID}, nil, nil)
}

// Delete removes the app.
func (c *Client) Delete(ctx context.Context, appID string, force bool) error {
	return c.call(ctx, mDelete, appParams{AppID: appID, Force: force}, nil, nil)
}

// Logs opens the lines of one replica in the helper. A goroutine fetches them in
// batches ahead of Next, so that Ready tells what Next would do.
func (c *Client) Logs(ctx context.Context, appID, role string, replica int, opts sched.LogOptions) (sched.LogIterator, error) {
	w := wireLogOpts{Since: opts.Since, Until: opts.Until, Follow: opts.Follow, Streams: opts.Streams, Tail: opts.Tail, Pending: opts.Pending}
	if opts.Regex != nil {
		w.Regex = opts.Regex.String()
	}
	p, err := c.helper()
	if err != nil {
		return nil, err
	}
	var ip iterParams
	if err := p.call(ctx, c.name, mLogs, logsParams{AppID: appID, Role: role, Replica: replica, Opts: w}, &ip, nil); err != nil {
		return nil, err
	}
	ictx, cancel := context.WithCancel(context.Background())
	it := &clientIter{name: c.name, p: p, id: ip.Iter, follow: opts.Follow, ch: make(chan lineBatch, 1), cancel: cancel, done: make(chan struct{})}
	go it.fetch(ictx)
	return it, nil
}

// lineBatch is a batch of lines, or the error that ended them.
type lineBatch struct {
	lines []sched.Line
	err   error
}

// clientIter is a log iterator of the helper.
type clientIter struct {
	name   string
	p      *proc
	follow bool
	id     uint64
	ch     chan lineBatch
	cancel context.CancelFunc
	done   chan struct{}

	cur []sched.Line // Next and Ready only (one goroutine)
	err error
}

// fetch asks the helper for batch after batch until the lines end, an error, or
// Close.
func (it *clientIter) fetch(ctx context.Context) {
	defer close(it.done)
	for {
		var b batch
		err := it.p.call(ctx, it.name, mNext, iterParams{Iter: it.id, Max: maxBatch}, &b, nil)
		if err == nil && len(b.Lines) == 0 {
			err = fmt.Errorf("%s: its helper answered no lines", it.name)
		}
		select {
		case it.ch <- lineBatch{lines: b.Lines, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// Next returns the next line, io.EOF at the end, or ctx's error.
func (it *clientIter) Next(ctx context.Context) (sched.Line, error) {
	for len(it.cur) == 0 {
		if it.err != nil {
			return sched.Line{}, it.err
		}
		select {
		case b := <-it.ch:
			it.cur, it.err = b.lines, b.err
		case <-ctx.Done():
			return sched.Line{}, ctx.Err()
		}
	}
	l := it.cur[0]
	it.cur = it.cur[1:]
	return l, nil
}

// readyWait bounds how long Ready waits for the next batch of a log that is not
// followed.
const readyWait = 5 * time.Second

// Ready reports whether Next would return at once. The lines of a log that is not
// followed all exist already (the next batch is on its way): "none ready" would be
// false, and a merge of several replicas (engine/logs.Merge) would put another's later
// lines first. So Ready waits for the next batch, for readyWait at most; a followed
// log says what it holds now.
func (it *clientIter) Ready() bool {
	if len(it.cur) > 0 || it.err != nil {
		return true
	}
	select {
	case b := <-it.ch:
		it.cur, it.err = b.lines, b.err
		return true
	default:
	}
	if it.follow {
		return false
	}
	t := time.NewTimer(readyWait)
	defer t.Stop()
	select {
	case b := <-it.ch:
		it.cur, it.err = b.lines, b.err
		return true
	case <-t.C:
		return false
	}
}

// Close stops the fetching and closes the helper's iterator.
func (it *clientIter) Close() error {
	it.cancel()
	<-it.done
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	select {
	case <-it.p.dead:
		// A helper that ended has closed its iterators.
		return nil
	default:
	}
	err := it.p.call(ctx, it.name, mCloseIter, iterParams{Iter: it.id}, nil, nil)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: closing a log in its helper: %w", it.name, err)
	}
	return nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
