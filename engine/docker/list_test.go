package docker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// proxied is a scheduler of its own WICK_HOME (stateDir) that reaches the Engine
// through p.
func proxied(t *testing.T, p *recordingProxy, stateDir string) *Scheduler {
	t.Helper()
	s0, err := New(sched.Config{Session: env.session, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	s := s0.(*Scheduler)
	t.Cleanup(func() { s.Close() })
	ep := endpoint{Host: "unix://" + p.sock, From: "the test's proxy"}
	cli, tr, err := newClient(ep)
	if err != nil {
		t.Fatal(err)
	}
	s.cli, s.tr, s.ep = cli, tr, ep
	return s
}

// Issue 37: the listing asks the Engine for this home's containers only (a label
// filter on the Engine's side), inspects none of another home's, and reads no
// container's archive (cancel marker, error file) once it has seen it ended: the
// ended cache answers. Other homes' apps are listed by ListAllHomes only.
func TestListThisHomeOnly(t *testing.T) {
	needEngine(t)
	p := newRecordingProxy(t)
	mine := proxied(t, p, t.TempDir())
	theirs := proxied(t, p, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()

	failing := func(name string) *spec.AppDef {
		return &spec.AppDef{Name: name, Roles: []spec.Role{role("main", 1, "false")}}
	}
	var theirIDs []string
	for range 3 {
		theirIDs = append(theirIDs, launch(t, theirs, failing("theirs"), nil))
	}
	myID := launch(t, mine, failing("mine"), nil)
	cancelled := launch(t, mine, &spec.AppDef{Name: "stopped", Roles: []spec.Role{role("main", 1, "loop")}}, nil)
	wait(t, mine, cancelled, 30*time.Second, func(st *spec.AppStatus) bool { return st.State == spec.Running })
	if err := mine.Cancel(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	wait(t, mine, myID, 30*time.Second, func(st *spec.AppStatus) bool { return st.State.Terminal() })
	for _, id := range theirIDs {
		wait(t, theirs, id, 30*time.Second, func(st *spec.AppStatus) bool { return st.State.Terminal() })
	}

	list := func(all bool) map[string]spec.AppStatus {
		t.Helper()
		p.reset()
		var apps []spec.AppStatus
		var err error
		if all {
			apps, err = mine.ListAllHomes(ctx)
		} else {
			apps, err = mine.List(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]spec.AppStatus{}
		for _, a := range apps {
			out[a.AppID] = a
		}
		return out
	}
	first := list(false)
	for _, id := range theirIDs {
		if _, ok := first[id]; ok {
			t.Errorf("another home's app %s is listed", id)
		}
	}
	if first[myID].State != spec.Failed || first[cancelled].State != spec.Cancelled {
		t.Fatalf("states: %s %v, %s %v", myID, first[myID].State, cancelled, first[cancelled].State)
	}
	// Of the Engine: one list, and inspections of this home's containers only.
	for _, r := range p.recorded() {
		for _, id := range theirIDs {
			if strings.Contains(r, id) {
				t.Errorf("the listing asked about another home's container: %s", r)
			}
		}
	}
	// Again: the ended apps come from the ended cache, the same, with no inspection
	// and no archive read.
	again := list(false)
	calls := p.recorded()
	for _, r := range calls {
		if strings.Contains(r, "/archive") || strings.HasSuffix(r, "/json") && !strings.HasSuffix(r, "/containers/json") {
			t.Errorf("the second listing of ended apps called %s", r)
		}
	}
	if !slices.Contains(calls, "GET /containers/json") {
		t.Errorf("the second listing did not list the containers: %q", calls)
	}
	for _, id := range []string{myID, cancelled} {
		a, b := first[id], again[id]
		if a.State != b.State || a.Msg != b.Msg || a.StructuredError != b.StructuredError || !a.Created.Equal(b.Created) || !a.Ended.Equal(b.Ended) {
			t.Errorf("app %s from the cache: %+v, from the Engine %+v", id, b, a)
		}
	}
	// Every home's, on demand.
	all := list(true)
	for _, id := range theirIDs {
		if a, ok := all[id]; !ok || !a.Foreign {
			t.Errorf("ListAllHomes: their app %s %+v", id, a)
		}
	}
	if a := all[myID]; a.Foreign {
		t.Errorf("this home's app marked foreign")
	}
}

// Issue 36: an Engine that stops answering gives the last rows and one calm line,
// never the client's request ("GET /v1.41/containers/...: context deadline
// exceeded"); without rows known, the line alone.
func TestListEngineSlow(t *testing.T) {
	needEngine(t)
	p := newRecordingProxy(t)
	s := proxied(t, p, t.TempDir())
	s.listTimeout = testkit.Scale(time.Second)
	id := launch(t, s, &spec.AppDef{Name: "slow", Roles: []spec.Role{role("main", 1, "true")}}, nil)
	ctx := context.Background()
	known, err := s.List(ctx)
	if err != nil || len(known) != 1 || known[0].AppID != id {
		t.Fatalf("list: %v, %+v", err, known)
	}
	p.setStall(true)
	defer p.setStall(false)
	rows, err := s.List(ctx)
	if !errors.Is(err, ErrEngineSlow) || !strings.HasPrefix(err.Error(), "the Docker Engine did not answer in ") ||
		!strings.HasSuffix(err.Error(), " s; showing the last known rows") || strings.Contains(err.Error(), "GET") {
		t.Errorf("error %v", err)
	}
	if len(rows) != 1 || rows[0].AppID != id || !rows[0].LastKnown {
		t.Errorf("rows %+v, want the last known", rows)
	}
	fresh := proxied(t, p, t.TempDir())
	fresh.listTimeout = testkit.Scale(time.Second)
	rows, err = fresh.List(ctx)
	if !errors.Is(err, ErrEngineSlow) || strings.Contains(err.Error(), "last known") || strings.Contains(err.Error(), "GET") || len(rows) != 0 {
		t.Errorf("no rows known: %v, %+v", err, rows)
	}
}
