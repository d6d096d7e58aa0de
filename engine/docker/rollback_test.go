package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// leftBehind lists every container labelled with appID, wick's full label set or
// not: what a user would find with `docker ps -a --filter label=dev.wick.app-id=...`.
func leftBehind(t *testing.T, appID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	res, err := env.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", LabelAppID+"="+appID)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range res.Items {
		names = append(names, strings.Join(c.Names, ",")+" ("+string(c.State)+")")
	}
	return names
}

// TestCancelledLaunchesLeaveNothing: launches of 4 containers cancelled at moments
// spread over a whole launch (before the first create, between creates and starts,
// after some started, as the last starts) leave no container behind, each checked
// the moment Schedule returns: the rollback is part of the launch. TestFaults'
// cancelled_during_launch once left one under load.
func TestCancelledLaunchesLeaveNothing(t *testing.T) {
	needEngine(t)
	s := newScheduler(t)
	app := &spec.AppDef{Name: "cancelloop", Roles: []spec.Role{role("main", 4, "loop")}}
	// How long a whole launch takes now, to spread the cancels over (the first
	// launch connects and may create the network: the second is timed).
	launch(t, s, app, nil)
	info := plan(t, s, app, nil, "")
	t0 := time.Now()
	if err := s.Schedule(context.Background(), info, nil); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(t0)
	deleteAtEnd(t, s, info.AppID)
	const runs = 12
	cancelled, launched := 0, 0
	var startedAt []int // how many containers had started when each cancel came
	for i := range runs {
		info := plan(t, s, app, nil, "")
		ctx, cancel := context.WithCancel(context.Background())
		after := whole * time.Duration(i) / (runs - 2) // the last two after a whole launch
		var mu sync.Mutex
		started, atCancel := 0, -1
		timer := time.AfterFunc(after, func() {
			mu.Lock()
			atCancel = started
			mu.Unlock()
			cancel()
		})
		err := s.Schedule(ctx, info, func(step string) {
			if strings.HasPrefix(step, "started") {
				mu.Lock()
				started++
				mu.Unlock()
			}
		})
		timer.Stop()
		cancel()
		switch {
		case err == nil:
			launched++
			deleteAtEnd(t, s, info.AppID)
			continue
		case !errors.Is(err, context.Canceled):
			t.Errorf("run %d: Schedule: %v, want context.Canceled", i, err)
		default:
			cancelled++
			mu.Lock()
			startedAt = append(startedAt, atCancel)
			mu.Unlock()
		}
		if left := leftBehind(t, info.AppID); len(left) > 0 {
			t.Errorf("run %d (cancelled after %s): left behind %v", i, after, left)
			deleteAtEnd(t, s, info.AppID)
		}
	}
	t.Logf("a launch took %s; %d launches cancelled (containers started when the cancel came: %v), %d done before the cancel (load factor %.1f)",
		whole, cancelled, startedAt, launched, testkit.Factor())
}

// faultyEngine stands between wick and the real Engine, on a socket of its own, to
// cause two faults a loaded Engine causes (seen at load 40) but a test cannot
// summon on demand: a create whose answer never reaches wick, the Engine making the
// container all the same, late; and a remove that fails ("did not receive an exit
// event"). Every other call goes to the Engine as it came.
type faultyEngine struct {
	t    *testing.T
	sock string
	// dropCreate is the name of the container whose create loses its answer: the
	// connection is closed at once, and the create goes to the Engine only once a
	// rollback has listed the app's containers (after wick gave up on it).
	dropCreate string
	// failRemoves is how many removes of each container fail before one passes;
	// alwaysFail names one whose removes all fail.
	failRemoves int
	alwaysFail  string
	// hang, "remove" or "list", holds every remove of alwaysFail after its first
	// failed one, or every listing of an app's containers after that, until wick gives
	// up on it: the rollback's deadline then comes mid-call, as it does when a loaded
	// Engine answers in seconds.
	hang string
	// holdExec holds each exec's create this long before it goes to the Engine: a
	// container's sampler then starts late, as on a loaded machine.
	holdExec time.Duration

	mu      sync.Mutex
	removes map[string]int // failed removes, by path
	late    chan struct{}  // closed when the dropped create may go on
	lateOK  chan error     // the dropped create's outcome at the Engine
	names   map[string]string
	listed  bool
}

// newFaultyEngine starts the proxy; it stops with the test.
func newFaultyEngine(t *testing.T) *faultyEngine {
	t.Helper()
	ep, err := resolveEndpoint(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := strings.CutPrefix(ep.Host, "unix://")
	if !ok {
		t.Skipf("the fault proxy speaks to an Engine on a Unix socket, not %s", ep.Host)
	}
	dir, err := os.MkdirTemp("", "wick-faulty-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &faultyEngine{t: t, sock: filepath.Join(dir, "docker.sock"), removes: map[string]int{},
		late: make(chan struct{}), lateOK: make(chan error, 1), names: map[string]string{}}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", addr)
	}}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker"
	}, Transport: tr}
	l, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.fault(w, r, tr) {
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); tr.CloseIdleConnections() })
	return f
}

