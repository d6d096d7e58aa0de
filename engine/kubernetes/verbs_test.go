package kubernetes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// The log filters on a finished pod: --regex keeps the lines it matches, --since and
// --until bound the lines' times (since inclusive, until exclusive), --tail keeps the
// last lines; read from the cluster and, once wick has kept the pod, from its copy.
func TestLogFilters(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "filters", Roles: []spec.Role{spec.NewRole("w", env.image, "lines", "6", "300ms")}}, nil)
	if st := waitState(t, s, id, 2*time.Minute, terminal); st.State != spec.Succeeded {
		t.Fatalf("state %s (%s)", st.State, st.Msg)
	}
	all := readLog(t, s, id, "w", 0, sched.LogOptions{})
	if len(all) != 12 {
		t.Fatalf("%d lines %q, want 12", len(all), texts(all))
	}
	check := func(from string) {
		t.Helper()
		if got := texts(readLog(t, s, id, "w", 0, sched.LogOptions{Regex: regexp.MustCompile(`^err [24]$`)})); !slices.Equal(got, []string{"err 2", "err 4"}) {
			t.Errorf("%s: regex: %q, want err 2 and err 4", from, got)
		}
		// out 2 .. out 4 are 300 ms apart: the window [out 2, out 4) holds out 2, err 2,
		// out 3, err 3 (and nothing of out 4, written at its bound or after).
		i2 := slices.IndexFunc(all, func(l sched.Line) bool { return l.Text == "out 2" })
		i4 := slices.IndexFunc(all, func(l sched.Line) bool { return l.Text == "out 4" })
		var want []string
		for _, l := range all {
			if !l.Time.Before(all[i2].Time) && l.Time.Before(all[i4].Time) {
				want = append(want, l.Text)
			}
		}
		got := texts(readLog(t, s, id, "w", 0, sched.LogOptions{Since: all[i2].Time, Until: all[i4].Time}))
		if !slices.Equal(got, want) || !slices.Contains(got, "out 3") || slices.Contains(got, "out 4") {
			t.Errorf("%s: since/until: %q, want %q", from, got, want)
		}
		if got := texts(readLog(t, s, id, "w", 0, sched.LogOptions{Tail: 2})); !slices.Equal(got, []string{"out 5", "err 5"}) && !slices.Equal(got, []string{"err 5", "out 5"}) {
			t.Errorf("%s: tail 2: %q, want the last two", from, got)
		}
	}
	check("the cluster's log")
	// The keeper has kept the pod: its copy answers the same.
	testkit.Wait(t, time.Minute, "the kept log", func() (bool, string) {
		names, _ := filepath.Glob(filepath.Join(s.keptDir(id), "*.log"))
		return len(names) == 1, fmt.Sprintf("%q", names)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Gone from the cluster (as a pod JobSet's controller deleted): the copy is all.
	if err := env.cs.CoreV1().Pods(env.namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector(id)}); err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, time.Minute, "the pod to go", func() (bool, string) {
		pl, err := env.cs.CoreV1().Pods(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err.Error()
		}
		return len(pl.Items) == 0, spec.Count(len(pl.Items), "pod")
	})
	if got := texts(readLog(t, s, id, "w", 0, sched.LogOptions{})); !slices.Equal(got, texts(all)) {
		t.Errorf("the kept log of a pod gone: %q, want %q", got, texts(all))
	}
	check("the kept log")
}

// A launch that fails half way (the second role's Job is refused: a resource name
// the API server does not take) deletes what it created: no Job, Service or pod of
// the app stays, and no record.
func TestLaunchFailingHalfWayLeavesNothing(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	bad := spec.NewRole("bad", env.image, "true")
	bad.Resource.Devices = map[string]int{"nodomain": 1}
	app := &spec.AppDef{Name: "halfway", Roles: []spec.Role{spec.NewRole("ok", env.image, "sleep", "10m"), bad}}
	sub := sched.Submission{AppID: spec.MakeAppID(app.Name), Session: env.session, App: app, Cfg: spec.Cfg{OptNamespace: env.namespace, OptImagePullPolicy: "Never"}}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	req, err := s.DryRun(ctx, sub)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	err = s.Schedule(ctx, &sched.DryRunInfo{Scheduler: Name, Submission: sub, Request: req}, nil)
	if err == nil || !strings.Contains(err.Error(), "creating Job "+sub.AppID+"-bad") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("schedule: %v, want one line naming the refused Job", err)
	}
	if _, serr := os.Stat(filepath.Join(s.recordDir(), sub.AppID)); serr == nil {
		t.Errorf("the app's record stays after the failed launch")
	}
	testkit.Wait(t, 2*time.Minute, "nothing of the app left", func() (bool, string) {
		jl, err := env.cs.BatchV1().Jobs(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(sub.AppID)})
		if err != nil {
			return false, err.Error()
		}
		sl, err := env.cs.CoreV1().Services(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(sub.AppID)})
		if err != nil {
			return false, err.Error()
		}
		pl, err := env.cs.CoreV1().Pods(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(sub.AppID)})
		if err != nil {
			return false, err.Error()
		}
		return len(jl.Items)+len(sl.Items)+len(pl.Items) == 0, fmt.Sprintf("%d Jobs, %d Services, %d pods", len(jl.Items), len(sl.Items), len(pl.Items))
	})
}
