package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// Two roles: a server (rank 0) that answers three connections with its hostname, and
// three workers that find it through TORCHX_RANK0_HOST on the app's network.
func TestTwoRolesTalkByHostname(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	app := &spec.AppDef{Name: "talk", Roles: []spec.Role{
		role("server", 1, "serve", "29500", "3"),
		// TorchX's idiom: the macro names the variable, and "$$" leaves "${NAME}" for
		// the program (here the helper, in TorchX a shell) to expand.
		role("worker", 3, "dial", "$${${rank0_env}}:29500"),
	}}
	id := launch(t, s, app, nil)

	d := waitTerminal(t, s, id)
	st := d.Status
	if st.State != spec.Succeeded {
		t.Fatalf("state %s, want SUCCEEDED: %+v", st.State, st)
	}
	if st.AppID != id || st.Handle != "local_docker://"+env.session+"/"+id || st.Name != "talk" || st.Scheduler != Name {
		t.Errorf("status identity: %+v", st)
	}
	if running, total := st.Replicas(); running != 0 || total != 4 {
		t.Errorf("replicas %d/%d, want 0/4", running, total)
	}
	server := containerName(id, "server", 0)
	for _, rs := range st.Roles {
		for _, r := range rs.Replicas {
			if r.ExitCode == nil || *r.ExitCode != 0 || r.State != spec.Succeeded {
				t.Errorf("%s/%d: %s exit %v", r.Role, r.ID, r.State, r.ExitCode)
			}
			if r.Hostname != containerName(id, r.Role, r.ID) || r.ContainerID == "" || r.Started.IsZero() || r.Ended.Before(r.Started) {
				t.Errorf("%s/%d: %+v", r.Role, r.ID, r)
			}
		}
	}
	if st.Created.IsZero() || st.Ended.IsZero() {
		t.Errorf("created %v ended %v", st.Created, st.Ended)
	}
	for k := range 3 {
		lines := readLogs(t, s, id, "worker", k, sched.LogOptions{})
		want := fmt.Sprintf("role=worker replica=%d rank0=%s got=hello from %s", k, server, server)
		if len(lines) != 1 || lines[0].Text != want || lines[0].Stream != sched.Stdout {
			t.Errorf("worker %d said %q, want %q", k, texts(lines), want)
		}
	}
	// Describe rebuilds the AppDef as submitted, and the run options.
	if d.App == nil || d.App.Name != "talk" || len(d.App.Roles) != 2 || d.App.Roles[1].NumReplicas != 3 ||
		!slices.Equal(d.App.Roles[1].Args, app.Roles[1].Args) {
		t.Errorf("described app %+v", d.App)
	}
	if d.Cfg.String(OptNetwork) != env.network || d.Cfg.Int(OptStopTimeout) != DefaultStopTimeout {
		t.Errorf("described cfg %v", d.Cfg)
	}
	// List: one row for the app, not one per container.
	list, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range list {
		if a.AppID == id {
			n++
			if a.State != spec.Succeeded || len(a.Roles) != 2 || a.Created.IsZero() || a.Name != "talk" {
				t.Errorf("list row %+v", a)
			}
		}
	}
	if n != 1 {
		t.Errorf("List has %d rows for the app, want 1", n)
	}
}

// What a replica's container is made of: its env, labels, limits and policies.
func TestContainerConfig(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	r := role("env", 2, "env")
	r.Env = map[string]string{"REPLICA": "${replica_id}", "APP": "${app_id}", "OVERRIDE": "role"}
	r.Resource = spec.Resource{CPU: 1, GPU: 0, MemMB: 64}
	r.MaxRetries = 2
	r.RetryPolicy = spec.RetryReplica
	id := launch(t, s, &spec.AppDef{Name: "env", Roles: []spec.Role{r}}, spec.Cfg{
		OptEnv:     map[string]string{"OVERRIDE": "cfg", "FROM_CFG": "yes"},
		OptCopyEnv: []string{"WICK_DOCKER_TEST_C*"},
		OptShmSize: "32m",
	})
	waitTerminal(t, s, id)
	lines := texts(readLogs(t, s, id, "env", 1, sched.LogOptions{}))
	name := containerName(id, "env", 1)
	for _, want := range []string{
		"REPLICA=1", "APP=" + id, "OVERRIDE=role", "FROM_CFG=yes", "WICK_DOCKER_TEST_COPY=copied",
		"TORCHX_RANK0_HOST=" + containerName(id, "env", 0), "TORCHX_IMAGE=" + env.image,
		"WICK_APP_ID=" + id, "WICK_ROLE=env", "WICK_REPLICA_ID=1", "HOSTNAME=" + name,
		"PYTHONUNBUFFERED=1", "TORCHELASTIC_ERROR_FILE=/run/wick/error.json",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("env lacks %s: %q", want, lines)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "WICK_DOCKER_TEST_OTHER") {
			t.Errorf("copy_env copied %s", l)
		}
	}
	res, err := env.cli.ContainerInspect(context.Background(), name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Container
	h := c.HostConfig
	if h.NanoCPUs != 1e9 || h.Memory != 64<<20 || h.ShmSize != 32<<20 || h.Init == nil || !*h.Init ||
		h.RestartPolicy.Name != "on-failure" || h.RestartPolicy.MaximumRetryCount != 2 || string(h.NetworkMode) != env.network {
		t.Errorf("host config: cpus %d mem %d shm %d init %v restart %+v network %s", h.NanoCPUs, h.Memory, h.ShmSize, h.Init, h.RestartPolicy, h.NetworkMode)
	}
	if h.LogConfig.Type != "json-file" || h.LogConfig.Config["max-size"] != unrotated {
		t.Errorf("log config %+v: want json-file, never rotated", h.LogConfig)
	}
	if c.Config.Hostname != name || c.Config.StopTimeout == nil || *c.Config.StopTimeout != DefaultStopTimeout {
		t.Errorf("config: hostname %s stop timeout %v", c.Config.Hostname, c.Config.StopTimeout)
	}
	for k, v := range map[string]string{
		LabelAppID: id, LabelRole: "env", LabelReplicaID: "1", LabelSession: env.session,
		LabelTorchXAppID: id, LabelTorchXRoleName: "env", LabelTorchXReplicaID: "1",
	} {
		if c.Config.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, c.Config.Labels[k], v)
		}
	}
	if c.Config.Labels[LabelVersion] == "" || c.Config.Labels[LabelApp] == "" {
		t.Errorf("labels %v", c.Config.Labels)
	}
}

