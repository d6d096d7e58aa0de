// Package form is the argument form: one typed field per component parameter (numbers,
// toggles for bools, lists, maps), filled with defaults and .torchxconfig values,
// required ones marked and every value checked as it is typed; then the scheduler and
// its run options, with their help. Enter plans the app and opens the preview.
package form

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/preview"
	"github.com/wick-dev/wick/tui/widget"
)

// Kind is the form's kind of view.
const Kind common.Kind = "form"

// The form's actions.
const (
	ActNextField  = "next-field"
	ActPrevField  = "prev-field"
	ActPreview    = "preview"
	ActToggle     = "toggle"
	ActPrevChoice = "prev-choice"
)

// Actions are the form's rows of the action table. Toggling works on a bool or choice
// field, where no text field has focus and keys reach the table.
func Actions() []common.Action {
	return []common.Action{
		common.NewAction(ActNextField, "next field", []string{"tab", "down"}, true, Kind),
		common.NewAction(ActPrevField, "previous field", []string{"shift+tab", "up"}, false, Kind),
		common.NewAction(ActPreview, "preview the dry run", []string{"enter", "ctrl+s"}, true, Kind),
		common.NewAction(ActToggle, "toggle / next choice", []string{"space", "x", "right", "l"}, true, Kind),
		common.NewAction(ActPrevChoice, "previous choice", []string{"left", "h"}, false, Kind),
		common.NewAction(ActSweep, "sweep this argument: V1,V2,... or A..B[:STEP] (again: one value)", []string{"ctrl+g"}, false, Kind),
	}
}

// Model is the argument form.
type Model struct {
	common.Base
	comp     *components.Component
	defaults map[string]string
	fields   []*field
	focus    int
	offset   int // first body line shown
	formErr  string
	// opts caches the run options of each scheduler asked for, and optFields their
	// fields, so that edits survive switching to another scheduler and back.
	opts      map[string]optsMsg
	optFields map[string][]*field
	pending   string // the scheduler whose run options are being read
	// fill holds the run options of the app being relaunched with edits, by
	// scheduler: they replace .torchxconfig's values in that scheduler's fields.
	fill map[string]spec.Cfg
	// maxParField is the sweep's parallelism field (sweep.go), made when an argument
	// is first swept.
	maxParField *field
	// scriptField is the field of the script's swept flags (sweep.go), made when
	// the trailing arguments are first swept.
	scriptField *field
}

// optsMsg carries a scheduler's run options and their .torchxconfig values.
type optsMsg struct {
	common.ViewID
	sched string
	opts  spec.RunOpts
	file  spec.Cfg
	err   error
}

// New returns the form of component c.
func New(ctx *common.Context, c *components.Component) *Model {
	m := &Model{Base: common.NewBase(ctx, Kind), comp: c, opts: map[string]optsMsg{}, optFields: map[string][]*field{}}
	m.defaults = ctx.Config.ComponentDefaults(c.Name)
	for i := range c.Params {
		p := &c.Params[i]
		d, ok := m.defaults[p.Name]
		m.fields = append(m.fields, paramField(p, d, ok))
	}
	if c.Varargs != "" {
		m.fields = append(m.fields, varargsField(c, m.defaults[c.Varargs]))
	}
	scheds := ctx.Backend.SchedulerBackends()
	sf := &field{sec: secScheduler, name: "scheduler", kind: kChoice, choices: scheds,
		help: "where the app runs: ←/→ to choose"}
	if i := slices.Index(scheds, ctx.DefaultScheduler); i >= 0 {
		sf.choice = i
	}
	m.fields = append(m.fields, sf)
	for _, f := range m.fields {
		f.check()
	}
	m.focusField(0)
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return m.comp.Name }

// Typing reports whether a text field has focus: then keys go to it; on a toggle or a
// choice they go through the action table.
func (m *Model) Typing() bool { return m.fields[m.focus].kind == kText }

