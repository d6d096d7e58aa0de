package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// Each benchmark of wick sits beside a bare one that does the least the Engine needs
// for the same work, through the same Engine in the same run:
//
//	go test -run '^$' -bench . ./engine/docker/

// BenchmarkRun8True launches 8 replicas of `true` and waits until they have all exited.
// Like its bare twins, it waits on the Engine (ContainerWait), so that the difference
// is wick's launch; the app's state is checked untimed.
func BenchmarkRun8True(b *testing.B) {
	needEngine(b)
	s := newScheduler(b)
	ctx := context.Background()
	r := spec.NewRole("true", env.image, "/bin/true")
	r.NumReplicas = 8
	app := &spec.AppDef{Name: "bench-true", Roles: []spec.Role{r}}
	for b.Loop() {
		b.StopTimer()
		info := plan(b, s, app, nil, "")
		b.StartTimer()
		if err := s.Schedule(ctx, info, nil); err != nil {
			b.Fatal(err)
		}
		for k := range r.NumReplicas {
			bareWait(b, containerName(info.AppID, r.Name, k))
		}
		b.StopTimer()
		d, err := s.Describe(ctx, info.AppID)
		if err != nil {
			b.Fatal(err)
		}
		if d.Status.State != spec.Succeeded {
			b.Fatalf("after the wait: %s", d.Status.State)
		}
		if err := s.Delete(ctx, info.AppID, true); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkRun8TrueBesideBare is BenchmarkRun8True and BenchmarkBareRun8TrueConcurrent
// in one loop, alternating which goes first, so that the Engine's and the machine's
// load weigh on both alike: wick/bare is the figure (the bound: at most 1.1).
func BenchmarkRun8TrueBesideBare(b *testing.B) {
	needEngine(b)
	s := newScheduler(b)
	ctx := context.Background()
	r := spec.NewRole("true", env.image, "/bin/true")
	r.NumReplicas = 8
	app := &spec.AppDef{Name: "bench-true", Roles: []spec.Role{r}}
	runWick := func() time.Duration {
		info := plan(b, s, app, nil, "")
		start := time.Now()
		if err := s.Schedule(ctx, info, nil); err != nil {
			b.Fatal(err)
		}
		for k := range r.NumReplicas {
			bareWait(b, containerName(info.AppID, r.Name, k))
		}
		d := time.Since(start)
		if err := s.Delete(ctx, info.AppID, true); err != nil {
			b.Fatal(err)
		}
		return d
	}
	runBare := func() time.Duration {
		start := time.Now()
		ids := make([]string, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() { ids[i], errs[i] = bareStart("/bin/true") })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			bareWait(b, id)
		}
		d := time.Since(start)
		for _, id := range ids {
			bareRemove(b, id)
		}
		return d
	}
	runWick() // the network, the image's layers in the page cache
	runBare()
	var w, bare time.Duration
	n := 0
	b.ResetTimer()
	for b.Loop() {
		if n%2 == 0 {
			w += runWick()
			bare += runBare()
		} else {
			bare += runBare()
			w += runWick()
		}
		n++
	}
	b.ReportMetric(float64(w.Microseconds())/1000/float64(n), "wick-ms/op")
	b.ReportMetric(float64(bare.Microseconds())/1000/float64(n), "bare-ms/op")
	b.ReportMetric(float64(w)/float64(bare), "wick/bare")
	b.ReportMetric(testkit.Load(), "load")
}

// BenchmarkBareRun1True is `docker run` of one `true`: create, start, wait.
func BenchmarkBareRun1True(b *testing.B) {
	needEngine(b)
	for b.Loop() {
		id := bareRun(b, "/bin/true")
		bareWait(b, id)
		b.StopTimer()
		bareRemove(b, id)
		b.StartTimer()
	}
}

// BenchmarkBareRun8TrueSerial is what TorchX does: eight `docker run`s one after
// another, then the wait.
func BenchmarkBareRun8TrueSerial(b *testing.B) {
	needEngine(b)
	for b.Loop() {
		ids := make([]string, 8)
		for i := range ids {
			ids[i] = bareRun(b, "/bin/true")
		}
		for _, id := range ids {
			bareWait(b, id)
		}
		b.StopTimer()
		for _, id := range ids {
			bareRemove(b, id)
		}
		b.StartTimer()
	}
}

// BenchmarkBareRun8TrueConcurrent is the Engine's own limit for BenchmarkRun8True: 8
// bare create+start calls at once on the same user-defined network, then a wait for
// all. b.Fatal is not allowed off the benchmark goroutine, so errors are collected.
func BenchmarkBareRun8TrueConcurrent(b *testing.B) {
	needEngine(b)
	for b.Loop() {
		ids := make([]string, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() { ids[i], errs[i] = bareStart("/bin/true") })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			bareWait(b, id)
		}
		b.StopTimer()
		for _, id := range ids {
			bareRemove(b, id)
		}
		b.StartTimer()
	}
}

