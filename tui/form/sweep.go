package form

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/components"
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

// scriptName is the name of the field of the script's swept flags.
const scriptName = "-- sweep flags"

// toggleSweep sweeps the focused argument, or stops sweeping it. Only an argument
// typed as text can be swept (not a toggle or a run option); on the script's
// arguments it shows (or hides) the field of the script's swept flags.
func (m *Model) toggleSweep() tea.Cmd {
	f := m.fields[m.focus]
	if f.varargs || f.scriptSweep {
		return m.toggleScriptSweep()
	}
	if f.param == nil || f.kind != kText {
		return common.Notify("ctrl+g sweeps a component argument typed as text, or the script's flags (on -- " + m.comp.Varargs + "): focus one")
	}
	f.swept = !f.swept
	f.check()
	m.syncMaxPar()
	if f.swept {
		return common.Notify("sweeping " + f.name + ": type its values (V1,V2,... or A..B[:STEP]); ctrl+g again: one value")
	}
	return nil
}

// toggleScriptSweep shows the field of the script's swept flags after the trailing
// arguments (NAME=V1,V2 ..., each setting --NAME V after --, as --sweep does for a
// name the component does not have), or hides it (its value kept).
func (m *Model) toggleScriptSweep() tea.Cmd {
	if at := slices.IndexFunc(m.fields, func(f *field) bool { return f.scriptSweep }); at >= 0 {
		m.fields = slices.Delete(m.fields, at, at+1)
		m.focusField(at - 1)
		m.syncMaxPar()
		return nil
	}
	f := m.scriptField
	if f == nil {
		f = &field{sec: secArgs, name: scriptName, typ: "NAME=V1,V2 …", scriptSweep: true,
			help:  "the script's flags to sweep: NAME=V1,V2,... (or A..B[:STEP]), space-separated; each sets --NAME V after --",
			input: newText("", "lr=0.1,0.01 batch_size=32,64")}
		m.scriptField = f
	}
	f.check()
	at := slices.IndexFunc(m.fields, func(f *field) bool { return f.varargs })
	m.fields = slices.Insert(m.fields, at+1, f)
	m.focusField(at + 1)
	m.syncMaxPar()
	return common.Notify("sweeping the script's flags: type NAME=V1,V2 ...; ctrl+g again: none")
}

// sweeping says whether an argument, or a flag of the script, is swept.
func (m *Model) sweeping() bool {
	return slices.ContainsFunc(m.fields, func(f *field) bool { return f.swept || f.scriptSweep })
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
	if f.scriptSweep {
		if ps, err := scriptParams(f.value()); err == nil {
			n := 1
			for _, p := range ps {
				n *= len(p.Values)
			}
			return "sweep: " + spec.Count(n, "point")
		}
		return f.typ
	}
	if !f.swept {
		return f.typ
	}
	// Drawn at every frame: counted once per value typed.
	if v := f.value(); f.label.of != v || f.label.text == "" {
		f.label.of, f.label.text = v, "sweep of "+f.typ
		if p, err := sweep.ParseParam(f.name + "=" + v); err == nil {
			f.label.text = "sweep: " + spec.Count(len(p.Values), "value") + " of " + f.typ
		}
	}
	return f.label.text
}

// checkSweep validates a swept argument (each of its values with the component's
// parser) or the parallelism field.
func (f *field) checkSweep() error {
	v := strings.TrimSpace(f.value())
	if f.scriptSweep {
		_, err := scriptParams(v)
		return err
	}
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
	if _, err := sweep.ParseParam(f.name + "=" + v); err != nil {
		_, why, _ := strings.Cut(err.Error(), f.name+": ")
		return errors.New(why)
	}
	// Each value with the component's parser; of a range, its first and last (its
	// values are numbers written alike): a range of 10,000 values is checked at each
	// key typed.
	for _, item := range strings.Split(v, ",") {
		p, _ := sweep.ParseParam(f.name + "=" + strings.TrimSpace(item))
		xs := p.Values
		if len(xs) > 2 {
			xs = []string{xs[0], xs[len(xs)-1]}
		}
		for _, x := range xs {
			if err := checkParam(*f.param, x); err != nil {
				return errors.New(strconv.Quote(x) + ": " + err.Error())
			}
		}
	}
	return nil
}

// scriptParams reads the script's swept flags: space-separated NAME=V1,V2,...
func scriptParams(v string) ([]sweep.Param, error) {
	words := strings.Fields(v)
	if len(words) == 0 {
		return nil, errors.New("want NAME=V1,V2 ... (ctrl+g on the arguments: none)")
	}
	ps, err := sweep.ParseParams(words)
	if err != nil {
		_, why, _ := strings.Cut(err.Error(), "--sweep")
		return nil, errors.New(strings.TrimLeft(why, " :"))
	}
	return ps, nil
}

// sweepParams are the swept arguments and their values, in the form's order, then
// the script's swept flags. A flag named as an argument of the component is refused:
// the sweep would set the argument.
func (m *Model) sweepParams() ([]sweep.Param, error) {
	var ps []sweep.Param
	for _, f := range m.fields {
		switch {
		case f.swept:
			p, err := sweep.ParseParam(f.name + "=" + f.value())
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		case f.scriptSweep:
			sps, err := scriptParams(f.value())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", scriptName, err)
			}
			for _, p := range sps {
				if m.isParam(p.Name) {
					return nil, fmt.Errorf("%s: %s is an argument of %s: sweep its field (ctrl+g on it)", scriptName, p.Name, m.comp.Name)
				}
			}
			ps = append(ps, sps...)
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

// isParam says whether name is a parameter of the component (- and _ alike, as
// sweep.Targets matches them).
func (m *Model) isParam(name string) bool {
	norm := func(s string) string { return strings.ReplaceAll(s, "-", "_") }
	return slices.ContainsFunc(m.comp.Params, func(p components.Param) bool { return norm(p.Name) == norm(name) })
}