// Exit codes, FAILED, and Docker's on-failure restarts as max_retries.
func TestExitCodesAndRetries(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	flaky := role("flaky", 1, "failtimes", "2", "/tmp/count")
	flaky.MaxRetries = 3
	flaky.RetryPolicy = spec.RetryReplica
	id := launch(t, s, &spec.AppDef{Name: "exits", Roles: []spec.Role{
		role("ok", 1, "true"),
		role("bad", 2, "exit", "3"),
		flaky,
	}}, nil)
	d := waitTerminal(t, s, id)
	st := d.Status
	if st.State != spec.Failed {
		t.Fatalf("state %s, want FAILED", st.State)
	}
	want := map[string]struct {
		state    spec.AppState
		code     int
		restarts int
	}{"ok": {spec.Succeeded, 0, 0}, "bad": {spec.Failed, 3, 0}, "flaky": {spec.Succeeded, 0, 2}}
	for _, rs := range st.Roles {
		for _, r := range rs.Replicas {
			w := want[r.Role]
			if r.State != w.state || r.ExitCode == nil || *r.ExitCode != w.code || r.Restarts != w.restarts {
				t.Errorf("%s/%d: %s exit %v restarts %d, want %s exit %d restarts %d", r.Role, r.ID, r.State, r.ExitCode, r.Restarts, w.state, w.code, w.restarts)
			}
		}
	}
	if !strings.Contains(st.Msg, ": exit code 3") || st.NumRestarts != 2 {
		t.Errorf("msg %q restarts %d", st.Msg, st.NumRestarts)
	}
	if code, ok := st.ExitCode(); !ok || code != 3 {
		t.Errorf("exit code %d %v", code, ok)
	}
	lines := readLogs(t, s, id, "flaky", 0, sched.LogOptions{})
	got := texts(lines)
	if !slices.Equal(got, []string{"run 1 fails", "run 2 fails", "run 3 succeeds"}) {
		t.Fatalf("flaky logs %q", got)
	}
	if lines[0].Stream != sched.Stderr || lines[2].Stream != sched.Stdout {
		t.Errorf("flaky lines %+v", lines)
	}
}

// cancelGrace is TestCancelAndDelete's stop_timeout, in seconds.
const cancelGrace = 120

// Cancel stops every replica and the app reads CANCELLED; a replica that had ended
// keeps its state; delete refuses a running app, then removes it.
func TestCancelAndDelete(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	ctx := context.Background()
	crash := role("crash", 1, "exit", "1")
	crash.MaxRetries = 100
	crash.RetryPolicy = spec.RetryReplica
	id := launch(t, s, &spec.AppDef{Name: "cancel", Roles: []spec.Role{
		role("loop", 2, "loop"),
		role("quick", 1, "true"),
		crash, // Docker restarts it again and again: it is often "restarting"
	}}, spec.Cfg{OptStopTimeout: cancelGrace})
	wait(t, s, id, 30*time.Second, func(st *spec.AppStatus) bool {
		return st.State == spec.Running && st.Roles[1].Replicas[0].State == spec.Succeeded && st.Roles[0].Replicas[1].State == spec.Running &&
			st.Roles[2].Replicas[0].Restarts >= 2
	})
	if err := s.Delete(ctx, id, false); !errors.Is(err, sched.ErrRunning) {
		t.Fatalf("Delete of a running app: %v, want ErrRunning", err)
	}
	start := time.Now()
	if err := s.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	// SIGTERM ends every replica (the Engine's init forwards it): Cancel returns long
	// before the grace period, however loaded the machine. A Cancel that waited it
	// out would take cancelGrace; a bound of seconds would time the Engine instead.
	if took := time.Since(start); took >= cancelGrace*time.Second {
		t.Errorf("cancel took %v: the grace period (%d s) was waited out", took, cancelGrace)
	}
	d, err := s.Describe(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st := d.Status
	if st.State != spec.Cancelled {
		t.Fatalf("state %s, want CANCELLED: %+v", st.State, st)
	}
	for _, r := range st.Roles[0].Replicas {
		if r.State != spec.Cancelled || r.Ended.IsZero() {
			t.Errorf("loop/%d: %+v", r.ID, r)
		}
	}
	if r := st.Roles[1].Replicas[0]; r.State != spec.Succeeded {
		t.Errorf("quick/0 was done before the cancel: %s", r.State)
	}
	if r := st.Roles[2].Replicas[0]; r.State != spec.Cancelled {
		t.Errorf("crash/0 in its restart loop: %+v", r)
	}
	if err := s.Cancel(ctx, id); err != nil {
		t.Errorf("cancelling a cancelled app: %v", err)
	}
	if err := s.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Describe(ctx, id); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("Describe after delete: %v", err)
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.AppID == id {
			t.Errorf("List still has %s", id)
		}
	}
}

