package apps

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/spec"
)

// rowOf is the line of s that holds sub, without its gutter.
func rowOf(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimPrefix(strings.TrimPrefix(l, "▸ "), "  ")
		}
	}
	return ""
}

// TestNarrowLayout: at 80 and 100 columns each row keeps its scheduler and its app id
// (a sweep's app its values), NAME shows only the names the app id does not say (a
// Slurm job id's, its start at least), a sweep's row its counts whole; CPU/RSS
// gives way first; at 160 the whole handles are back.
func TestNarrowLayout(t *testing.T) {
	ref := func(v string) *spec.SweepRef {
		return &spec.SweepRef{ID: "sweep-zz7ddclt", Names: []string{"rate"}, Values: map[string]string{"rate": v}}
	}
	train := app("local_cwd://wick/demo-train-jqx70lkvw4xt", spec.Running, false)
	train.Name = "demo-train"
	job := app("slurm://wick/4711", spec.Failed, false)
	job.Name = "ddp-bench"
	var members []spec.AppStatus
	for i, v := range []string{"20", "40", "60", "80"} {
		a := app("docker://wick/demo-train-rate"+v+"-steps30-sjtw0h26dwr"+v[:1], []spec.AppState{spec.Running, spec.Queued, spec.Succeeded, spec.Failed}[i], false)
		a.Name = "demo-train-rate" + v + "-steps30"
		a.Sweep = ref(v)
		members = append(members, a)
	}
	counts := "sweep of 4: 1 running, 1 queued, 1 succeeded, 1 failed"
	for _, w := range []int{80, 100} {
		m := listOnly(t)
		m.Ctx.Width, m.Ctx.Height = w, 24
		m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: append([]spec.AppStatus{train, job}, members...)})
		m.Update(usageMsg{ViewID: m.ID(), byApp: map[string]spec.Usage{train.Handle: {CPU: 1.5, RSS: 1 << 30}}})
		m.selectHandle(groupKey("sweep-zz7ddclt"))
		m.Do(ActFold)
		s := screen(m)
		for i, l := range strings.Split(s, "\n") {
			if n := ansi.StringWidth(l); n > w {
				t.Errorf("%d columns: line %d is %d wide: %q", w, i, n, l)
			}
		}
		if !strings.Contains(s, "SCHED") || !strings.Contains(s, "APP ID") || !strings.Contains(s, "cwd=local_cwd") {
			t.Errorf("%d columns: no SCHED APP ID header or no legend of cwd:\n%s", w, s)
		}
		if l := rowOf(s, "demo-train-jqx70lkvw4xt"); !strings.HasPrefix(l, "cwd ") {
			t.Errorf("%d columns: the local app's row %q, want cwd and its app id\n%s", w, l, s)
		}
		if l := rowOf(s, " 4711"); !strings.HasPrefix(l, "slurm ") || !strings.Contains(l, "ddp-ben") || !strings.Contains(l, "FAILED") {
			t.Errorf("%d columns: the Slurm job's row %q, want slurm, its job id and its name\n%s", w, l, s)
		}
		if l := rowOf(s, "sweep-zz7ddclt"); !strings.Contains(l, counts) {
			t.Errorf("%d columns: the sweep's row %q lost its counts\n%s", w, l, s)
		}
		for _, v := range []string{"20", "40", "60", "80"} {
			if l := rowOf(s, "rate"+v+"-steps30"); !strings.HasPrefix(l, "docker ") {
				t.Errorf("%d columns: the sweep's app of rate %s: %q\n%s", w, v, l, s)
			}
		}
		if w == 80 && strings.Contains(s, "CPU/RSS") {
			t.Errorf("80 columns: the usage column should give way first:\n%s", s)
		}
	}
	m := listOnly(t)
	m.Ctx.Width = 160
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: append([]spec.AppStatus{train, job}, members...)})
	if s := screen(m); !strings.Contains(s, "HANDLE") || !strings.Contains(s, train.Handle) || !strings.Contains(s, job.Handle) || !strings.Contains(s, counts) {
		t.Errorf("160 columns: the whole handles and counts:\n%s", s)
	}
}

// TestNarrowLayoutMarks: the marks of a row (marked, an alarm) start its app id when
// NAME is not shown.
func TestNarrowLayoutMarks(t *testing.T) {
	m := listOnly(t)
	m.Ctx.Width = 80
	a := app("local_cwd://wick/demo-train-jqx70lkvw4xt", spec.Running, false)
	a.Name = "demo-train"
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: []spec.AppStatus{a}})
	m.toggleMark(a.Handle)
	if l := rowOf(screen(m), "jqx70lkvw4xt"); !strings.HasPrefix(l, "cwd   "+markMark+"demo-train-jqx70lkvw4xt") {
		t.Errorf("the marked row: %q", l)
	}
}
