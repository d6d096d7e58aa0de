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
)

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
	m := &Model{Base: common.NewBase(ctx, common.KindForm), comp: c, opts: map[string]optsMsg{}, optFields: map[string][]*field{}}
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

// Typing reports true: keys go to the focused field.
func (m *Model) Typing() bool { return true }

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
			f := optField(opt, o.file[opt.Name])
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
		if f := m.fields[m.focus]; f.kind == kText && f.input.Update(msg) {
			f.check()
		}
	case tea.MouseWheelMsg:
		m.offset = max(0, m.offset+common.WheelDelta(msg))
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

// edit gives a key to the focused field and checks the new value.
func (m *Model) edit(k tea.KeyPressMsg) tea.Cmd {
	f := m.fields[m.focus]
	m.formErr = ""
	switch f.kind {
	case kBool, kChoice:
		switch k.String() {
		case "space", "x", "right", "l":
			return m.toggle(1)
		case "left", "h":
			return m.toggle(-1)
		}
		return nil
	}
	if f.input.Update(k) {
		f.check()
	}
	return nil
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
func (m *Model) Do(action string) (tea.Cmd, bool) {
	switch action {
	case common.ActNextField, common.ActDown:
		return m.focusField(m.focus + 1), true
	case common.ActPrevField, common.ActUp:
		return m.focusField(m.focus - 1), true
	case common.ActPreview:
		return m.preview(), true
	}
	return nil, false
}

// preview checks every field, builds the AppDef with the component's own parser and
// opens the dry-run preview.
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
	app, warnings, err := m.build()
	if err != nil {
		m.formErr = err.Error()
		return nil
	}
	cfg, err := m.cfg()
	if err != nil {
		m.formErr = err.Error()
		return nil
	}
	cmds := []tea.Cmd{common.Push(preview.New(m.Ctx, preview.Plan{App: app, Scheduler: m.scheduler(), Cfg: cfg}))}
	if len(warnings) > 0 {
		cmds = append(cmds, common.Notify("warning: "+strings.Join(warnings, "; ")))
	}
	return tea.Batch(cmds...)
}

// Argv is the command line the form stands for: --NAME=VALUE per parameter, then "--"
// and the trailing arguments. `wick run COMPONENT ARGV...` builds the same app.
func (m *Model) Argv() ([]string, error) {
	var argv, rest []string
	for _, f := range m.fields {
		switch {
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

func (m *Model) build() (*spec.AppDef, []string, error) {
	argv, err := m.Argv()
	if err != nil {
		return nil, nil, err
	}
	args, err := m.comp.Parse(argv, m.defaults)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	args.Warn = func(s string) { warnings = append(warnings, s) }
	app, err := m.comp.AppDef(args)
	return app, warnings, err
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