// Init reads the run options of the preselected scheduler.
func (m *Model) Init() tea.Cmd { return m.loadOpts() }

func (m *Model) scheduler() string { return m.schedField().value() }

func (m *Model) schedField() *field {
	for _, f := range m.fields {
		if f.sec == secScheduler {
			return f
		}
	}
	return nil
}

// loadOpts reads the run options of the chosen scheduler (creating a scheduler may
// talk to the Docker Engine: it runs in a command).
func (m *Model) loadOpts() tea.Cmd {
	name := m.scheduler()
	if o, ok := m.opts[name]; ok {
		m.setOpts(o)
		return nil
	}
	m.pending = name
	id, b, conf := m.ID(), m.Ctx.Backend, m.Ctx.Config
	return func() tea.Msg {
		opts, err := b.SchedulerRunOpts(name)
		var file spec.Cfg
		if err == nil {
			file, err = conf.RunOpts(name, opts)
		}
		return optsMsg{ViewID: id, sched: name, opts: opts, file: file, err: err}
	}
}

// setOpts replaces the run option fields with those of o.
func (m *Model) setOpts(o optsMsg) {
	focused := m.fields[m.focus]
	m.fields = slices.DeleteFunc(m.fields, func(f *field) bool { return f.sec == secRunOpts })
	m.formErr = ""
	if o.err != nil {
		m.formErr = o.err.Error()
	}
	fields, ok := m.optFields[o.sched]
	if !ok {
		for i := range o.opts {
			opt := &o.opts[i]
			v := o.file[opt.Name]
			if fv, ok := m.fill[o.sched][opt.Name]; ok {
				v = fv
			}
			f := optField(opt, v)
			f.check()
			fields = append(fields, f)
		}
		m.optFields[o.sched] = fields
	}
	m.fields = append(m.fields, fields...)
	m.focus = max(0, slices.Index(m.fields, focused))
}

// Update takes run options, keys for the focused field and the mouse.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case optsMsg:
		m.opts[msg.sched] = msg
		if msg.sched == m.pending {
			m.pending = ""
		}
		if msg.sched == m.scheduler() {
			m.setOpts(msg)
		}
	case tea.KeyPressMsg:
		return m.edit(msg)
	case tea.PasteMsg:
		if f := m.fields[m.focus]; f.kind == kText {
			if !f.touched {
				f.input.SetValue("")
			}
			f.touched = true
			if f.input.Update(msg) {
				f.check()
			}
		}
	case tea.MouseWheelMsg:
		m.offset = max(0, m.offset+widget.WheelDelta(msg))
	case tea.MouseClickMsg:
		if i, ok := m.fieldAt(msg.Y); ok {
			before := m.focus
			cmd := m.focusField(i)
			if before == i && msg.Button == tea.MouseLeft {
				return tea.Batch(cmd, m.toggle(1))
			}
			return cmd
		}
	}
	return nil
}

// edit gives a key to the focused text field and checks the new value.
func (m *Model) edit(k tea.KeyPressMsg) tea.Cmd {
	f := m.fields[m.focus]
	m.formErr = ""
	if f.kind != kText {
		return nil
	}
	if !f.touched && k.Text != "" && k.Mod&^tea.ModShift == 0 {
		// The first character typed on an untouched value replaces it; a moving or
		// deleting key first (←, end, backspace) edits it instead.
		f.input.SetValue("")
	}
	f.touched = true
	if f.input.Update(k) {
		f.check()
	}
	return nil
}

// HelpNote is what `?` says of typing in the form, beside its keys.
func (m *Model) HelpNote() string {
	return "Typing on a field's untouched value (a default) replaces it; ←, → or backspace first edit it."
}

// toggle flips a bool or moves a choice by delta.
func (m *Model) toggle(delta int) tea.Cmd {
	f := m.fields[m.focus]
	switch f.kind {
	case kBool:
		f.on = !f.on
	case kChoice:
		if len(f.choices) == 0 {
			return nil
		}
		f.choice = (f.choice + delta + len(f.choices)) % len(f.choices)
		if f.sec == secScheduler {
			return m.loadOpts()
		}
	}
	return nil
}

