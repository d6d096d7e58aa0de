package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

func TestHugeLineBinaryAndNoNewline(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("big", role("big", os.Args[0], helperVerb, "bigline")), nil)
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded {
		t.Fatalf("%s %s", st.State, st.Msg)
	}
	out := readFile(t, filepath.Join(replicaLogDir(t, s, id, "big", 0), "stdout.log"))
	if len(out) < 11<<20 || !strings.HasPrefix(out, "first\n0123") || !strings.HasSuffix(out, "\nlast line, no newline") {
		t.Fatalf("stdout.log: %d bytes", len(out))
	}
	lines := logLines(t, s, id, "big", 0, sched.LogOptions{Follow: true})
	var rebuilt strings.Builder
	for i, l := range lines {
		rebuilt.WriteString(l.Text)
		if i < len(lines)-1 {
			rebuilt.WriteByte('\n')
		}
	}
	if rebuilt.String() != out {
		t.Fatal("the lines do not rebuild stdout.log")
	}
	if len(lines[1].Text) < 10<<20-16 || strings.Contains(lines[1].Text, "\n") {
		t.Errorf("the 10 MB line came as %d bytes", len(lines[1].Text))
	}
	if last := lines[len(lines)-1]; last.Text != "last line, no newline" || !last.Partial {
		t.Errorf("last line: %q partial=%v", last.Text, last.Partial)
	}
}

