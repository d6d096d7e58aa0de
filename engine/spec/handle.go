package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultSession is the session name used when none is given.
const DefaultSession = "wick"

// ErrMalformedHandle is wrapped by every handle and log identifier parse error.
var ErrMalformedHandle = errors.New("malformed app handle")

// Handle names an app: SCHEDULER://SESSION/APP_ID (APP_ID may be NAMESPACE:APP_ID on
// kubernetes, as TorchX has it).
type Handle struct {
	Scheduler string
	Session   string
	AppID     string
}

// String formats the handle as SCHEDULER://SESSION/APP_ID.
func (h Handle) String() string { return h.Scheduler + "://" + h.Session + "/" + h.AppID }

// ParseHandle reads SCHEDULER://SESSION/APP_ID. As in TorchX the session may be empty and
// the app id is what follows the last "/"; unlike TorchX, every part must be a valid
// name, so that a handle can never walk out of wick's state directory.
func ParseHandle(s string) (Handle, error) {
	sched, rest, ok := strings.Cut(s, "://")
	if !ok || sched == "" {
		return Handle{}, fmt.Errorf("%w %q: want SCHEDULER://SESSION/APP_ID", ErrMalformedHandle, s)
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 || i == len(rest)-1 {
		return Handle{}, fmt.Errorf("%w %q: want SCHEDULER://SESSION/APP_ID", ErrMalformedHandle, s)
	}
	h := Handle{Scheduler: sched, Session: rest[:i], AppID: rest[i+1:]}
	if err := h.validate(); err != nil {
		return Handle{}, fmt.Errorf("%w %q: %v", ErrMalformedHandle, s, err)
	}
	if h.Session == "" {
		h.Session = DefaultSession
	}
	return h, nil
}

func (h Handle) validate() error {
	if !isWord(h.Scheduler) {
		return fmt.Errorf("scheduler %q is not a name", h.Scheduler)
	}
	if h.Session != "" {
		if err := ValidateName("session", h.Session); err != nil {
			return err
		}
	}
	return validateAppID(h.AppID)
}

// validateAppID checks a handle's app id: a name, or NAMESPACE:NAME as TorchX's
// kubernetes scheduler writes its handles (kubernetes://SESSION/NAMESPACE:APP_ID),
// each part a name. The scheduler reads the namespace; no path is made of such an id.
func validateAppID(id string) error {
	if ns, name, ok := strings.Cut(id, ":"); ok {
		if err := ValidateName("namespace", ns); err != nil {
			return err
		}
		return ValidateName("app id", name)
	}
	return ValidateName("app id", id)
}

// LogID names the logs of an app, a role, or some replicas of a role:
// SCHEDULER://SESSION/APP_ID[/ROLE[/IDS]] with IDS like "0,2".
type LogID struct {
	// Handle is the app's; a named field, not embedded, so that a LogID is never
	// printed as its handle alone.
	Handle Handle
	Role   string
	// Replicas lists the chosen replica ids; empty means all.
	Replicas []int
}

// ParseLogID reads SCHEDULER://[SESSION]/APP_ID[/ROLE[/IDS]] with the rule of torchx log:
// the session holds no "/", so the parts after the app id are the role and the ids.
func ParseLogID(s string) (LogID, error) {
	bad := func(why string) (LogID, error) {
		return LogID{}, fmt.Errorf("%w %q: %s (want SCHEDULER://SESSION/APP_ID[/ROLE[/0,1]])", ErrMalformedHandle, s, why)
	}
	sched, rest, ok := strings.Cut(s, "://")
	if !ok || sched == "" {
		return bad("no scheduler")
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 4 {
		return bad("wrong number of parts")
	}
	l := LogID{Handle: Handle{Scheduler: sched, Session: parts[0], AppID: parts[1]}}
	if err := l.Handle.validate(); err != nil {
		return bad(err.Error())
	}
	if l.Handle.Session == "" {
		l.Handle.Session = DefaultSession
	}
	if len(parts) >= 3 {
		l.Role = parts[2]
		if err := ValidateName("role", l.Role); err != nil {
			return bad(err.Error())
		}
	}
	if len(parts) == 4 {
		ids, err := ParseReplicaIDs(parts[3])
		if err != nil {
			return bad(err.Error())
		}
		l.Replicas = ids
	}
	return l, nil
}

// ParseReplicaIDs reads a comma-separated list of replica ids such as "0,2". A trailing
// comma is allowed, as in torchx log.
func ParseReplicaIDs(s string) ([]int, error) {
	var ids []int
	seen := map[int]bool{}
	for i, part := range strings.Split(s, ",") {
		if part == "" && i > 0 && i == strings.Count(s, ",") {
			break
		}
		k, err := strconv.Atoi(part)
		if err != nil || k < 0 || strings.TrimLeft(part, "0123456789") != "" {
			return nil, fmt.Errorf("replica id %q is not a non-negative integer", part)
		}
		if !seen[k] {
			ids = append(ids, k)
			seen[k] = true
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("no replica ids")
	}
	return ids, nil
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}
