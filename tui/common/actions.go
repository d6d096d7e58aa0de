package common

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/widget"
)

// ActionName names an action: a row of the action table, what View.Do runs, and the
// name [keys] in config.toml rebinds.
type ActionName string

// The names of the actions more than one view (or the root) knows. A view's own
// actions are named beside its code, with the rows that bind them.
const (
	// The root's: it runs them in every view (new and apps in some).
	ActQuit    ActionName = "quit"
	ActHelp    ActionName = "help"
	ActPalette ActionName = "palette"
	ActBack    ActionName = "back"
	ActNew     ActionName = "new"
	ActHome    ActionName = "apps"

	// Moving a cursor or scrolling: the moves of tui/widget's Cursor and Pager.
	ActUp       ActionName = widget.Up
	ActDown     ActionName = widget.Down
	ActPageUp   ActionName = widget.PageUp
	ActPageDown ActionName = widget.PageDown
	ActTop      ActionName = widget.Top
	ActBottom   ActionName = widget.Bottom

	// Actions several views bind, each to its own rows.
	ActSecrets ActionName = "secrets"
	ActRefresh ActionName = "refresh"
	// ActWrapLines folds long lines of a pager onto the next rows (or cuts them again).
	ActWrapLines ActionName = "wrap-lines"
)

// Action is one row of the action table: a name, keys, help, and the kinds of view it
// works in (none: every view).
type Action struct {
	Name    ActionName
	Binding key.Binding
	Views   []Kind
	// Short puts the action in the one-line help bar of its views.
	Short bool
}

// Help is the action's description.
func (a Action) Help() string { return a.Binding.Help().Desc }

// In reports whether the action works in views of kind k.
func (a Action) In(k Kind) bool { return len(a.Views) == 0 || slices.Contains(a.Views, k) }

// Global reports whether the action works in every view.
func (a Action) Global() bool { return len(a.Views) == 0 }

// NewAction returns a row of the action table: the action name, its help, its keys
// (the first two label it in help), whether it shows in the help bar, and the kinds of
// view it works in (none: every view).
func NewAction(name ActionName, help string, keys []string, short bool, views ...Kind) Action {
	return Action{
		Name:    name,
		Binding: key.NewBinding(key.WithKeys(keys...), key.WithHelp(keyLabel(keys), help)),
		Views:   views,
		Short:   short,
	}
}

// keyLabel is how keys read in help: "↑/k", "enter", "ctrl+c".
func keyLabel(keys []string) string {
	seen := map[string]bool{}
	var parts []string
	for _, k := range keys {
		l := k
		switch k {
		case "up":
			l = "↑"
		case "down":
			l = "↓"
		case "left":
			l = "←"
		case "right":
			l = "→"
		case "pgup":
			l = "pgup"
		case "pgdown":
			l = "pgdn"
		}
		if !seen[l] {
			seen[l] = true
			parts = append(parts, l)
		}
		if len(parts) == 2 {
			break
		}
	}
	return strings.Join(parts, "/")
}

// Moves returns the rows that move a cursor or scroll, for views of the given kinds:
// a view that scrolls lists them after its own rows.
func Moves(kinds ...Kind) []Action {
	return []Action{
		NewAction(ActUp, "up", []string{"up", "k", "ctrl+p"}, false, kinds...),
		NewAction(ActDown, "down", []string{"down", "j", "ctrl+n"}, false, kinds...),
		NewAction(ActPageUp, "page up", []string{"pgup", "ctrl+b", "ctrl+u"}, false, kinds...),
		NewAction(ActPageDown, "page down", []string{"pgdown", "ctrl+f", "ctrl+d", "space"}, false, kinds...),
		NewAction(ActTop, "top", []string{"home", "g"}, false, kinds...),
		NewAction(ActBottom, "bottom", []string{"end", "G"}, false, kinds...),
	}
}

// IsMove reports whether the action named name moves a cursor or scrolls.
func IsMove(name ActionName) bool {
	switch name {
	case ActUp, ActDown, ActPageUp, ActPageDown, ActTop, ActBottom:
		return true
	}
	return false
}