// Delete with force cancels, then removes.
func TestDeleteForce(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "force", Roles: []spec.Role{role("loop", 1, "loop")}}, nil)
	wait(t, s, id, 30*time.Second, func(st *spec.AppStatus) bool { return st.State == spec.Running })
	if err := s.Delete(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}
	sums, _, err := s.containers(context.Background(), engineOf(t, s), id)
	if err != nil || len(sums) != 0 {
		t.Errorf("after delete: %d containers, %v", len(sums), err)
	}
}

func TestLogs(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "logs", Roles: []spec.Role{
		role("lines", 1, "lines", "6", "20ms"),
		role("long", 1, "long", "40000"),
		role("nonl", 1, "nonl", "no newline at the end"),
	}}, nil)
	waitTerminal(t, s, id)

	all := readLogs(t, s, id, "lines", 0, sched.LogOptions{})
	if len(all) != 12 {
		t.Fatalf("got %d lines: %q", len(all), texts(all))
	}
	var outs, errs []string
	for i, l := range all {
		if l.Role != "lines" || l.Replica != 0 || l.Time.IsZero() || l.Partial {
			t.Errorf("line %+v", l)
		}
		if i > 0 && l.Time.Before(all[i-1].Time.Add(-time.Second)) {
			t.Errorf("line %d goes back in time: %v after %v", i, l.Time, all[i-1].Time)
		}
		switch {
		case l.Stream == sched.Stdout && strings.HasPrefix(l.Text, "out "):
			outs = append(outs, l.Text)
		case l.Stream == sched.Stderr && strings.HasPrefix(l.Text, "err "):
			errs = append(errs, l.Text)
		default:
			t.Errorf("line %q on %s", l.Text, l.Stream)
		}
	}
	if want := []string{"out 0", "out 1", "out 2", "out 3", "out 4", "out 5"}; !slices.Equal(outs, want) {
		t.Errorf("stdout lines %q", outs)
	}
	if len(errs) != 6 {
		t.Errorf("stderr lines %q", errs)
	}

	check := func(name string, opts sched.LogOptions, want []string) {
		t.Helper()
		if got := texts(readLogs(t, s, id, "lines", 0, opts)); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
	check("stdout", sched.LogOptions{Streams: sched.Stdout}, outs)
	check("stderr", sched.LogOptions{Streams: sched.Stderr}, errs)
	check("regex", sched.LogOptions{Regex: mustRegexp(t, `^err [34]$`)}, []string{"err 3", "err 4"})
	check("tail", sched.LogOptions{Tail: 3}, texts(all[9:]))
	check("tail of stdout", sched.LogOptions{Tail: 2, Streams: sched.Stdout}, []string{"out 4", "out 5"})

	// since and until: the Engine's timestamps, since inclusive, until exclusive.
	since, until := timeOf(t, all, "out 1"), timeOf(t, all, "out 4")
	var want []string
	for _, l := range all {
		if !l.Time.Before(since) && l.Time.Before(until) {
			want = append(want, l.Text)
		}
	}
	if len(want) < 3 {
		// The Engine stamps each stream as it reads it: on a loaded machine stderr's
		// lines may all be stamped after stdout's.
		t.Fatalf("the window holds %q", want)
	}
	check("since/until", sched.LogOptions{Since: since, Until: until}, want)
	check("since/until stderr", sched.LogOptions{Since: since, Until: until, Streams: sched.Stderr}, filterPrefix(want, "err"))

	long := readLogs(t, s, id, "long", 0, sched.LogOptions{})
	if len(long) != 2 || len(long[0].Text) != 40000 || strings.Trim(long[0].Text, "x") != "" || long[1].Text != "end" {
		t.Errorf("long line split or merged: %d lines of lengths %v", len(long), lengths(long))
	}
	nonl := readLogs(t, s, id, "nonl", 0, sched.LogOptions{})
	if len(nonl) != 2 || nonl[1].Text != "no newline at the end" {
		t.Errorf("nonl lines %+v", nonl)
	}
}

