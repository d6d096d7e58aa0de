package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// DescribeReplicas is Describe for a caller that looks at the replicas of refs only
// (`wick log APP/ROLE/K`): its status holds, of each role, only those replicas. It
// decodes of the app's files what they need and skims the rest (see skimmer): the
// files of an app of 1,024 replicas are 2 MB, whose decoding cost `wick log` of one
// replica 45 ms where reading the replica's log takes one. What it reads serves the
// logs of those replicas opened next, as Describe's does. An app whose files it
// cannot read so (missing, corrupt, another scheduler's, a replica not there) is
// described by Describe, which says what is wrong.
func (s *Scheduler) DescribeReplicas(ctx context.Context, appID string, refs []sched.ReplicaRef) (*sched.Description, error) {
	if d, err := s.describeReplicas(appID, refs); err == nil {
		return d, nil
	}
	return s.Describe(ctx, appID)
}

func (s *Scheduler) describeReplicas(appID string, refs []sched.ReplicaRef) (*sched.Description, error) {
	dir, err := s.appDir(appID)
	if err != nil {
		return nil, err
	}
	// The keys are taken before the files are read: a write in between makes the
	// next use read them again (see stateKey).
	skey, sok := stateKey(dir)
	lkey, lok := statKey(filepath.Join(dir, launchFile))
	if !sok || !lok {
		return nil, errSkim
	}
	st, err := readStateOf(dir, refs)
	if err != nil {
		return nil, err
	}
	if st.Scheduler != s.name {
		return nil, errSkim
	}
	st = reconcile(dir, st)
	l, dirs, err := readLaunchHead(dir, st, refs)
	if err != nil {
		l, dirs, err = readLaunchOf(dir, refs)
	}
	if err != nil {
		return nil, err
	}
	s.logCache.put(dir, skey, logStateOf(st))
	s.logCache.putDirs(dir, lkey, dirs)
	return &sched.Description{Status: st.AppStatus, App: l.App, Cfg: s.RunOpts().CfgValues(l.Cfg)}, nil
}

// wants reports whether refs has replica k of role.
func wants(refs []sched.ReplicaRef, role string, k int) bool {
	for _, r := range refs {
		if r.Role == role && r.Replica == k {
			return true
		}
	}
	return false
}

// readStateOf reads the app's state.json as readState does, but keeps, of each role,
// only the statuses of the replicas of refs, and decodes no other. A replica's status
// is found at its id's place in its role's list (as newState makes it); anything else
// (a replica not there, a field unknown, JSON it cannot walk) is errSkim.
func readStateOf(appDir string, refs []sched.ReplicaRef) (*state, error) {
	data, err := safefs.ReadFile(filepath.Join(appDir, stateFile), maxStateFile)
	if err != nil {
		return nil, errSkim
	}
	s := &skimmer{b: data}
	var roles []spec.RoleStatus
	start, end, found := -1, -1, 0
	err = s.object(func(key string) error {
		if key != "roles" || start >= 0 {
			return s.skip()
		}
		s.ws()
		start = s.i
		err := s.array(func(int) error {
			var rs spec.RoleStatus
			err := s.object(func(key string) error {
				switch key {
				case "role":
					return decodeNext(s, &rs.Role)
				case "replicas":
					if rs.Role == "" {
						return errSkim // its name comes first, as written
					}
					return s.array(func(k int) error {
						if !wants(refs, rs.Role, k) {
							return s.skip()
						}
						var rep spec.ReplicaStatus
						if err := decodeNext(s, &rep); err != nil || rep.ID != k {
							return errSkim
						}
						rs.Replicas = append(rs.Replicas, rep)
						found++
						return nil
					})
				}
				return errSkim
			})
			roles = append(roles, rs)
			return err
		})
		end = s.i
		return err
	})
	if err != nil || start < 0 || found != len(refs) {
		return nil, errSkim
	}
	// The rest of the state, its roles left out, is small: decoded as a whole.
	rest := make([]byte, 0, len(data)-(end-start)+4)
	rest = append(append(append(rest, data[:start]...), "null"...), data[end:]...)
	var st state
	if err := json.Unmarshal(rest, &st); err != nil {
		return nil, errSkim
	}
	if st.Scheduler == "" || st.AppID != filepath.Base(appDir) {
		return nil, errSkim
	}
	st.Roles = roles
	return &st, nil
}