func TestFollowEndsWhenTheReplicaIsDone(t *testing.T) {
	s := testScheduler(t, false)
	r := role("talk", "sh", "-c", "echo a; sleep 0.2; echo b >&2; sleep 0.2; printf c")
	other := role("long", "sleep", "1")
	id := start(t, s, appOf("follow", r, other), nil)
	it, err := s.Logs(context.Background(), id, "talk", 0, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []string
	var times []time.Time
	for {
		l, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s:%s:%v", l.Stream, l.Text, l.Partial))
		times = append(times, l.Time)
	}
	if strings.Join(got, " ") != "stdout:a:false stderr:b:false stdout:c:true" {
		t.Errorf("lines: %v", got)
	}
	// The follow ended with the replica, not with the app (long runs for 1 s).
	if d, err := s.Describe(context.Background(), id); err != nil || d.Status.State.Terminal() {
		t.Errorf("the app ended first (%v): the follow should end when the replica does", d.Status.State)
	}
	if times[1].Sub(times[0]) < 150*time.Millisecond {
		t.Errorf("read times %v", times)
	}
	// since/until on the recorded times.
	mid := times[0].Add(times[1].Sub(times[0]) / 2)
	if got := lineTexts(logLines(t, s, id, "talk", 0, sched.LogOptions{Since: mid})); got != "b\nc\n" {
		t.Errorf("since: %q", got)
	}
	if got := lineTexts(logLines(t, s, id, "talk", 0, sched.LogOptions{Until: mid})); got != "a\n" {
		t.Errorf("until: %q", got)
	}
	if got := lineTexts(logLines(t, s, id, "talk", 0, sched.LogOptions{Tail: 1, Streams: sched.Stdout})); got != "c\n" {
		t.Errorf("tail: %q", got)
	}
	waitApp(t, s, id)
}

func TestMergedFollowOfAnApp(t *testing.T) {
	s := testScheduler(t, false)
	r := role("tick", os.Args[0], helperVerb, "ticks", "5", "20")
	r.NumReplicas = 3
	id := start(t, s, appOf("ticks", r), nil)
	var its []sched.LogIterator
	for k := range 3 {
		it, err := s.Logs(context.Background(), id, "tick", k, sched.LogOptions{Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	m := logs.Merge(its...)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(20*time.Second))
	defer cancel()
	n := 0
	var last time.Time
	lastOf := map[int]time.Time{}
	for {
		l, err := m.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		// A replica's own lines come in order. Across replicas, a live merge is exact
		// up to how late a line read by the supervisor reaches its follower (a few
		// milliseconds; tens on a loaded machine): lines of different replicas read
		// within that of each other may swap, later ones may not.
		if l.Time.Before(lastOf[l.Replica]) || l.Time.Before(last.Add(-200*time.Millisecond)) {
			t.Errorf("line %d out of order: %v after %v", n, l.Time, last)
		}
		lastOf[l.Replica] = l.Time
		if l.Time.After(last) {
			last = l.Time
		}
		n++
	}
	if n != 15 {
		t.Errorf("%d lines, want 15", n)
	}
}

func TestListAThousandApps(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("seed", role("e", "true")), nil)
	waitApp(t, s, id)
	seed := filepath.Join(s.appsDir(), id)
	st, _ := readState(seed)
	for i := range 999 {
		clone := *st
		clone.AppID = fmt.Sprintf("clone-%04d", i)
		clone.Created = st.Created.Add(time.Duration(i+1) * time.Second)
		dir := filepath.Join(s.appsDir(), clone.AppID)
		os.Mkdir(dir, 0o755)
		if err := clone.save(dir); err != nil {
			t.Fatal(err)
		}
	}
	// How long it takes is BenchmarkList's figure.
	apps, err := s.List(context.Background())
	if err != nil || len(apps) != 1000 {
		t.Fatalf("%d apps, %v", len(apps), err)
	}
	if apps[0].AppID != "clone-0998" || apps[999].AppID != id {
		t.Errorf("order: %s ... %s", apps[0].AppID, apps[999].AppID)
	}
}

func TestAutoCudaVisibleDevices(t *testing.T) {
	s := testScheduler(t, false)
	gpu := role("gpu", "sh", "-c", `echo "[$CUDA_VISIBLE_DEVICES]"`)
	gpu.NumReplicas, gpu.Resource.GPU = 2, 2
	cpu := role("cpu", "true")
	app := appOf("cuda", cpu, gpu)
	// No nvidia-smi: no GPUs, a warning, no crash.
	t.Setenv("PATH", "/usr/bin:/bin")
	req := dryRun(t, s, app, spec.Cfg{OptAutoCuda: true}).Request.(*Request)
	if _, set := req.Roles[1].Replicas[0].Env["CUDA_VISIBLE_DEVICES"]; set || len(req.Warnings) != 1 || !strings.Contains(req.Warnings[0], "0 were found") {
		t.Errorf("without nvidia-smi: %v %v", req.Roles[1].Replicas[0].Env, req.Warnings)
	}
	// A fake nvidia-smi with 4 GPUs: two each.
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte("#!/bin/sh\nfor i in 0 1 2 3; do echo \"GPU $i: Fake (UUID: GPU-$i)\"; done\n"), 0o755)
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	id := start(t, s, app, spec.Cfg{OptAutoCuda: true})
	waitApp(t, s, id)
	for k, want := range []string{"[0,1]\n", "[2,3]\n"} {
		if got := lineTexts(logLines(t, s, id, "gpu", k, sched.LogOptions{})); got != want {
			t.Errorf("gpu/%d: %q, want %q", k, got, want)
		}
	}
	// Option off: a warning that replicas may share GPUs.
	req = dryRun(t, s, app, nil).Request.(*Request)
	if len(req.Warnings) != 1 || !strings.Contains(req.Warnings[0], OptAutoCuda) {
		t.Errorf("warnings %v", req.Warnings)
	}
}

func TestRunOptsAreValidated(t *testing.T) {
	s := testScheduler(t, false)
	opts := s.RunOpts()
	for _, name := range []string{OptLogDir, OptPrependCwd, OptAutoCuda, OptStopTimeout} {
		if o, ok := opts.Get(name); !ok || o.Help == "" {
			t.Errorf("option %s: %+v", name, o)
		}
	}
	if _, err := opts.ParseCfg("log_dirr=/x"); err == nil || !strings.Contains(err.Error(), "log_dir") {
		t.Errorf("unknown key: %v", err)
	}
	sub := sched.Submission{AppID: "a-1", Session: "test", App: appOf("a", role("a", "true")), Cfg: spec.Cfg{OptStopTimeout: -1.0}}
	if _, err := s.DryRun(context.Background(), sub); !errors.Is(err, spec.ErrInvalidRunOpt) {
		t.Errorf("negative stop_timeout: %v", err)
	}
}