func TestLogsFollow(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	flaky := role("flaky", 1, "failtimes", "2", "/tmp/count")
	flaky.MaxRetries = 2
	flaky.RetryPolicy = spec.RetryReplica
	id := launch(t, s, &spec.AppDef{Name: "follow", Roles: []spec.Role{
		role("slow", 1, "lines", "4", "500ms"),
		flaky,
		role("ticker", 1, "lines", "1000", "100ms"),
	}}, nil)
	lines := readLogs(t, s, id, "slow", 0, sched.LogOptions{Follow: true})
	if len(lines) != 8 || lines[7].Text != "err 3" && lines[7].Text != "out 3" {
		t.Errorf("followed %q", texts(lines))
	}
	// (A follower that did not wait would have fewer lines: the replica prints for
	// 2 s after it starts. A timed check fails on a loaded machine, where the launch
	// itself may take that long.)
	if st := wait(t, s, id, 10*time.Second, func(st *spec.AppStatus) bool { return st.Roles[0].Replicas[0].State.Terminal() }); st == nil {
		t.Fatal("no status")
	}
	// A follower reads every run of a replica Docker restarts, and ends after the last.
	got := texts(readLogs(t, s, id, "flaky", 0, sched.LogOptions{Follow: true}))
	if !slices.Equal(got, []string{"run 1 fails", "run 2 fails", "run 3 succeeds"}) {
		t.Errorf("followed flaky %q", got)
	}
	// A follower of a replica that runs on stops at Until; Until in the past reads
	// what is there.
	until := time.Now().Add(time.Second)
	lines = readLogs(t, s, id, "ticker", 0, sched.LogOptions{Follow: true, Until: until})
	if len(lines) < 5 || time.Now().After(until.Add(testkit.Scale(5*time.Second))) || !lines[len(lines)-1].Time.Before(until) {
		t.Fatalf("follow until %v: returned at %v with %q", until, time.Now(), texts(lines))
	}
	past := readLogs(t, s, id, "ticker", 0, sched.LogOptions{Follow: true, Until: lines[4].Time})
	if !slices.Equal(texts(past), texts(lines[:4])) {
		t.Errorf("follow until a past time: %q, want %q", texts(past), texts(lines[:4]))
	}
	// Follow with a tail and a filter on a finished replica: the last matching lines.
	got = texts(readLogs(t, s, id, "slow", 0, sched.LogOptions{Follow: true, Tail: 2, Streams: sched.Stdout}))
	if !slices.Equal(got, []string{"out 2", "out 3"}) {
		t.Errorf("tail 2 of stdout %q", got)
	}
}

func TestWorkspace(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hello.txt", "hello from the workspace\n")
	write("secret.txt", "do not ship")
	write("sub/inner.txt", "ignored")
	write("sub/keep.txt", "kept")
	write(".dockerignore", "# comment\nsecret.txt\nsub\n!sub/keep.txt\n")

	run := func(args ...string) (*spec.AppStatus, []string, string) {
		t.Helper()
		app := &spec.AppDef{Name: "ws", Roles: []spec.Role{role("main", 1, args...), role("plain", 1, "exists", "/app/hello.txt")}}
		info := plan(t, s, app, nil, dir)
		req := info.Request.(*Request)
		if req.Build == nil || !strings.HasPrefix(req.Build.Tag, env.repo+":") || req.Containers[0].Image != req.Build.Tag || req.Containers[1].Image != env.image {
			t.Fatalf("planned build %+v, images %s %s", req.Build, req.Containers[0].Image, req.Containers[1].Image)
		}
		var mu sync.Mutex
		var steps []string
		err := s.Schedule(context.Background(), info, func(step string) { mu.Lock(); steps = append(steps, step); mu.Unlock() })
		if err != nil {
			t.Fatalf("Schedule: %v", err)
		}
		deleteAtEnd(t, s, info.AppID)
		d := waitTerminal(t, s, info.AppID)
		return &d.Status, steps, req.Build.Tag
	}
	st, steps, tag := run("cat", "/app/hello.txt")
	if st.Roles[0].Replicas[0].State != spec.Succeeded {
		t.Fatalf("workspace role: %+v", st.Roles[0].Replicas[0])
	}
	if st.Roles[1].Replicas[0].State != spec.Failed {
		t.Errorf("the workspace went into roles[1] too: %+v", st.Roles[1].Replicas[0])
	}
	if !containsPrefix(steps, "building image "+tag) || !containsPrefix(steps, "build: Step") || !containsPrefix(steps, "built image") {
		t.Errorf("build progress %q", steps)
	}
	img, err := env.cli.ImageInspect(context.Background(), tag)
	if err != nil {
		t.Fatal(err)
	}

	// Unchanged workspace: no build, the same image.
	st, steps, tag2 := run("exists", "/app/hello.txt", "/app/sub/keep.txt")
	if tag2 != tag || containsPrefix(steps, "building") || !containsPrefix(steps, "workspace unchanged: reusing image "+tag) {
		t.Errorf("rebuilt an unchanged workspace: %q", steps)
	}
	if img2, err := env.cli.ImageInspect(context.Background(), tag); err != nil || img2.ID != img.ID {
		t.Errorf("image changed: %v", err)
	}
	if st.State == spec.Failed && st.Roles[0].Replicas[0].State != spec.Succeeded {
		t.Errorf("kept files missing: %+v", st.Roles[0].Replicas[0])
	}
	for _, p := range []string{"/app/secret.txt", "/app/sub/inner.txt", "/app/" + genDockerfileName, "/app/.dockerignore"} {
		if st, _, _ := run("exists", p); st.Roles[0].Replicas[0].State != spec.Failed {
			t.Errorf("%s is in the image", p)
		}
	}

	// A change in the workspace makes a new image.
	write("hello.txt", "changed\n")
	if _, steps, tag3 := run("cat", "/app/hello.txt"); tag3 == tag || !containsPrefix(steps, "building image "+tag3) {
		t.Errorf("changed workspace: tag %s (was %s), steps %q", tag3, tag, steps)
	}
}

