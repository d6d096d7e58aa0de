// Package remote runs a scheduler in a helper process, so that the wick binary does
// not link what the scheduler needs: the kubernetes scheduler's client-go (42 MB of
// code, whose package initialisers run at every start of every program that links it,
// 2.8x the CPU of a `wick --version` without it) lives in the helper wick-kubernetes,
// which wick starts on the first call that needs the cluster and talks to over its
// stdin and stdout.
//
// Client is a sched.Scheduler that forwards each call to the helper; Serve is the
// helper's side, over any sched.Scheduler. The protocol is JSON, one message a line:
// a request {id, method, params, deadline} or a cancel {id, cancel}; a response
// {id, result} or {id, error}, a launch's progress {id, progress}, and warnings
// {warn}. Errors keep what callers decide on (errors.Is against sched.ErrNotFound,
// sched.ErrUnreachable, the spec's bad-input errors, io.EOF, the context's errors;
// sched.LeftBehindError) by name, beside their message.
//
// kube.go has the kubernetes scheduler's own part: its name and run options (known
// without the helper) and its registration.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// The methods of the protocol.
const (
	mDryRun    = "dryrun"
	mSchedule  = "schedule"
	mDescribe  = "describe"
	mWait      = "wait"
	mList      = "list"
	mListAll   = "list_all"
	mCancel    = "cancel"
	mDelete    = "delete"
	mLogs      = "logs"
	mNext      = "next"
	mCloseIter = "close_iter"
	// The optional capabilities (Caps): asked of the helper's scheduler by type
	// assertion; one it lacks answers with an error.
	mKill      = "kill"
	mUsage     = "usage"
	mHostPIDs  = "host_pids"
	mExecCheck = "exec_check"
)

// request is a message to the helper: a call, or the cancel of call ID.
type request struct {
	ID       uint64          `json:"id"`
	Method   string          `json:"method,omitempty"`
	Cancel   bool            `json:"cancel,omitempty"`
	Deadline time.Time       `json:"deadline,omitzero"`
	Params   json.RawMessage `json:"params,omitempty"`
}

