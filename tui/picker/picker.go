// Package picker is the component picker: builtins, user components and the user's
// TorchX's components (marked torchx) in one list,
// filtered fuzzily as you type, with a side pane showing the selected component's help
// and parameters.
package picker

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/form"
	"github.com/wick-dev/wick/tui/widget"
)

// Kind is the picker's kind of view.
const Kind common.Kind = "picker"

// ActSelect opens the argument form of the selected component.
const ActSelect = "select"

// Actions are the picker's rows of the action table.
func Actions() []common.Action {
	return append([]common.Action{
		common.NewAction(ActSelect, "fill in arguments", []string{"enter"}, true, Kind),
	}, common.Moves(Kind)...)
}

// Model is the picker view.
type Model struct {
	common.Base
	all     []*components.Component
	err     error
	loaded  bool
	matches []match
	filter  widget.Input
	cur     widget.Cursor
}

type match struct {
	c     *components.Component
	score int
	pos   []int // matched byte offsets in c.Name
	// ref marks the row of a typed reference (./component.py:trainer, comps.yaml:x):
	// enter reads it as `wick run` would.
	ref bool
}

// findTimeout bounds reading a typed component reference: a .py file asks the user's
// TorchX (a python3 process).
const findTimeout = 60 * time.Second

type foundMsg struct {
	common.ViewID
	ref  string
	comp *components.Component
	err  error
}

type loadedMsg struct {
	common.ViewID
	comps []*components.Component
	err   error
}

// New returns the picker; Init loads the components.
func New(ctx *common.Context) *Model {
	m := &Model{Base: common.NewBase(ctx, Kind)}
	m.filter = widget.NewInput("› ")
	m.filter.Placeholder = "type to filter components"
	m.filter.Focus()
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "new app" }

// Typing reports true: what the user types filters the list.
func (m *Model) Typing() bool { return true }

// Init loads the components (user components are files).
func (m *Model) Init() tea.Cmd {
	id, load := m.ID(), m.Ctx.Components
	return func() tea.Msg {
		if load == nil {
			return loadedMsg{ViewID: id, comps: components.Builtins()}
		}
		comps, err := load()
		return loadedMsg{ViewID: id, comps: comps, err: err}
	}
}

// Update takes the component list, typing and the mouse.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case loadedMsg:
		m.all, m.err, m.loaded = msg.comps, msg.err, true
		m.refilter()
	case foundMsg:
		if msg.ref != strings.TrimSpace(m.filter.Value()) {
			return nil // typed on since: not what the user wants now
		}
		if msg.err != nil {
			return common.NotifyErr(msg.err)
		}
		return common.Push(form.New(m.Ctx, msg.comp))
	case tea.KeyPressMsg, tea.PasteMsg:
		if m.filter.Update(msg) {
			m.cur = widget.Cursor{}
			m.refilter()
		}
	case tea.MouseWheelMsg:
		m.cur.Wheel(widget.WheelDelta(msg), len(m.matches), m.listHeight())
	case tea.MouseClickMsg:
		if msg.Button != tea.MouseLeft || msg.X >= m.listWidth() {
			return nil
		}
		before := m.cur.Index
		if m.cur.Click(msg.Y-listTop, len(m.matches)) && before == m.cur.Index {
			cmd, _ := m.Do(ActSelect)
			return cmd
		}
	}
	return nil
}

// refilter ranks the components against the filter: fuzzy matches of the name by
// score, then, below them, components whose summary holds the filter as typed.
func (m *Model) refilter() {
	q := strings.TrimSpace(m.filter.Value())
	lq := strings.ToLower(q)
	m.matches = m.matches[:0]
	for _, c := range m.all {
		score, pos, ok := widget.Fuzzy(q, c.Name)
		if !ok {
			if !strings.Contains(strings.ToLower(c.Summary), lq) {
				continue
			}
			score = -1
		}
		m.matches = append(m.matches, match{c: c, score: score, pos: pos})
	}
	slices.SortStableFunc(m.matches, func(a, b match) int {
		if a.score != b.score {
			return b.score - a.score
		}
		return strings.Compare(a.c.Name, b.c.Name)
	})
	if q == "" {
		// Unfiltered, builtins keep their order, user components follow, then TorchX's.
		slices.SortStableFunc(m.matches, func(a, b match) int { return rank(a.c) - rank(b.c) })
	}
	if isRef(q) && !slices.ContainsFunc(m.matches, func(mt match) bool { return mt.score >= 0 && mt.c.Name == q }) {
		// What `wick run` takes, the picker takes: a file's component, first.
		row := &components.Component{Name: q, Summary: "a component file: enter reads it"}
		m.matches = slices.Insert(m.matches, 0, match{c: row, ref: true, score: 1 << 30})
	}
	m.cur.Clamp(len(m.matches), m.listHeight())
}

// isRef reports whether q names a component by its file, as `wick run` takes it: a
// TorchX .py file's function (./component.py:trainer), a YAML file's component
// (comps.yaml:train, or the file alone), or a path (./, ../, /, ~/).
func isRef(q string) bool {
	if q == "" || strings.ContainsAny(q, " \t") {
		return false
	}
	if components.IsPythonFile(q) {
		return true
	}
	path, _, _ := strings.Cut(q, ":")
	switch filepath.Ext(path) {
	case ".yaml", ".yml":
		return true
	}
	for _, p := range []string{"./", "../", "/", "~/"} {
		if strings.HasPrefix(q, p) && strings.Contains(q, ":") {
			return true
		}
	}
	return false
}

// find reads the typed reference ref with the Runner's search options, off the loop.
func (m *Model) find(ref string) tea.Cmd {
	id, parent, opts := m.ID(), m.Ctx.Ctx, m.Ctx.Find
	return func() tea.Msg {
		if parent == nil {
			parent = context.Background()
		}
		ctx, cancel := context.WithTimeout(parent, findTimeout)
		defer cancel()
		c, err := components.FindContext(ctx, ref, opts)
		return foundMsg{ViewID: id, ref: ref, comp: c, err: err}
	}
}

// rank orders the unfiltered list: wick's builtins, user files, TorchX's components.
func rank(c *components.Component) int {
	switch {
	case c.From == components.FromTorchX && c.Source == "":
		return 2
	case c.Source != "":
		return 1
	}
	return 0
}

// Selected is the highlighted component, or nil.
func (m *Model) Selected() *components.Component {
	if m.cur.Index < 0 || m.cur.Index >= len(m.matches) {
		return nil
	}
	return m.matches[m.cur.Index].c
}

// Do moves in the list, opens the argument form, or clears the filter on Esc.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	if m.cur.Do(string(action), len(m.matches), m.listHeight()) {
		return nil, true
	}
	switch action {
	case ActSelect:
		c := m.Selected()
		if c == nil {
			return nil, true
		}
		if m.matches[m.cur.Index].ref {
			return tea.Batch(common.Notify("reading "+c.Name+"…"), m.find(c.Name)), true
		}
		return common.Push(form.New(m.Ctx, c)), true
	case common.ActBack:
		if m.filter.Value() != "" {
			m.filter.SetValue("")
			m.refilter()
			return nil, true
		}
	}
	return nil, false
}

// source says where a component comes from: its file, "torchx" for one the user's
// TorchX defines, nothing for wick's builtins.
func source(c *components.Component) string {
	switch {
	case c.From == components.FromTorchX && c.Source != "":
		return filepath.Base(c.Source) + " · torchx"
	case c.From == components.FromTorchX:
		return "torchx"
	case c.Source == "":
		return ""
	}
	return filepath.Base(c.Source)
}
