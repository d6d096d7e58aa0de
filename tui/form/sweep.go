package form

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/sweepplan"
)

// The form launches a sweep as `wick run --sweep` does: ctrl+g turns the focused
// argument into a list of values (V1,V2,... or a range A..B[:STEP]), and, while one is
// swept, a field of the scheduler's section sets how many apps run at once
// (--max-parallel). Enter then opens the sweep's preview (tui/sweepplan), which plans
// the grid with the Runner's PlanSweep, the engine's one planning of a sweep.

// ActSweep turns the focused argument into a swept one, or back.
const ActSweep = "sweep-field"

// maxParName is the name of the parallelism field.
const maxParName = "max parallel"

// toggleSweep sweeps the focused argument, or stops sweeping it. Only an argument
// typed as text can be swept (not a toggle, the script's arguments or a run option).
func (m *Model) toggleSweep() tea.Cmd {
	f := m.fields[m.focus]
	if f.param == nil || f.kind != kText {
		return common.Notify("ctrl+g sweeps a component argument typed as text: focus one")
	}
	f.swept = !f.swept
	f.check()
	m.syncMaxPar()
	if f.swept {
		return common.Notify("sweeping " + f.name + ": type its values (V1,V2,... or A..B[:STEP]); ctrl+g again: one value")
	}
	return nil
}

// sweeping says whether an argument is swept.
func (m *Model) sweeping() bool {
	return slices.ContainsFunc(m.fields, func(f *field) bool { return f.swept })
}

// syncMaxPar shows the parallelism field, after the scheduler, while an argument is
// swept, and hides it otherwise (its value kept for the next time).
func (m *Model) syncMaxPar() {
	at := slices.IndexFunc(m.fields, func(f *field) bool { return f.maxPar })
	focused := m.fields[m.focus]
	switch {
	case m.sweeping() && at < 0:
		f := m.maxParField
		if f == nil {
			f = &field{sec: secScheduler, name: maxParName, typ: "int", maxPar: true,
				help:  "sweep: at most this many apps at once (empty: one per GPU, else one per CPU core; slurm: all, Slurm queues them)",
				input: newText("", "default")}
			m.maxParField = f
		}
		i := slices.IndexFunc(m.fields, func(f *field) bool { return f.sec == secScheduler })
		m.fields = slices.Insert(m.fields, i+1, f)
	case !m.sweeping() && at >= 0:
		m.fields = slices.Delete(m.fields, at, at+1)
	}
	m.focus = max(0, slices.Index(m.fields, focused))
}

// typeLabel is what is shown after a field's input: its type, or for a swept
// argument that it is swept and how many values it has.
func (f *field) typeLabel() string {
	if !f.swept {
		return f.typ
	}
	if p, err := sweep.ParseParam(f.name + "=" + f.value()); err == nil {
		return "sweep: " + spec.Count(len(p.Values), "value") + " of " + f.typ
	}
	return "sweep of " + f.typ
}

// checkSweep validates a swept argument (each of its values with the component's
// parser) or the parallelism field.
func (f *field) checkSweep() error {
	v := strings.TrimSpace(f.value())
	if f.maxPar {
		if v == "" {
			return nil
		}
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			return errors.New("want 1 or more (empty: the default)")
		}
		return nil
	}
	if v == "" {
		return errors.New("want V1,V2,... or A..B[:STEP]")
	}
	p, err := sweep.ParseParam(f.name + "=" + v)
	if err != nil {
		_, why, _ := strings.Cut(err.Error(), f.name+": ")
		return errors.New(why)
	}
	for _, x := range p.Values {
		if err := checkParam(*f.param, x); err != nil {
			return errors.New(strconv.Quote(x) + ": " + err.Error())
		}
	}
	return nil
}

// sweepParams are the swept arguments and their values, in the form's order.
func (m *Model) sweepParams() ([]sweep.Param, error) {
	var ps []sweep.Param
	for _, f := range m.fields {
		if f.swept {
			p, err := sweep.ParseParam(f.name + "=" + f.value())
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		}
	}
	n := 1
	for _, p := range ps {
		n *= len(p.Values)
		if n > sweep.MaxApps {
			return nil, errors.New("the grid has more than " + strconv.Itoa(sweep.MaxApps) + " apps")
		}
	}
	return ps, nil
}

// previewSweep opens the preview of the grid the form stands for: the arguments not
// swept (argv), the swept ones, the scheduler and its run options, the parallelism.
func (m *Model) previewSweep(argv []string, cfg spec.Cfg) tea.Cmd {
	ps, err := m.sweepParams()
	if err != nil {
		m.formErr = err.Error()
		return nil
	}
	par := 0
	if m.maxParField != nil {
		par, _ = strconv.Atoi(strings.TrimSpace(m.maxParField.value()))
	}
	return common.Push(sweepplan.New(m.Ctx, sweepplan.Plan{
		Component: m.ref(), Args: argv, Params: ps, Scheduler: m.scheduler(), Cfg: cfg, MaxParallel: par,
	}))
}
