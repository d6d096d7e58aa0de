package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// maxBatch is the most lines one next answer holds.
const maxBatch = 1024

// Server is the helper's side: it answers a Client's calls with a scheduler.
type Server struct {
	mu  sync.Mutex // guards enc
	enc *json.Encoder

	itMu  sync.Mutex // guards iters and next
	iters map[uint64]*serverIter
	next  uint64
}

// serverIter is an open log iterator and the error it gave after a batch's lines,
// for the next call.
type serverIter struct {
	it  sched.LogIterator
	err error
}

// NewServer makes a server that writes its answers to out.
func NewServer(out io.Writer) *Server {
	return &Server{enc: json.NewEncoder(out), iters: map[uint64]*serverIter{}}
}

// Warn sends a warning of the scheduler to the client (sched.Config.Warn).
func (s *Server) Warn(msg string) { s.send(response{Warn: msg}) }

func (s *Server) send(r response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A client that is gone cannot hear of it: the read side ends Serve.
	_ = s.enc.Encode(r)
}

// Serve answers the calls read from in with sc until in ends or ctx is done; then it
// cancels the calls under way, waits for them, closes the open log iterators and sc.
// Each call runs in a goroutine of its own. Schedule's request (DryRun's answer) comes
// as its JSON, a json.RawMessage.
func (s *Server) Serve(ctx context.Context, sc sched.Scheduler, in io.Reader) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var cmu sync.Mutex
	cancels := map[uint64]context.CancelFunc{}
	dec := json.NewDecoder(in)
	var err error
	for {
		var req request
		if err = dec.Decode(&req); err != nil {
			break
		}
		if req.Cancel {
			cmu.Lock()
			if c := cancels[req.ID]; c != nil {
				c()
			}
			cmu.Unlock()
			continue
		}
		cctx, cancel := context.WithCancel(ctx)
		if !req.Deadline.IsZero() {
			cctx, cancel = context.WithDeadline(ctx, req.Deadline)
		}
		cmu.Lock()
		cancels[req.ID] = cancel
		cmu.Unlock()
		wg.Go(func() {
			defer func() {
				cmu.Lock()
				delete(cancels, req.ID)
				cmu.Unlock()
				cancel()
			}()
			result, err := s.call(cctx, sc, req)
			r := response{ID: req.ID, Err: toWire(err)}
			if err == nil {
				if r.Result, err = json.Marshal(result); err != nil {
					r.Err = toWire(fmt.Errorf("remote: answer of %s: %w", req.Method, err))
				}
			}
			s.send(r)
		})
	}
	stop()
	wg.Wait()
	s.itMu.Lock()
	for id, it := range s.iters {
		_ = it.it.Close()
		delete(s.iters, id)
	}
	s.itMu.Unlock()
	cerr := sc.Close()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return errors.Join(err, cerr)
}

// call runs one request.
func (s *Server) call(ctx context.Context, sc sched.Scheduler, req request) (any, error) {
	switch req.Method {
	case mDryRun:
		var p wireSub
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, badParams(req, err)
		}
		return sc.DryRun(ctx, subFromWire(p, sc.RunOpts()))
	case mSchedule:
		return nil, s.schedule(ctx, sc, req)
	case mDescribe:
		return s.describe(ctx, sc, req)
	case mWait:
		return s.wait(ctx, sc, req)
	case mList:
		return sc.List(ctx)
	case mListAll:
		if l, ok := sc.(sched.AllHomesLister); ok {
			return l.ListAllHomes(ctx)
		}
		return sc.List(ctx)
	case mCancel, mDelete:
		var p appParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, badParams(req, err)
		}
		if req.Method == mCancel {
			return nil, sc.Cancel(ctx, p.AppID)
		}
		return nil, sc.Delete(ctx, p.AppID, p.Force)
	case mLogs:
		return s.logs(ctx, sc, req)
	case mNext:
		return s.nextBatch(ctx, req)
	case mCloseIter:
		return nil, s.closeIter(req)
	case mKill, mUsage, mHostPIDs, mExecCheck:
		return s.capability(ctx, sc, req)
	}
	return nil, fmt.Errorf("remote: unknown method %q", req.Method)
}

func badParams(req request, err error) error {
	return fmt.Errorf("remote: parameters of %s: %w", req.Method, err)
}

func (s *Server) schedule(ctx context.Context, sc sched.Scheduler, req request) error {
	var p scheduleParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return badParams(req, err)
	}
	info := &sched.DryRunInfo{Scheduler: p.Scheduler, Submission: subFromWire(p.Sub, sc.RunOpts()), Request: p.Request}
	return sc.Schedule(ctx, info, func(step string) {
		s.send(response{ID: req.ID, Progress: &step})
	})
}

func (s *Server) describe(ctx context.Context, sc sched.Scheduler, req request) (any, error) {
	var p appParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, badParams(req, err)
	}
	d, err := sc.Describe(ctx, p.AppID)
	if err != nil {
		return nil, err
	}
	return wireDescription{Status: d.Status, App: d.App, Cfg: spec.CfgStrings(d.Cfg)}, nil
}