// scheduler is a Scheduler that reaches the Engine through the proxy.
func (f *faultyEngine) scheduler(t *testing.T) *Scheduler {
	s := newScheduler(t)
	ep := endpoint{Host: "unix://" + f.sock, From: "the test's proxy"}
	cli, tr, err := newClient(ep)
	if err != nil {
		t.Fatal(err)
	}
	s.cli, s.tr, s.ep = cli, tr, ep
	return s
}

// fault causes the fault r calls for, if any, and reports whether it answered.
func (f *faultyEngine) fault(w http.ResponseWriter, r *http.Request, tr *http.Transport) bool {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/exec") && f.holdExec > 0:
		time.Sleep(f.holdExec)
		return false
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create") && r.URL.Query().Get("name") == f.dropCreate && f.dropCreate != "":
		body, _ := io.ReadAll(r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			f.t.Errorf("hijack: %v", err)
			return false
		}
		conn.Close() // wick hears nothing of its create
		go func() {
			<-f.late
			out, _ := http.NewRequest(r.Method, "http://docker"+r.URL.RequestURI(), bytes.NewReader(body))
			out.Header = r.Header.Clone()
			resp, err := tr.RoundTrip(out)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					err = errors.New(resp.Status)
				}
			}
			f.lateOK <- err
		}()
		return true
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/containers/json") && strings.Contains(r.URL.Query().Get("filters"), LabelAppID):
		f.mu.Lock()
		if f.hang == "list" && len(f.removes) > 0 {
			f.mu.Unlock()
			<-r.Context().Done()
			return true
		}
		if !f.listed && f.dropCreate != "" {
			f.listed = true
			defer close(f.late) // after this listing's answer: the create lands late
		}
		f.mu.Unlock()
		return false
	case r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/containers/"):
		f.mu.Lock()
		n := f.removes[r.URL.Path]
		always := f.alwaysFail != "" && f.nameOf(r.URL.Path) == f.alwaysFail
		fail := always || n < f.failRemoves
		if fail {
			f.removes[r.URL.Path]++
		}
		f.mu.Unlock()
		if always && n > 0 && f.hang == "remove" {
			<-r.Context().Done()
			return true
		}
		if fail {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"message":"Could not kill running container, cannot remove - tried to kill container, but did not receive an exit event"}`)
			return true
		}
	}
	return false
}

// nameOf is the name of the container a /containers/ID path names.
func (f *faultyEngine) nameOf(path string) string {
	id := path[strings.LastIndex(path, "/")+1:]
	if name, ok := f.names[id]; ok {
		return name
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(10*time.Second))
	defer cancel()
	res, err := env.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return ""
	}
	name := strings.TrimPrefix(res.Container.Name, "/")
	f.names[id] = name
	return name
}

// TestRollbackFindsWhatTheEngineMadeLate: a launch whose create of replica 1 gets no
// answer (the Engine makes the container once the rollback has listed the app's
// containers and found none of it), and whose every remove fails once, leaves no
// container behind: the rollback finds the containers by wick's labels, watches for
// the unanswered create's, and tries each remove again. Before, the late container
// and every container whose remove failed were left, and nothing was said.
func TestRollbackFindsWhatTheEngineMadeLate(t *testing.T) {
	needEngine(t)
	t.Parallel()
	f := newFaultyEngine(t)
	f.failRemoves = 1
	s := f.scheduler(t)
	app := &spec.AppDef{Name: "late", Roles: []spec.Role{role("main", 3, "loop")}}
	info := plan(t, s, app, nil, "")
	t.Cleanup(func() { removeLabelled(t, info.AppID) })
	f.dropCreate = info.Request.(*Request).Containers[1].Name
	err := s.Schedule(context.Background(), info, nil)
	if err == nil || !strings.Contains(err.Error(), "creating container "+f.dropCreate) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Schedule: %v, want one line saying the create of %s failed", err, f.dropCreate)
	}
	if strings.Contains(err.Error(), "could not remove") {
		t.Errorf("Schedule: %v: every remove passes when tried again", err)
	}
	select {
	case lerr := <-f.lateOK:
		if lerr != nil {
			t.Fatalf("the late create: %v", lerr)
		}
	default:
		t.Error("the late create had not landed when Schedule returned: the rollback did not wait for it")
		select {
		case <-f.lateOK:
		case <-time.After(testkit.Scale(30 * time.Second)):
			t.Fatal("the late create never landed")
		}
	}
	if left := leftBehind(t, info.AppID); len(left) > 0 {
		t.Errorf("left behind %v", left)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.removes) == 0 {
		t.Error("no remove failed: the fault was not caused")
	}
}

// TestRollbackSaysWhatItCouldNotRemove: a container whose removes keep failing is
// named in the launch's error, with the command that removes it; the others go.
func TestRollbackSaysWhatItCouldNotRemove(t *testing.T) {
	needEngine(t)
	t.Parallel()
	f := newFaultyEngine(t)
	s := f.scheduler(t)
	s.cleanupTimeout = testkit.Scale(3 * time.Second)
	app := &spec.AppDef{Name: "stuck", Roles: []spec.Role{role("main", 3, "loop")}}
	info := plan(t, s, app, nil, "")
	t.Cleanup(func() { removeLabelled(t, info.AppID) })
	f.alwaysFail = info.Request.(*Request).Containers[2].Name
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := s.Schedule(ctx, info, func(step string) {
		if strings.HasPrefix(step, "started") {
			cancel()
		}
	})
	var lb *sched.LeftBehindError
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "\n") || !errors.As(err, &lb) ||
		!strings.Contains(lb.Left.Error(), "could not remove container "+f.alwaysFail+" (docker rm -f "+f.alwaysFail+"): Could not kill") {
		t.Fatalf("Schedule: %v; want context.Canceled and, as a LeftBehindError, the container it could not remove, in one line", err)
	}
	left := leftBehind(t, info.AppID)
	if len(left) != 1 || !strings.Contains(left[0], f.alwaysFail) {
		t.Errorf("left behind %v, want only %s", left, f.alwaysFail)
	}
}

// TestRollbackKeepsTheReasonPastItsDeadline: a rollback whose deadline comes in the
// middle of a call (a remove, a listing: on a loaded Engine a call takes seconds, and
// the deadline is more likely to come in one than between two) still names the
// container it could not remove with the reason the Engine gave before. Was "could
// not remove container X in time", or "listing the containers ...: context deadline
// exceeded", and no reason: TestRollbackSaysWhatItCouldNotRemove failed so at load 46.
func TestRollbackKeepsTheReasonPastItsDeadline(t *testing.T) {
	needEngine(t)
	for _, hang := range []string{"remove", "list"} {
		t.Run(hang, func(t *testing.T) {
			f := newFaultyEngine(t)
			s := f.scheduler(t)
			s.cleanupTimeout = testkit.Scale(2 * time.Second)
			app := &spec.AppDef{Name: "stuck", Roles: []spec.Role{role("main", 2, "loop")}}
			info := plan(t, s, app, nil, "")
			t.Cleanup(func() { removeLabelled(t, info.AppID) })
			f.alwaysFail, f.hang = info.Request.(*Request).Containers[1].Name, hang
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := s.Schedule(ctx, info, func(step string) {
				if strings.HasPrefix(step, "started") {
					cancel()
				}
			})
			var lb *sched.LeftBehindError
			if !errors.As(err, &lb) || lb.Left.Error() != "could not remove container "+f.alwaysFail+" (docker rm -f "+f.alwaysFail+
				"): Could not kill running container, cannot remove - tried to kill container, but did not receive an exit event" {
				t.Fatalf("Schedule: %v; want, as a LeftBehindError, the container it could not remove and the Engine's reason", err)
			}
		})
	}
}

// removeLabelled removes every container labelled with appID, past any proxy.
func removeLabelled(t *testing.T, appID string) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	res, err := env.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", LabelAppID+"="+appID)})
	if err != nil {
		t.Errorf("listing %s: %v", appID, err)
		return
	}
	for _, c := range res.Items {
		if _, err := env.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Errorf("removing %s: %v", c.ID, err)
		}
	}
}

// TestDeleteTriesARemoveAgain: a remove the Engine fails on its side (a 500, as its
// storage driver does now and then under load: "failed to remove root filesystem")
// is asked again; Delete answers nil and nothing is left. Before, the first failure
// was Delete's error.
func TestDeleteTriesARemoveAgain(t *testing.T) {
	needEngine(t)
	t.Parallel()
	f := newFaultyEngine(t)
	s := f.scheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "delagain", Roles: []spec.Role{role("main", 2, "true")}}, nil)
	wait(t, s, id, 30*time.Second, func(st *spec.AppStatus) bool { return st.State.Terminal() })
	f.mu.Lock()
	f.failRemoves = 2
	f.mu.Unlock()
	if err := s.Delete(context.Background(), id, true); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if left := leftBehind(t, id); len(left) > 0 {
		t.Errorf("left behind %v", left)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.removes) == 0 {
		t.Error("no remove failed: the fault was not caused")
	}
}