// BenchmarkCancel4 cancels an app of 4 running replicas looping on sleep 1, until they
// have all stopped.
func BenchmarkCancel4(b *testing.B) {
	needEngine(b)
	s := newScheduler(b)
	ctx := context.Background()
	r := spec.NewRole("loop", env.image, "/bin/helper", "loop")
	r.NumReplicas = 4
	app := &spec.AppDef{Name: "bench-cancel", Roles: []spec.Role{r}}
	for b.Loop() {
		b.StopTimer()
		info := plan(b, s, app, nil, "")
		if err := s.Schedule(ctx, info, nil); err != nil {
			b.Fatal(err)
		}
		wait(b, s, info.AppID, 30*time.Second, func(st *spec.AppStatus) bool { n, total := st.Replicas(); return n == total })
		b.StartTimer()
		if err := s.Cancel(ctx, info.AppID); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		d, err := s.Describe(ctx, info.AppID)
		if err != nil {
			b.Fatal(err)
		}
		if d.Status.State != spec.Cancelled {
			b.Fatalf("after cancel: %s", d.Status.State)
		}
		if err := s.Delete(ctx, info.AppID, true); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkBareStop1 is `docker stop` of one container of the same loop.
func BenchmarkBareStop1(b *testing.B) {
	needEngine(b)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		id := bareRun(b, "/bin/helper", "loop")
		b.StartTimer()
		if _, err := env.cli.ContainerStop(ctx, id, client.ContainerStopOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bareRemove(b, id)
		b.StartTimer()
	}
}

// BenchmarkBareStop4 is `docker stop` of 4 containers of the same loop, concurrently.
func BenchmarkBareStop4(b *testing.B) {
	needEngine(b)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		ids := make([]string, 4)
		for i := range ids {
			ids[i] = bareRun(b, "/bin/helper", "loop")
		}
		b.StartTimer()
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				if _, err := env.cli.ContainerStop(ctx, id, client.ContainerStopOptions{}); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		for _, id := range ids {
			bareRemove(b, id)
		}
		b.StartTimer()
	}
}

const floodLines = 200_000

// BenchmarkLogs200k reads every line of a replica that printed 200k lines.
func BenchmarkLogs200k(b *testing.B) {
	needEngine(b)
	s := newScheduler(b)
	id := floodApp(b)
	ctx := context.Background()
	for b.Loop() {
		it, err := s.Logs(ctx, id, "flood", 0, sched.LogOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := it.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		it.Close()
		if n != floodLines {
			b.Fatalf("read %d lines", n)
		}
	}
}

// BenchmarkBareLogs200k is `docker logs` of the same container: the Engine's stream,
// demultiplexed, without timestamps or lines.
func BenchmarkBareLogs200k(b *testing.B) {
	needEngine(b)
	floodApp(b)
	ctx := context.Background()
	for b.Loop() {
		body, err := env.cli.ContainerLogs(ctx, flood.container, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := stdcopy.StdCopy(io.Discard, io.Discard, body); err != nil {
			b.Fatal(err)
		}
		body.Close()
	}
}

// flood is the app of the log benchmarks, made once; TestMain's cleanup removes it.
var flood struct {
	once      sync.Once
	app       string
	container string
}

func floodApp(b *testing.B) string {
	flood.once.Do(func() {
		s, err := New(sched.Config{Session: env.session, StateDir: env.stateDir})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		app := &spec.AppDef{Name: "bench-flood", Roles: []spec.Role{role("flood", 1, "flood", "200000")}}
		info := plan(b, s.(*Scheduler), app, nil, "")
		if err := s.Schedule(context.Background(), info, nil); err != nil {
			b.Fatal(err)
		}
		waitTerminal(b, s.(*Scheduler), info.AppID)
		flood.app = info.AppID
		flood.container = containerName(info.AppID, "flood", 0)
	})
	if flood.app == "" {
		b.Fatal("no flood app")
	}
	return flood.app
}

func bareRun(b *testing.B, cmd ...string) string {
	id, err := bareStart(cmd...)
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// bareStart creates and starts one container of the test image, as docker run -d does.
func bareStart(cmd ...string) (string, error) {
	ctx := context.Background()
	initOn := true
	res, err := env.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: env.image, Entrypoint: cmd[:1], Cmd: cmd[1:], Labels: map[string]string{"wick-test": env.session}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(env.network), Init: &initOn},
	})
	if err != nil {
		return "", err
	}
	if _, err := env.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return res.ID, err
	}
	return res.ID, nil
}