// waiter is a scheduler that waits for an app's end itself (as engine/runner asks).
type waiter interface {
	Wait(ctx context.Context, appID string) (*spec.AppStatus, error)
}

// waitPoll is how often wait asks a scheduler that cannot wait itself.
const waitPoll = 250 * time.Millisecond

// wait returns the app's status once it has ended: the scheduler's own Wait, else its
// Describe every waitPoll.
func (s *Server) wait(ctx context.Context, sc sched.Scheduler, req request) (any, error) {
	var p appParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, badParams(req, err)
	}
	if w, ok := sc.(waiter); ok {
		return w.Wait(ctx, p.AppID)
	}
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	for {
		d, err := sc.Describe(ctx, p.AppID)
		if err != nil {
			return nil, err
		}
		if d.Status.State.Terminal() {
			return &d.Status, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func (s *Server) logs(ctx context.Context, sc sched.Scheduler, req request) (any, error) {
	var p logsParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, badParams(req, err)
	}
	opts := sched.LogOptions{Since: p.Opts.Since, Until: p.Opts.Until, Follow: p.Opts.Follow, Streams: p.Opts.Streams, Tail: p.Opts.Tail, Pending: p.Opts.Pending}
	if p.Opts.Regex != "" {
		re, err := regexp.Compile(p.Opts.Regex)
		if err != nil {
			return nil, badParams(req, err)
		}
		opts.Regex = re
	}
	it, err := sc.Logs(ctx, p.AppID, p.Role, p.Replica, opts)
	if err != nil {
		return nil, err
	}
	s.itMu.Lock()
	defer s.itMu.Unlock()
	s.next++
	s.iters[s.next] = &serverIter{it: it}
	return iterParams{Iter: s.next}, nil
}

func (s *Server) iter(req request) (*serverIter, iterParams, error) {
	var p iterParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, p, badParams(req, err)
	}
	s.itMu.Lock()
	defer s.itMu.Unlock()
	it := s.iters[p.Iter]
	if it == nil {
		return nil, p, fmt.Errorf("remote: no log iterator %d", p.Iter)
	}
	return it, p, nil
}

// nextBatch waits for a line of the iterator, then takes those that are ready, up to
// the batch's bound. An error after some lines waits for the next call. Calls of one
// iterator come one at a time (the client's reader).
func (s *Server) nextBatch(ctx context.Context, req request) (any, error) {
	si, p, err := s.iter(req)
	if err != nil {
		return nil, err
	}
	if si.err != nil {
		return nil, si.err
	}
	l, err := si.it.Next(ctx)
	if err != nil {
		return nil, err
	}
	b := batch{Lines: []sched.Line{l}}
	r, ok := si.it.(sched.Readier)
	limit := min(max(p.Max, 1), maxBatch)
	for ok && len(b.Lines) < limit && r.Ready() {
		l, err := si.it.Next(ctx)
		if err != nil {
			si.err = err
			break
		}
		b.Lines = append(b.Lines, l)
	}
	return b, nil
}

func (s *Server) closeIter(req request) error {
	it, p, err := s.iter(req)
	if err != nil {
		return err
	}
	s.itMu.Lock()
	delete(s.iters, p.Iter)
	s.itMu.Unlock()
	return it.it.Close()
}

// capability runs one of the optional capabilities, which sc may lack.
func (s *Server) capability(ctx context.Context, sc sched.Scheduler, req request) (any, error) {
	var p execParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, badParams(req, err)
	}
	lacks := fmt.Errorf("remote: %s has no %s", sc.Name(), req.Method)
	switch req.Method {
	case mKill:
		k, ok := sc.(sched.Killer)
		if !ok {
			return nil, lacks
		}
		return nil, k.Kill(ctx, p.AppID)
	case mUsage:
		u, ok := sc.(sched.UsageReader)
		if !ok {
			return nil, lacks
		}
		m, err := u.Usage(ctx, p.AppID)
		if err != nil {
			return nil, err
		}
		out := make([]keyedUsage, 0, len(m))
		for k, v := range m {
			out = append(out, keyedUsage{Role: k.Role, Replica: k.Replica, Usage: v})
		}
		return out, nil
	case mHostPIDs:
		h, ok := sc.(sched.HostPIDer)
		if !ok {
			return nil, lacks
		}
		m, err := h.HostPIDs(ctx, p.AppID)
		if err != nil {
			return nil, err
		}
		out := make([]keyedPID, 0, len(m))
		for k, v := range m {
			out = append(out, keyedPID{Role: k.Role, Replica: k.Replica, PID: v})
		}
		return out, nil
	default: // mExecCheck: prepare the command (what Exec checks), not run it
		e, ok := sc.(sched.Execer)
		if !ok {
			return nil, lacks
		}
		_, err := e.Exec(ctx, p.AppID, p.Role, p.Replica, p.Req)
		return nil, err
	}
}