func (m *Model) focusField(i int) tea.Cmd {
	if len(m.fields) == 0 {
		return nil
	}
	i = (i + len(m.fields)) % len(m.fields)
	if f := m.fields[m.focus]; f.kind == kText {
		f.input.Blur()
	}
	m.focus = i
	if f := m.fields[i]; f.kind == kText {
		f.input.Focus()
	}
	return nil
}

// Do moves between fields and plans the app.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	switch action {
	case ActNextField:
		return m.focusField(m.focus + 1), true
	case ActPrevField:
		return m.focusField(m.focus - 1), true
	case ActPreview:
		return m.preview(), true
	case ActToggle:
		m.formErr = ""
		return m.toggle(1), true
	case ActPrevChoice:
		m.formErr = ""
		return m.toggle(-1), true
	case ActSweep:
		m.formErr = ""
		return m.toggleSweep(), true // sweep.go
	}
	return nil, false
}

// preview checks every field and opens the dry-run preview of the command line the
// form stands for, which plans it through the Runner as `wick run` does.
func (m *Model) preview() tea.Cmd {
	for i, f := range m.fields {
		f.check()
		if f.err != "" {
			m.formErr = fmt.Sprintf("%s: %s", strings.TrimPrefix(f.name, "-- "), f.err)
			return m.focusField(i)
		}
	}
	if m.pending != "" {
		m.formErr = "reading the run options of " + m.pending + "…"
		return nil
	}
	argv, err := m.Argv()
	if err != nil {
		m.formErr = err.Error()
		return nil
	}
	cfg, err := m.cfg()
	if err != nil {
		m.formErr = err.Error()
		return nil
	}
	if m.sweeping() {
		return m.previewSweep(argv, cfg) // sweep.go
	}
	return common.Push(preview.New(m.Ctx, preview.Plan{Component: m.ref(), Args: argv, Scheduler: m.scheduler(), Cfg: cfg}))
}

// ref names the form's component for the Runner: FILE:NAME for a user component, so
// that the file it was picked from is the one planned; the name for a builtin.
func (m *Model) ref() string {
	if m.comp.Source != "" {
		return m.comp.Source + ":" + m.comp.Name
	}
	return m.comp.Name
}

// Argv is the command line the form stands for: --NAME=VALUE per parameter, then "--"
// and the trailing arguments. `wick run COMPONENT ARGV...` builds the same app.
func (m *Model) Argv() ([]string, error) {
	var argv, rest []string
	for _, f := range m.fields {
		switch {
		case f.swept:
			// Its values come from the sweep (sweepParams).
		case f.varargs:
			words, err := components.SplitWords(f.value())
			if err != nil {
				return nil, err
			}
			rest = words
		case f.param == nil:
		case f.kind == kBool:
			argv = append(argv, "--"+f.name+"="+f.value())
		case f.value() != "":
			argv = append(argv, "--"+f.name+"="+f.value())
		case f.param.Type == components.String && f.value() != f.initial:
			// Cleared on purpose: the empty string (or none, when optional).
			argv = append(argv, "--"+f.name+"=")
		}
	}
	if m.comp.Varargs != "" && len(rest) > 0 {
		argv = append(append(argv, "--"), rest...)
	}
	return argv, nil
}

// cfg casts the run option fields that hold a value.
func (m *Model) cfg() (spec.Cfg, error) {
	cfg := spec.Cfg{}
	for _, f := range m.fields {
		if f.opt == nil || strings.TrimSpace(f.value()) == "" {
			continue
		}
		v, err := f.opt.Cast(f.value())
		if err != nil {
			return nil, err
		}
		cfg[f.opt.Name] = v
	}
	return cfg, nil
}