// port_map is not published by default (replicas reach each other by name, and a
// second app must not clash on the host port); publish_ports publishes replica 0's
// port on the host's loopback address.
func TestPortsPublished(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	port := testkit.FreePort(t)
	r := role("web", 1, "serve", strconv.Itoa(port), "1")
	r.PortMap = map[string]int{"http": port}
	hidden := spec.NewRole("web", env.image, "/bin/helper", "sleep", "1ms")
	hidden.PortMap = map[string]int{"http": port}
	off := launch(t, s, &spec.AppDef{Name: "ports-off", Roles: []spec.Role{hidden}}, nil)
	info, err := env.cli.ContainerInspect(context.Background(), containerName(off, "web", 0), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pb := info.Container.HostConfig.PortBindings; len(pb) != 0 {
		t.Errorf("port_map published without publish_ports: %v", pb)
	}

	id := launch(t, s, &spec.AppDef{Name: "ports", Roles: []spec.Role{r}}, spec.Cfg{OptPublishPorts: true})
	deadline := time.Now().Add(testkit.Scale(20 * time.Second))
	var got string
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			buf := make([]byte, 200)
			n, _ := c.Read(buf)
			c.Close()
			if got = strings.TrimSpace(string(buf[:n])); got != "" {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := "hello from " + containerName(id, "web", 0); got != want {
		t.Fatalf("host port %d answered %q, want %q", port, got, want)
	}
	if st := waitTerminal(t, s, id).Status; st.State != spec.Succeeded {
		t.Errorf("state %s", st.State)
	}
	info, err = env.cli.ContainerInspect(context.Background(), containerName(id, "web", 0), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for p, binds := range info.Container.HostConfig.PortBindings {
		for _, b := range binds {
			if b.HostIP.String() != "127.0.0.1" {
				t.Errorf("port %v published on %v, want 127.0.0.1 only", p, b.HostIP)
			}
		}
	}
}

// Bind (read-write and read-only), volume and device mounts.
func TestMounts(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	vol := env.network + "-vol"
	mounts := func(text string) []spec.Mount {
		m, err := spec.ParseMounts(text)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	rw := role("rw", 1, "write", "/data/out.txt", "written in a container")
	rw.Mounts = mounts("type=bind,src=" + dir + ",dst=/data")
	ro := role("ro", 1, "write", "/data/nope.txt", "x")
	ro.Mounts = mounts("type=bind,src=" + dir + ",dst=/data,readonly")
	vw := role("vol", 1, "write", "/vol/x", "x")
	vw.Mounts = mounts("type=volume,src=" + vol + ",dst=/vol")
	dev := role("dev", 1, "exists", "/dev/wicknull")
	dev.Mounts = mounts("type=device,src=/dev/null,dst=/dev/wicknull")
	id := launch(t, s, &spec.AppDef{Name: "mounts", Roles: []spec.Role{rw, ro, vw, dev}}, nil)
	st := waitTerminal(t, s, id).Status
	want := map[string]spec.AppState{"rw": spec.Succeeded, "ro": spec.Failed, "vol": spec.Succeeded, "dev": spec.Succeeded}
	for _, rs := range st.Roles {
		if got := rs.Replicas[0].State; got != want[rs.Role] {
			t.Errorf("%s: %s, want %s", rs.Role, got, want[rs.Role])
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "written in a container" {
		t.Errorf("bind mount: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.txt")); err == nil {
		t.Error("wrote through a read-only mount")
	}
}

// A network wick creates is a bridge with wick's label; delete removes it once unused;
// two launches racing for a new network make one.
func TestNetworkLifecycle(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	ctx := context.Background()
	netName := env.network + "-own"
	app := &spec.AppDef{Name: "net", Roles: []spec.Role{role("main", 1, "true")}}
	infos := []*sched.DryRunInfo{plan(t, s, app, spec.Cfg{OptNetwork: netName}, ""), plan(t, s, app, spec.Cfg{OptNetwork: netName}, "")}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, info := range infos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = newScheduler(t).Schedule(ctx, info, nil)
		}()
		deleteAtEnd(t, s, info.AppID)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	nets, err := env.cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("name", netName)})
	if err != nil {
		t.Fatal(err)
	}
	if len(nets.Items) != 1 || nets.Items[0].Driver != "bridge" || nets.Items[0].Labels[LabelManaged] != "true" {
		t.Fatalf("networks named %s: %+v", netName, nets.Items)
	}
	for _, info := range infos {
		waitTerminal(t, s, info.AppID)
	}
	if err := s.Delete(ctx, infos[0].AppID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := env.cli.NetworkInspect(ctx, netName, client.NetworkInspectOptions{}); err != nil {
		t.Errorf("network removed while app %s still uses it: %v", infos[1].AppID, err)
	}
	if err := s.Delete(ctx, infos[1].AppID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := env.cli.NetworkInspect(ctx, netName, client.NetworkInspectOptions{}); err == nil {
		t.Errorf("network %s left after its last app was deleted", netName)
	}
}

// The faults of the issue: each fails with a clear error and leaves nothing behind.
func TestFaults(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	ctx := context.Background()
	nothingLeft := func(t *testing.T, appID string) {
		t.Helper()
		sums, _, err := s.containers(ctx, engineOf(t, s), appID)
		if err != nil || len(sums) != 0 {
			t.Errorf("%d containers left behind (%v)", len(sums), err)
		}
	}
	failing := func(t *testing.T, app *spec.AppDef, cfg spec.Cfg, want string) *sched.DryRunInfo {
		t.Helper()
		info := plan(t, s, app, cfg, "")
		err := s.Schedule(ctx, info, nil)
		if err == nil {
			deleteAtEnd(t, s, info.AppID)
			t.Fatalf("Schedule succeeded, want an error containing %q", want)
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q, want one line containing %q", err, want)
		}
		nothingLeft(t, info.AppID)
		return info
	}
	t.Run("image absent", func(t *testing.T) {
		t.Parallel()
		app := &spec.AppDef{Name: "noimage", Roles: []spec.Role{role("ok", 2, "true"), spec.NewRole("gone", "wick-test-absent:nope", "/bin/true")}}
		failing(t, app, nil, `image "wick-test-absent:nope" is not on the Docker Engine`)
	})
	t.Run("name clash", func(t *testing.T) {
		t.Parallel()
		app := &spec.AppDef{Name: "clash", Roles: []spec.Role{role("main", 3, "true")}}
		info := plan(t, s, app, nil, "")
		taken := info.Request.(*Request).Containers[1].Name
		res, err := env.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: taken, Image: env.image,
			Config: &containerConfig{Labels: map[string]string{"wick-test": env.session}, Cmd: []string{"/bin/true"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer env.cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true})
		err = s.Schedule(ctx, info, nil)
		if err == nil || !strings.Contains(err.Error(), "container name "+taken+" is taken") {
			t.Errorf("error %v", err)
		}
		nothingLeft(t, info.AppID)
	})
	t.Run("network of the wrong driver", func(t *testing.T) {
		t.Parallel()
		app := &spec.AppDef{Name: "wrongnet", Roles: []spec.Role{role("main", 1, "true")}}
		failing(t, app, spec.Cfg{OptNetwork: "none"}, `network none has driver "null"`)
	})
	t.Run("default bridge", func(t *testing.T) {
		t.Parallel()
		app := &spec.AppDef{Name: "bridge", Roles: []spec.Role{role("main", 1, "true")}}
		failing(t, app, spec.Cfg{OptNetwork: "bridge"}, "cannot reach each other by name")
	})
	t.Run("invalid mount source", func(t *testing.T) {
		t.Parallel()
		r := role("main", 1, "true")
		r.Mounts = []spec.Mount{{Type: spec.MountBind, Src: "/nonexistent/wick-src", Dst: "/data"}}
		failing(t, &spec.AppDef{Name: "badmount", Roles: []spec.Role{role("ok", 1, "true"), r}}, nil, "bind mount source /nonexistent/wick-src")
	})
	t.Run("start fails halfway", func(t *testing.T) {
		t.Parallel()
		// Two roles publish the same host port: one start fails after every container
		// was made, and all of them go.
		port := testkit.FreePort(t)
		a, b := role("a", 1, "loop"), role("b", 1, "loop")
		a.PortMap = map[string]int{"p": port}
		b.PortMap = map[string]int{"p": port}
		failing(t, &spec.AppDef{Name: "halfway", Roles: []spec.Role{a, b, role("c", 2, "loop")}}, spec.Cfg{OptPublishPorts: true}, "starting container")
	})
	t.Run("cancelled during launch", func(t *testing.T) {
		t.Parallel()
		app := &spec.AppDef{Name: "ctrlc", Roles: []spec.Role{role("main", 4, "loop")}}
		info := plan(t, s, app, nil, "")
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := s.Schedule(lctx, info, func(step string) {
			if strings.HasPrefix(step, "started") {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			deleteAtEnd(t, s, info.AppID)
			t.Errorf("Schedule: %v, want context.Canceled", err)
		}
		nothingLeft(t, info.AppID)
	})
	t.Run("container removed behind our back", func(t *testing.T) {
		t.Parallel()
		id := launch(t, s, &spec.AppDef{Name: "removed", Roles: []spec.Role{role("main", 2, "loop")}}, nil)
		wait(t, s, id, 30*time.Second, func(st *spec.AppStatus) bool { r, n := st.Replicas(); return r == n })
		if _, err := env.cli.ContainerRemove(ctx, containerName(id, "main", 1), client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		d, err := s.Describe(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		r := d.Status.Roles[0].Replicas[1]
		if r.State != spec.Failed || !strings.Contains(r.StructuredError, "removed outside wick") || d.Status.State != spec.Running {
			t.Errorf("app %s, replica %+v", d.Status.State, r)
		}
		if err := s.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if st := waitTerminal(t, s, id).Status; st.State != spec.Cancelled {
			t.Errorf("after cancel: %s", st.State)
		}
		if _, err := s.Logs(ctx, id, "main", 1, sched.LogOptions{}); err == nil || errors.Is(err, sched.ErrNotFound) {
			t.Errorf("logs of the removed replica: %v", err)
		}
	})
	t.Run("unknown app", func(t *testing.T) {
		t.Parallel()
		id := spec.MakeAppID("nosuchapp")
		if _, err := s.Describe(ctx, id); !errors.Is(err, sched.ErrNotFound) {
			t.Errorf("Describe: %v", err)
		}
		if err := s.Cancel(ctx, id); !errors.Is(err, sched.ErrNotFound) {
			t.Errorf("Cancel: %v", err)
		}
		if err := s.Delete(ctx, id, true); !errors.Is(err, sched.ErrNotFound) {
			t.Errorf("Delete: %v", err)
		}
		if _, err := s.Logs(ctx, id, "main", 0, sched.LogOptions{}); !errors.Is(err, sched.ErrNotFound) {
			t.Errorf("Logs: %v", err)
		}
	})
}

func containsPrefix(steps []string, prefix string) bool {
	for _, s := range steps {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func timeOf(t *testing.T, lines []sched.Line, text string) time.Time {
	t.Helper()
	for _, l := range lines {
		if l.Text == text {
			return l.Time
		}
	}
	t.Fatalf("no line %q", text)
	return time.Time{}
}

func filterPrefix(texts []string, prefix string) []string {
	var out []string
	for _, s := range texts {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func lengths(lines []sched.Line) []int {
	out := make([]int, len(lines))
	for i, l := range lines {
		out[i] = len(l.Text)
	}
	return out
}

// Issue 9 §5: a follower gets every line of a replica that prints 200k lines as fast
// as it can, although the Engine's follow stream ends before it has sent them all.
func TestLogsFollowComplete(t *testing.T) {
	needEngine(t)
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "follow-all", Roles: []spec.Role{role("flood", 1, "flood", strconv.Itoa(floodLines))}}, nil)
	lines := readLogs(t, s, id, "flood", 0, sched.LogOptions{Follow: true})
	for i, l := range lines {
		if want := fmt.Sprintf("line %d of the flood, padded to look like a real log line", i); l.Text != want {
			t.Fatalf("line %d of %d is %q, want %q", i, len(lines), l.Text, want)
		}
	}
	if len(lines) != floodLines {
		t.Fatalf("followed %d of %d lines", len(lines), floodLines)
	}
}

// Issue 15 items 2, 3, 4: runs that end without a newline. A follower shows each
// run's last text, as a partial line, and the next run's first line; a plain read
// afterwards shows the same lines, none glued to another.
func TestLogsRunsWithoutNewline(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	r := role("nonl", 1, "nonlfail", "2", "/tmp/count")
	r.MaxRetries = 2
	r.RetryPolicy = spec.RetryReplica
	id := launch(t, s, &spec.AppDef{Name: "nonl-runs", Roles: []spec.Role{r}}, nil)
	want := []string{"run 1", "end 1", "run 2", "end 2", "run 3", "end 3"}
	followed := readLogs(t, s, id, "nonl", 0, sched.LogOptions{Follow: true})
	if got := texts(followed); !slices.Equal(got, want) {
		t.Errorf("followed %q, want %q", got, want)
	}
	for i, l := range followed {
		if l.Partial != strings.HasPrefix(l.Text, "end") {
			t.Errorf("line %d %q: partial %v", i, l.Text, l.Partial)
		}
	}
	if st := waitTerminal(t, s, id).Status; st.State != spec.Succeeded {
		t.Errorf("state %s", st.State)
	}
	if got := texts(readLogs(t, s, id, "nonl", 0, sched.LogOptions{})); !slices.Equal(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
}

// LogOptions.Pending: a bar redrawn with \r shows while it is drawn (as far as the
// Engine stores it: in 16 KiB pieces), then its line is committed.
func TestLogsPending(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "bar", Roles: []spec.Role{role("bar", 1, "bar", "20000", "/tmp/go")}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	it, err := s.Logs(ctx, id, "bar", 0, sched.LogOptions{Follow: true, Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	first, err := it.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The Engine stored the first 16 KiB: the bar as its last redraw there left it.
	var bar strings.Builder
	for i := 0; bar.Len() < fragmentSize; i++ {
		fmt.Fprintf(&bar, "\rstep %06d", i)
	}
	stored := bar.String()[:fragmentSize]
	if want := stored[strings.LastIndexByte(stored, '\r')+1:]; !first.Pending || first.Text != want {
		t.Fatalf("first line %+v, want the pending bar %q", short(first), want)
	}
	// The bar ends once told to: the pending line came while it was drawn.
	if _, err := env.cli.CopyToContainer(ctx, containerName(id, "bar", 0), client.CopyToContainerOptions{DestinationPath: "/tmp", Content: bytes.NewReader(fileTar("go"))}); err != nil {
		t.Fatal(err)
	}
	last, err := it.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last.Pending || !strings.HasSuffix(last.Text, "\rdone") || len(last.Text) != 20000+len("\rdone") || !last.Time.Equal(first.Time) {
		t.Errorf("committed line %+v", short(last))
	}
	if l, err := it.Next(ctx); err != io.EOF {
		t.Errorf("after the bar: %+v %v", l, err)
	}
}

// Issue 9 §3: each container can write its torchelastic error file (also an image
// that runs as another user than root), and the app's error is the oldest error file,
// as TorchX chooses it: the replica that raised first, not the one listed first.
func TestErrorFile(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	nonRoot := userImage(t, "1000:1000")
	victim := role("victim", 1, "raise", "8s", "RuntimeError: gloo connection closed by peer")
	culprit := spec.NewRole("culprit", nonRoot, "/bin/helper", "raise", "0s", "ValueError: bad batch at step 7")
	id := launch(t, s, &spec.AppDef{Name: "raise", Roles: []spec.Role{victim, culprit}}, nil)
	st := waitTerminal(t, s, id).Status
	if st.State != spec.Failed {
		t.Fatalf("state %s", st.State)
	}
	if msg := spec.ErrorMessage(st.StructuredError); msg != "ValueError: bad batch at step 7" {
		t.Errorf("app error %q, want the culprit's", st.StructuredError)
	}
	if !strings.Contains(st.Msg, "culprit/0") || !strings.Contains(st.Msg, "ValueError") {
		t.Errorf("app message %q does not name the culprit's exception", st.Msg)
	}
	for _, rs := range st.Roles {
		r := rs.Replicas[0]
		if r.State != spec.Failed || !strings.Contains(r.StructuredError, map[string]string{"victim": "gloo", "culprit": "ValueError"}[r.Role]) {
			t.Errorf("%s/0: %s %q", r.Role, r.State, r.StructuredError)
		}
	}
}

// userImage makes an image of the helper that runs as user.
func userImage(t *testing.T, user string) string {
	t.Helper()
	ctx := context.Background()
	res, err := env.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &containerConfig{Image: env.image, Entrypoint: []string{"/bin/true"}, Labels: map[string]string{"wick-test": env.session}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer env.cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true})
	ref := env.repo + ":user"
	if _, err := env.cli.ContainerCommit(ctx, res.ID, client.ContainerCommitOptions{Reference: ref, Changes: []string{"USER " + user}}); err != nil {
		t.Fatal(err)
	}
	return ref
}

// Two wick processes that do not share a lock each made the network (Engine 20.10
// allows two networks of one name, then refuses the name as ambiguous): the next
// launch keeps the oldest and runs.
func TestNetworkDuplicate(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	ctx := context.Background()
	name := env.network + "-dup"
	for range 2 {
		if _, err := env.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: map[string]string{LabelManaged: "true"}}); err != nil {
			t.Fatal(err)
		}
	}
	id := launch(t, s, &spec.AppDef{Name: "dupnet", Roles: []spec.Role{role("main", 1, "true")}}, spec.Cfg{OptNetwork: name})
	if st := waitTerminal(t, s, id).Status; st.State != spec.Succeeded {
		t.Errorf("state %s: %s", st.State, st.Msg)
	}
	res, err := env.cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("name", name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 {
		t.Errorf("%d networks named %s, want 1", len(res.Items), name)
	}
}

// Issue 10 items 5 and 6: a container labelled with only dev.wick.app-id, or with the
// full set but a replica id of 200,000,000, is not an app of wick's: list and describe
// skip it (saying so once), and delete --force neither stops nor removes it.
func TestForeignContainers(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	ctx := context.Background()
	// A real app, whose labels a foreign container copies with a huge replica id.
	id := launch(t, s, &spec.AppDef{Name: "mine", Roles: []spec.Role{role("main", 1, "loop")}}, nil)
	wait(t, s, id, 30*time.Second, func(st *spec.AppStatus) bool { return st.State == spec.Running })
	mine, err := env.cli.ContainerInspect(ctx, containerName(id, "main", 0), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	huge := maps.Clone(mine.Container.Config.Labels)
	huge[LabelReplicaID], huge[LabelTorchXReplicaID] = "200000000", "200000000"
	foreignID := "foreign-" + spec.RandomID()[:8]
	start := func(labels map[string]string) string {
		t.Helper()
		labels["wick-test"] = env.session
		res, err := env.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &containerConfig{Image: env.image, Entrypoint: []string{"/bin/helper", "loop"}, Labels: labels},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(env.network)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	onlyID := start(map[string]string{LabelAppID: foreignID})
	hugeID := start(huge)

	start0 := time.Now()
	apps, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if a.AppID == foreignID {
			t.Errorf("a container with only %s is listed as an app: %+v", LabelAppID, a)
		}
		if a.AppID == id {
			if _, total := a.Replicas(); total != 1 || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "200000000") {
				t.Errorf("app %s: %d replicas, warnings %q", id, total, a.Warnings)
			}
		}
	}
	if took := time.Since(start0); took > 20*time.Second {
		t.Errorf("list took %v", took)
	}
	if _, err := s.Describe(ctx, foreignID); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("describe of the foreign app: %v", err)
	}
	if err := s.Delete(ctx, foreignID, true); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("delete --force of the foreign app: %v", err)
	}
	if err := s.Delete(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	for _, cid := range []string{onlyID, hugeID} {
		info, err := env.cli.ContainerInspect(ctx, cid, client.ContainerInspectOptions{})
		if err != nil || !info.Container.State.Running {
			t.Errorf("foreign container %.12s was stopped or removed: %v", cid, err)
		}
	}
}

// fileTar is a tar stream of one empty file.
func fileTar(name string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, ModTime: time.Now()})
	_ = tw.Close()
	return buf.Bytes()
}

// Issue 15: a follower started during the launch, before its container has started,
// waits for it and reads every line, rather than ending at once.
func TestLogsFollowBeforeStart(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	ctx := context.Background()
	info := plan(t, s, &spec.AppDef{Name: "early", Roles: []spec.Role{role("main", 1, "lines", "50", "10ms")}}, nil, "")
	req := info.Request.(*Request)
	opts, err := createOptions(&req.Containers[0], req.record)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := s.engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cli.ContainerCreate(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, s, info.AppID)
	// The follower begins on the created container, then it starts.
	rctx, cancel := context.WithTimeout(ctx, testkit.Scale(90*time.Second))
	defer cancel()
	it, err := s.Logs(rctx, info.AppID, "main", 0, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if _, err := env.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err := it.Next(rctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d lines: %v", n, err)
		}
		n++
	}
	if n != 100 {
		t.Errorf("followed %d lines, want 100", n)
	}
}

// Issue 9 §5: GPU warnings are reported by the real launch, not only by the dry run.
// (Without GPUs and NVIDIA's runtime here, the Engine then refuses to start the
// containers, and the launch is rolled back.)
func TestGPUWarningsInRun(t *testing.T) {
	needEngine(t)
	t.Parallel()
	if gpus.Count(context.Background()) > 0 {
		t.Skip("this machine has GPUs: the warning of missing ones does not apply")
	}
	s := newScheduler(t)
	r := role("gpu", 2, "true")
	r.Resource.GPU = 1
	info := plan(t, s, &spec.AppDef{Name: "gpu", Roles: []spec.Role{r}}, nil, "")
	deleteAtEnd(t, s, info.AppID)
	var steps []string
	err := s.Schedule(context.Background(), info, func(step string) { steps = append(steps, step) })
	all := strings.Join(steps, "\n")
	if !strings.Contains(all, "warning: the app asks for 1 GPUs per container but 0 were found") || !strings.Contains(all, "share them") {
		t.Errorf("launch steps %q (error %v): no GPU warnings", steps, err)
	}
	if err == nil {
		t.Log("the Engine started containers asking for GPUs")
	}
}