func bareWait(b *testing.B, id string) {
	w := env.cli.ContainerWait(context.Background(), id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case err := <-w.Error:
		b.Fatal(err)
	}
}

func bareRemove(b *testing.B, id string) {
	if _, err := env.cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true}); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkBareLogs200kTimestamps(b *testing.B) {
	needEngine(b)
	floodApp(b)
	ctx := context.Background()
	for b.Loop() {
		body, err := env.cli.ContainerLogs(ctx, flood.container, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := stdcopy.StdCopy(io.Discard, io.Discard, body); err != nil {
			b.Fatal(err)
		}
		body.Close()
	}
}

// BenchmarkFollow200k launches a replica that prints 200k lines as fast as it can and
// follows its log until the replica has ended and every line is read: what attached
// `wick run` does. lines/op is how many lines were delivered.
func BenchmarkFollow200k(b *testing.B) {
	needEngine(b)
	s := newScheduler(b)
	ctx := context.Background()
	app := &spec.AppDef{Name: "bench-follow", Roles: []spec.Role{role("flood", 1, "flood", "200000")}}
	n := 0
	for b.Loop() {
		b.StopTimer()
		info := plan(b, s, app, nil, "")
		b.StartTimer()
		if err := s.Schedule(ctx, info, nil); err != nil {
			b.Fatal(err)
		}
		it, err := s.Logs(ctx, info.AppID, "flood", 0, sched.LogOptions{Follow: true})
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		for {
			if _, err := it.Next(ctx); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			n++
		}
		it.Close()
		b.StopTimer()
		if err := s.Delete(ctx, info.AppID, true); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n), "lines/op")
}

// BenchmarkBareFollow200k is `docker run -d` of the same replica, with the same log
// configuration as wick's containers, then `docker logs -f` until the Engine ends the
// stream: lines/op shows how many lines the Engine's follow stream delivers by itself.
func BenchmarkBareFollow200k(b *testing.B) {
	needEngine(b)
	ctx := context.Background()
	n := 0
	for b.Loop() {
		res, err := env.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: env.image, Entrypoint: []string{"/bin/helper"}, Cmd: []string{"flood", "200000"}, Labels: map[string]string{"wick-test": env.session}},
			HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(env.network),
				LogConfig: container.LogConfig{Type: logDriver, Config: logSpec(nil).Options}},
		})
		if err != nil {
			b.Fatal(err)
		}
		id := res.ID
		if _, err := env.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			b.Fatal(err)
		}
		body, err := env.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
		if err != nil {
			b.Fatal(err)
		}
		lc := &lineCounter{}
		if _, err := stdcopy.StdCopy(lc, io.Discard, body); err != nil {
			b.Fatal(err)
		}
		body.Close()
		n = lc.n
		b.StopTimer()
		bareWait(b, id)
		bareRemove(b, id)
		b.StartTimer()
	}
	b.ReportMetric(float64(n), "lines/op")
}

// lineCounter counts the newlines written to it.
type lineCounter struct{ n int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}
