package local

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

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
	l, dirs, err := readLaunchOf(dir, refs)
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
