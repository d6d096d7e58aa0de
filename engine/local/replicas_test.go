package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestDescribeReplicasMatchesDescribe: describing some replicas gives what Describe
// gives, of each role those replicas only, and the logs opened next find the same
// directories; on an app of two roles, a replica restarted once, arguments and an
// environment full of quotes, backslashes and non-ASCII (what skimming must step
// over). A replica not there, or a state file cut short, gives what Describe gives.
func TestDescribeReplicasMatchesDescribe(t *testing.T) {
	s := testScheduler(t, false)
	marker := filepath.Join(t.TempDir(), "m")
	a := role("a", "sh", "-c", `if [ "$WICK_REPLICA_ID" = 1 ] && [ ! -e "$1" ]; then touch "$1"; exit 1; fi; echo "a $WICK_REPLICA_ID \"q\" \\ é"`, "sh", marker)
	a.NumReplicas, a.MaxRetries, a.RetryPolicy = 3, 1, spec.RetryReplica
	a.Env = map[string]string{"Q": `"}]{[\"`, "U": "é ☃ \u2028"}
	b := role("b", "sh", "-c", `echo "b {[" ; echo '}]"' >&2`)
	b.NumReplicas = 2
	id := start(t, s, appOf("skim", a, b), nil)
	waitApp(t, s, id)
	ctx := context.Background()
	full, err := s.Describe(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	l, err := readLaunch(filepath.Join(s.appsDir(), id))
	if err != nil {
		t.Fatal(err)
	}
	for _, refs := range [][]sched.ReplicaRef{
		{{Role: "a", Replica: 0}}, {{Role: "a", Replica: 1}}, {{Role: "a", Replica: 2}},
		{{Role: "b", Replica: 1}}, {{Role: "b", Replica: 0}, {Role: "a", Replica: 1}},
	} {
		s.logCache = &logCache{} // each case reads the files
		d, err := s.DescribeReplicas(ctx, id, refs)
		if err != nil {
			t.Fatal(err)
		}
		want := full.Status
		want.Roles = nil
		for _, r := range full.Status.Roles {
			rs := spec.RoleStatus{Role: r.Role}
			for _, rep := range r.Replicas {
				if wants(refs, r.Role, rep.ID) {
					rs.Replicas = append(rs.Replicas, rep)
				}
			}
			want.Roles = append(want.Roles, rs)
		}
		if !reflect.DeepEqual(d.Status, want) {
			t.Errorf("%v: status\n%+v\nwant\n%+v", refs, d.Status, want)
		}
		if !reflect.DeepEqual(d.App, full.App) || !reflect.DeepEqual(d.Cfg, full.Cfg) {
			t.Errorf("%v: app %+v cfg %v, want %+v %v", refs, d.App, d.Cfg, full.App, full.Cfg)
		}
		if _, hit := s.logCache.launches[filepath.Join(s.appsDir(), id)]; hit {
			t.Errorf("%v: the launch file was read whole", refs)
		}
		dirs, err := s.logCache.replicaDirs(filepath.Join(s.appsDir(), id), id, refs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range refs {
			if want, _ := replicaDirOf(l, id, r.Role, r.Replica); dirs[i] != want {
				t.Errorf("%v: log directory %s, want %s", r, dirs[i], want)
			}
		}
		if _, hit := s.logCache.launches[filepath.Join(s.appsDir(), id)]; hit {
			t.Errorf("%v: the logs' directories were found by reading the launch file whole", refs)
		}
	}
	// The launch's head alone serves (its rest is not read), and says what the whole
	// file says.
	all := []sched.ReplicaRef{{Role: "a", Replica: 0}, {Role: "a", Replica: 2}, {Role: "b", Replica: 1}}
	st, err := readStateOf(filepath.Join(s.appsDir(), id), all)
	if err != nil {
		t.Fatal(err)
	}
	hl, hdirs, err := readLaunchHead(filepath.Join(s.appsDir(), id), st, all)
	if err != nil {
		t.Fatalf("launch head: %v", err)
	}
	wl, wdirs, err := readLaunchOf(filepath.Join(s.appsDir(), id), all)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hl, wl) || !reflect.DeepEqual(hdirs, wdirs) {
		t.Errorf("launch head %+v %v, whole %+v %v", hl, hdirs, wl, wdirs)
	}
	// A state that names another directory has the launch read whole.
	st.Roles[0].Replicas[0].LogDir += "x"
	if _, _, err := readLaunchHead(filepath.Join(s.appsDir(), id), st, all); err == nil {
		t.Error("the launch's head was taken where the state names another log directory")
	}
	if r1 := replicaOf(t, &full.Status, "a", 1); r1.Restarts != 1 {
		t.Errorf("a/1 restarted %d times, want 1", r1.Restarts)
	}

	// Not there: the whole app, whose roles say how many replicas there are.
	d, err := s.DescribeReplicas(ctx, id, []sched.ReplicaRef{{Role: "a", Replica: 3}})
	if err != nil || !reflect.DeepEqual(d.Status, full.Status) {
		t.Errorf("a/3: %v, status %+v", err, d)
	}
	// Cut short: Describe's error.
	path := filepath.Join(s.appsDir(), id, stateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	_, werr := s.Describe(ctx, id)
	_, err = s.DescribeReplicas(ctx, id, []sched.ReplicaRef{{Role: "a", Replica: 0}})
	if err == nil || werr == nil || err.Error() != werr.Error() {
		t.Errorf("state cut short: %v, want Describe's %v", err, werr)
	}
}

// FuzzSkimValue: skimming any bytes ends without a panic, and a valid JSON value is
// skipped whole, its end found exactly.
func FuzzSkimValue(f *testing.F) {
	for _, seed := range []string{`{"a": [1, "x\"}", {"b": null}], "c": "\\"}`, `"\\\\\""`, `[]`, `{}`, `-1.5e3`, `[{"k":"]"}]`, `{"a":`, `"abc`, `[[[`, `}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &skimmer{b: data}
		v, err := s.value()
		s.ws()
		if json.Valid(data) && (err != nil || s.i != len(data) || !json.Valid(v)) {
			t.Errorf("%q: skimmed %q to %d of %d: %v", data, v, s.i, len(data), err)
		}
		// The walkers too, over whatever is there.
		s = &skimmer{b: data}
		_ = s.object(func(string) error { return s.array(func(int) error { return s.skip() }) })
	})
}
