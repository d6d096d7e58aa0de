package docker

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// BenchmarkListBesideDockerPS lists this home's 10 local_docker apps (ended, as a
// list mostly holds) while the Engine also holds 20 containers of another home, beside
// `docker ps -a --filter label=dev.wick.home=...` for the same containers, alternating
// which goes first, in the same run (issue 37: at most 2x). Each listing is a cold
// one, as a `wick list` process makes it: a new scheduler, a new client that pings the
// Engine first. With WICK_TEST_BIN (make bench), the wick binary's `wick list -s
// local_docker` is timed too, start-up included. Reported: ns/op of wick's listing,
// list-ms and ps-ms (the medians' halves of each loop), wick/ps and, with the binary,
// bin-ms and bin/ps.
func BenchmarkListBesideDockerPS(b *testing.B) {
	needEngine(b)
	home := b.TempDir()
	mine, err := New(sched.Config{Session: env.session, StateDir: home})
	if err != nil {
		b.Fatal(err)
	}
	s := mine.(*Scheduler)
	other, err := New(sched.Config{Session: env.session, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	theirs := other.(*Scheduler)
	b.Cleanup(func() { s.Close(); theirs.Close() })
	app := func(name string, n int) *spec.AppDef {
		r := role("main", n, "true")
		return &spec.AppDef{Name: name, Roles: []spec.Role{r}}
	}
	var ids []string
	for range 10 {
		ids = append(ids, launch(b, s, app("bench-mine", 1), nil))
	}
	for range 4 {
		launch(b, theirs, app("bench-theirs", 5), nil)
	}
	for _, id := range ids {
		wait(b, s, id, 60*time.Second, func(st *spec.AppStatus) bool { return st.State.Terminal() })
	}
	ctx := context.Background()
	// The first listing sees the apps ended and keeps them (the ended cache).
	if apps, err := s.List(ctx); err != nil || len(apps) != len(ids) {
		b.Fatalf("list: %v, %d apps", err, len(apps))
	}
	ps := func() time.Duration {
		t0 := time.Now()
		cmd := exec.Command("docker", "ps", "-a", "--filter", "label="+LabelHome+"="+s.homeID())
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("docker ps: %v\n%s", err, out)
		}
		return time.Since(t0)
	}
	list := func() time.Duration {
		t0 := time.Now()
		fresh, err := New(sched.Config{Session: env.session, StateDir: home})
		if err != nil {
			b.Fatal(err)
		}
		defer fresh.Close()
		apps, err := fresh.List(ctx)
		if err != nil || len(apps) != len(ids) {
			b.Fatalf("list: %v, %d apps", err, len(apps))
		}
		return time.Since(t0)
	}
	bin := os.Getenv("WICK_TEST_BIN")
	binList := func() time.Duration {
		t0 := time.Now()
		cmd := exec.Command(bin, "list", "-s", Name)
		cmd.Env = append(os.Environ(), "WICK_HOME="+home, "NO_COLOR=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("wick list: %v\n%s", err, out)
		}
		return time.Since(t0)
	}
	var lists, pss, bins []time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			lists = append(lists, list())
			b.StopTimer()
			pss = append(pss, ps())
		} else {
			b.StopTimer()
			pss = append(pss, ps())
			b.StartTimer()
			lists = append(lists, list())
			b.StopTimer()
		}
		if bin != "" {
			bins = append(bins, binList())
		}
		b.StartTimer()
		i++
	}
	l, p := median(lists), median(pss)
	b.ReportMetric(float64(l)/1e6, "list-ms")
	b.ReportMetric(float64(p)/1e6, "ps-ms")
	b.ReportMetric(float64(l)/float64(p), "wick/ps")
	if bin != "" {
		m := median(bins)
		b.ReportMetric(float64(m)/1e6, "bin-ms")
		b.ReportMetric(float64(m)/float64(p), "bin/ps")
	}
}

// median is the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