// response is a message from the helper: the end of call ID (Result or Err), a step
// of its launch (Progress), or, with ID 0, a warning.
type response struct {
	ID       uint64          `json:"id,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Err      *wireError      `json:"error,omitempty"`
	Progress *string         `json:"progress,omitempty"`
	Warn     string          `json:"warn,omitempty"`
}

// wireError is an error on the wire: its message and the sentinels it matched. A
// sched.LeftBehindError has Left, what its rollback left, and Msg is its Err's.
type wireError struct {
	Msg   string   `json:"msg"`
	Kinds []string `json:"kinds,omitempty"`
	Left  string   `json:"left,omitempty"`
}

// sentinels are the errors callers decide on, by their name on the wire.
var sentinels = []struct {
	name string
	err  error
}{
	{"not_found", sched.ErrNotFound},
	{"running", sched.ErrRunning},
	{"unreachable", sched.ErrUnreachable},
	{"no_raw_log", sched.ErrNoRawLog},
	{"no_replica", sched.ErrNoReplica},
	{"no_role", sched.ErrNoRole},
	{"no_exec", sched.ErrNoExec},
	{"canceled", context.Canceled},
	{"deadline", context.DeadlineExceeded},
	{"eof", io.EOF},
	{"invalid_run_opt", spec.ErrInvalidRunOpt},
	{"no_roles", spec.ErrNoRoles},
	{"empty_entrypoint", spec.ErrEmptyEntrypoint},
	{"bad_replicas", spec.ErrBadReplicas},
	{"too_many_replicas", spec.ErrTooManyReplicas},
	{"replica_budget", spec.ErrReplicaBudget},
	{"bad_env_name", spec.ErrBadEnvName},
	{"malformed_handle", spec.ErrMalformedHandle},
}

// toWire words err for the wire.
func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	var left *sched.LeftBehindError
	if errors.As(err, &left) {
		w := toWire(left.Err)
		w.Left = left.Left.Error()
		return w
	}
	w := &wireError{Msg: err.Error()}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			w.Kinds = append(w.Kinds, s.name)
		}
	}
	return w
}

// fromWire rebuilds an error: the sentinel itself when the message is only its own
// (io.EOF, context.Canceled: callers may compare with ==), else an error with the
// message that matches its sentinels.
func fromWire(w *wireError) error {
	if w == nil {
		return nil
	}
	var err error
	r := &remoteError{msg: w.Msg}
	for _, k := range w.Kinds {
		for _, s := range sentinels {
			if s.name == k {
				r.kinds = append(r.kinds, s.err)
			}
		}
	}
	err = r
	if len(r.kinds) == 1 && r.kinds[0].Error() == w.Msg {
		err = r.kinds[0]
	}
	if w.Left != "" {
		return &sched.LeftBehindError{Err: err, Left: errors.New(w.Left)}
	}
	return err
}

// remoteError is an error of the helper: its message, and the sentinels it matches.
type remoteError struct {
	msg   string
	kinds []error
}

func (e *remoteError) Error() string { return e.msg }

// Is matches the sentinels the error matched in the helper.
func (e *remoteError) Is(target error) bool {
	for _, k := range e.kinds {
		if k == target {
			return true
		}
	}
	return false
}

// wireSub is a sched.Submission on the wire: run options in their string form, which
// the receiving side casts back by its run options (JSON would make an int a float).
type wireSub struct {
	AppID     string            `json:"app_id"`
	Session   string            `json:"session"`
	App       *spec.AppDef      `json:"app"`
	Cfg       map[string]string `json:"cfg,omitempty"`
	Workspace string            `json:"workspace,omitempty"`
	Devices   []string          `json:"devices,omitempty"`
}

func subToWire(s sched.Submission) wireSub {
	return wireSub{AppID: s.AppID, Session: s.Session, App: s.App, Cfg: spec.CfgStrings(s.Cfg), Workspace: s.Workspace, Devices: s.Devices}
}

func subFromWire(w wireSub, opts spec.RunOpts) sched.Submission {
	return sched.Submission{AppID: w.AppID, Session: w.Session, App: w.App, Cfg: opts.CfgValues(w.Cfg), Workspace: w.Workspace, Devices: w.Devices}
}

// scheduleParams is Schedule's: the planned app and the scheduler's request as DryRun
// gave it.
type scheduleParams struct {
	Scheduler string          `json:"scheduler"`
	Sub       wireSub         `json:"sub"`
	Request   json.RawMessage `json:"request"`
}

// appParams names an app (describe, cancel, delete).
type appParams struct {
	AppID string `json:"app_id"`
	Force bool   `json:"force,omitempty"`
}

// wireDescription is a sched.Description on the wire.
type wireDescription struct {
	Status spec.AppStatus    `json:"status"`
	App    *spec.AppDef      `json:"app"`
	Cfg    map[string]string `json:"cfg,omitempty"`
}

// logsParams opens a replica's log.
type logsParams struct {
	AppID   string      `json:"app_id"`
	Role    string      `json:"role"`
	Replica int         `json:"replica"`
	Opts    wireLogOpts `json:"opts"`
}

// wireLogOpts is a sched.LogOptions on the wire: the regex as its source.
type wireLogOpts struct {
	Regex   string       `json:"regex,omitempty"`
	Since   time.Time    `json:"since,omitzero"`
	Until   time.Time    `json:"until,omitzero"`
	Follow  bool         `json:"follow,omitempty"`
	Streams sched.Stream `json:"streams,omitempty"`
	Tail    int          `json:"tail,omitempty"`
	Pending bool         `json:"pending,omitempty"`
}

// iterParams names an open log iterator; Max bounds the lines of one batch.
type iterParams struct {
	Iter uint64 `json:"iter"`
	Max  int    `json:"max,omitempty"`
}

// batch is a next's answer: the lines that were ready, at least one, or the end.
type batch struct {
	Lines []sched.Line `json:"lines"`
}

// keyedUsage is one replica's usage on the wire (a map keyed by a struct is no JSON).
type keyedUsage struct {
	Role    string      `json:"role"`
	Replica int         `json:"replica"`
	Usage   sched.Usage `json:"usage"`
}

// keyedPID is one replica's host PID on the wire.
type keyedPID struct {
	Role    string `json:"role"`
	Replica int    `json:"replica"`
	PID     int    `json:"pid"`
}

// execParams names a replica and what to run in its place.
type execParams struct {
	AppID   string            `json:"app_id"`
	Role    string            `json:"role"`
	Replica int               `json:"replica"`
	Req     sched.ExecRequest `json:"req"`
}