// readLaunchOf reads the app's launch.json as readLaunch does, but of its request
// only the log directories of the replicas of refs, found at their ids' places: the
// launch it returns has no Request.
func readLaunchOf(appDir string, refs []sched.ReplicaRef) (*launch, map[sched.ReplicaRef]string, error) {
	data, err := safefs.ReadFile(filepath.Join(appDir, launchFile), maxStateFile)
	if err != nil {
		return nil, nil, errSkim
	}
	s := &skimmer{b: data}
	dirs := map[sched.ReplicaRef]string{}
	start, end := -1, -1
	err = s.object(func(key string) error {
		if key != "request" || start >= 0 {
			return s.skip()
		}
		s.ws()
		start = s.i
		err := s.object(func(key string) error {
			if key != "roles" {
				return s.skip()
			}
			return s.array(func(int) error {
				var name string
				return s.object(func(key string) error {
					switch key {
					case "name":
						return decodeNext(s, &name)
					case "replicas":
						if name == "" {
							return errSkim
						}
						return s.array(func(k int) error {
							if !wants(refs, name, k) {
								return s.skip()
							}
							var rep struct {
								ID     int    `json:"id"`
								LogDir string `json:"log_dir"`
							}
							if err := decodeNext(s, &rep); err != nil || rep.ID != k || rep.LogDir == "" {
								return errSkim
							}
							dirs[sched.ReplicaRef{Role: name, Replica: k}] = rep.LogDir
							return nil
						})
					}
					return s.skip()
				})
			})
		})
		end = s.i
		return err
	})
	if err != nil || start < 0 || len(dirs) != len(refs) {
		return nil, nil, errSkim
	}
	rest := make([]byte, 0, len(data)-(end-start)+4)
	rest = append(append(append(rest, data[:start]...), "null"...), data[end:]...)
	var l launch
	if err := json.Unmarshal(rest, &l); err != nil || l.App == nil {
		return nil, nil, errSkim
	}
	return &l, dirs, nil
}

// launchHeadSize is how much of launch.json readLaunchHead reads: its members before
// the request (the AppDef, the run options) are a few kilobytes.
const launchHeadSize = 64 << 10

// launchKeys are the members of launch.json before its request, as written.
var launchKeys = []string{"version", "scheduler", "session", "app_id", "created", "self", "app", "cfg"}

// readLaunchHead reads the app's launch as readLaunchOf does, from the start of
// launch.json only: its members up to the request, and of the request its log
// directory, which comes before its roles. The log directory of replica k of a role is
// the request's log directory/role/k (plan makes it so); it is used only where the
// state (st, of those replicas) names the same, so that what a launch file of another
// make says is read from it whole (readLaunchOf). The rest of a 1,024-replica app's
// launch file, 1.5 MB, is not read at all.
func readLaunchHead(appDir string, st *state, refs []sched.ReplicaRef) (*launch, map[sched.ReplicaRef]string, error) {
	data, err := safefs.ReadFileHead(filepath.Join(appDir, launchFile), launchHeadSize)
	if err != nil {
		return nil, nil, errSkim
	}
	s := &skimmer{b: data}
	seen := map[string][]byte{}
	var logDir string
	errEnough := errors.New("enough read")
	err = s.object(func(key string) error {
		if key != "request" {
			v, err := s.value()
			seen[key] = v
			return err
		}
		for _, k := range launchKeys {
			if seen[k] == nil {
				return errSkim // after the request, as not written
			}
		}
		return s.object(func(key string) error {
			switch key {
			case "log_dir":
				return decodeNext(s, &logDir)
			case "roles":
				return errEnough
			}
			return s.skip()
		})
	})
	if !errors.Is(err, errEnough) || logDir == "" {
		return nil, nil, errSkim
	}
	dirs := map[sched.ReplicaRef]string{}
	for _, ref := range refs {
		dir := filepath.Join(logDir, ref.Role, strconv.Itoa(ref.Replica))
		if !stateNames(st, ref, dir) {
			return nil, nil, errSkim
		}
		dirs[ref] = dir
	}
	head := []byte{'{'}
	for i, k := range launchKeys {
		if i > 0 {
			head = append(head, ',')
		}
		head = strconv.AppendQuote(head, k)
		head = append(append(head, ':'), seen[k]...)
	}
	head = append(head, '}')
	// Decoded as a launch without its Request field: encoding/json builds the
	// encoders of every field's type at a type's first decode, and the request's
	// types are the most of launch.json's (a cost a new process such as `wick
	// status` pays once, in full).
	var h struct {
		Version   int               `json:"version"`
		Scheduler string            `json:"scheduler"`
		Session   string            `json:"session"`
		AppID     string            `json:"app_id"`
		Created   time.Time         `json:"created"`
		Self      []string          `json:"self"`
		App       *spec.AppDef      `json:"app"`
		Cfg       map[string]string `json:"cfg"`
	}
	if err := json.Unmarshal(head, &h); err != nil || h.App == nil {
		return nil, nil, errSkim
	}
	return &launch{Version: h.Version, Scheduler: h.Scheduler, Session: h.Session, AppID: h.AppID,
		Created: h.Created, Self: h.Self, App: h.App, Cfg: h.Cfg}, dirs, nil
}

// stateNames reports whether st gives ref's replica the log directory dir.
func stateNames(st *state, ref sched.ReplicaRef, dir string) bool {
	for _, r := range st.Roles {
		for _, rep := range r.Replicas {
			if r.Role == ref.Role && rep.ID == ref.Replica {
				return rep.LogDir == dir
			}
		}
	}
	return false
}

// decodeNext decodes the next value of s into v.
func decodeNext(s *skimmer, v any) error {
	b, err := s.value()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", errSkim, err)
	}
	return nil
}