// Registry is the action table in use: the rows the views and the root declare, with
// the user's key overrides.
type Registry struct {
	actions []Action
}

// NewRegistry returns the action table of the given rows, in order. The first row whose
// keys match in the active view wins, so each view lists its own rows before Moves, and
// the rows of every view (the root's) come last.
func NewRegistry(rows ...[]Action) *Registry {
	r := &Registry{}
	for _, rs := range rows {
		r.actions = append(r.actions, rs...)
	}
	return r
}

// Add appends rows to the table (the user's commands of config.toml).
func (r *Registry) Add(rows ...Action) { r.actions = append(r.actions, rows...) }

// Rebind replaces the keys of every row named name (from the [keys] section of
// config.toml). An unknown name is an error that suggests the closest.
func (r *Registry) Rebind(name ActionName, keys []string) error {
	found := false
	for i := range r.actions {
		if r.actions[i].Name == name {
			help := r.actions[i].Help()
			r.actions[i].Binding = key.NewBinding(key.WithKeys(keys...), key.WithHelp(keyLabel(keys), help))
			found = true
		}
	}
	if !found {
		names := make([]string, 0, len(r.actions))
		for _, n := range r.Names() {
			names = append(names, string(n))
		}
		return fmt.Errorf("unknown action %q%s", name, spec.DidYouMean(string(name), names))
	}
	if len(keys) == 0 {
		return fmt.Errorf("action %q: no keys", name)
	}
	return nil
}

// Rows returns a copy of the table's rows, in order: what [keys] checks its bindings
// against.
func (r *Registry) Rows() []Action { return slices.Clone(r.actions) }

// Names lists the action names, each once, in table order.
func (r *Registry) Names() []ActionName {
	var names []ActionName
	for _, a := range r.actions {
		if !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	return names
}

// Match returns the action that key k runs in views of kind kind.
func (r *Registry) Match(k tea.KeyPressMsg, kind Kind) (Action, bool) {
	for _, a := range r.actions {
		if a.In(kind) && key.Matches(k, a.Binding) {
			return a, true
		}
	}
	return Action{}, false
}

// For lists the actions that work in views of kind kind: the view's own first, then
// the global ones.
func (r *Registry) For(kind Kind) []Action {
	var own, global []Action
	for _, a := range r.actions {
		switch {
		case a.Global():
			global = append(global, a)
		case a.In(kind):
			own = append(own, a)
		}
	}
	return append(own, global...)
}

// Get returns the action named name that works in kind.
func (r *Registry) Get(name ActionName, kind Kind) (Action, bool) {
	for _, a := range r.actions {
		if a.Name == name && a.In(kind) {
			return a, true
		}
	}
	return Action{}, false
}

// Brief is the binding of the action named name in kind with a short description
// desc, for a help bar that offers it in context (z unfold on a sweep's row); false
// when no such action works there.
func (r *Registry) Brief(name ActionName, kind Kind, desc string) (key.Binding, bool) {
	a, ok := r.Get(name, kind)
	if !ok || len(a.Binding.Keys()) == 0 || !a.Binding.Enabled() {
		return key.Binding{}, false
	}
	return key.NewBinding(key.WithKeys(a.Binding.Keys()...), key.WithHelp(a.Binding.Help().Key, desc)), true
}

// ShortHelp returns the bindings of the help bar of views of kind kind.
func (r *Registry) ShortHelp(kind Kind) []key.Binding {
	var out []key.Binding
	for _, a := range r.For(kind) {
		if a.Short {
			out = append(out, a.Binding)
		}
	}
	return out
}

// WhileTyping returns b with only the keys that still work while a text field has
// focus (not text or editing keys), for the help of typing views; false if none do.
func WhileTyping(b key.Binding) (key.Binding, bool) {
	var keys []string
	for _, k := range b.Keys() {
		if !widget.IsEditKeyName(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, false
	}
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(keyLabel(keys), b.Help().Desc)), true
}
