package common

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
)

// Action names. Each is one row of the action table, runnable by its keys and by
// name from the command palette.
const (
	ActQuit    = "quit"
	ActHelp    = "help"
	ActPalette = "palette"
	ActBack    = "back"
	ActNew     = "new"
	ActHome    = "apps"

	ActUp       = "up"
	ActDown     = "down"
	ActPageUp   = "page-up"
	ActPageDown = "page-down"
	ActTop      = "top"
	ActBottom   = "bottom"

	ActSelect    = "select"
	ActNextField = "next-field"
	ActPrevField = "prev-field"
	ActPreview   = "preview"
	ActLaunch    = "launch"
	ActSecrets   = "secrets"

	ActDescribe = "describe"
	ActLogs     = "logs"
	ActCancel   = "cancel"
	ActDelete   = "delete"
	ActRelaunch = "relaunch"
	ActFilter   = "filter"
	ActSort     = "sort"
	ActReverse  = "reverse"
	ActRefresh  = "refresh"
	ActFollow   = "follow"
	ActReplica  = "next-replica"

	// The log wall.
	ActPrevReplica = "prev-replica"
	ActZoom        = "zoom"
	ActMerged      = "merged"
	ActHide        = "hide"
	ActShowAll     = "show-all"
	ActNextPage    = "next-page"
	ActPrevPage    = "prev-page"
	ActWrap        = "wrap"
	ActTimestamps  = "timestamps"
	ActStreams     = "streams"
	ActSearch      = "search"
	ActNextMatch   = "next-match"
	ActPrevMatch   = "prev-match"
	ActRegex       = "regex"
	ActCase        = "case"
	ActOnlyMatches = "only-matches"
	ActContext     = "context"
	ActSave        = "save"
	ActMark        = "select-lines"
	ActCopy        = "copy"
	ActSummary     = "summary"

	ActYes = "yes"
	ActNo  = "no"
)

// Action is one row of the action table: a name, keys, help, and the kinds of view it
// works in (none: every view).
type Action struct {
	Name    string
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

func act(name, help string, keys []string, short bool, views ...Kind) Action {
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

var (
	lists   = []Kind{KindPicker, KindApps}
	scrolls = []Kind{KindPicker, KindApps, KindPreview, KindDescribe, KindLogs, KindLaunch}
	appish  = []Kind{KindApps, KindDescribe}
)

// DefaultActions is wick's action table. View-specific rows come before global ones:
// the first row whose keys match in the active view wins.
func DefaultActions() []Action {
	return []Action{
		// The argument form.
		act(ActNextField, "next field", []string{"tab", "down"}, true, KindForm),
		act(ActPrevField, "previous field", []string{"shift+tab", "up"}, false, KindForm),
		act(ActPreview, "preview the dry run", []string{"enter", "ctrl+s"}, true, KindForm),
		// The picker.
		act(ActSelect, "fill in arguments", []string{"enter"}, true, KindPicker),
		// The preview.
		act(ActLaunch, "launch", []string{"enter", "L"}, true, KindPreview),
		act(ActSecrets, "show/hide secrets", []string{"s"}, true, KindPreview, KindDescribe),
		// The app list and describe.
		act(ActDescribe, "describe", []string{"enter", "d"}, true, KindApps),
		act(ActLogs, "logs", []string{"l"}, true, appish...),
		act(ActCancel, "cancel", []string{"x"}, true, appish...),
		act(ActDelete, "delete", []string{"D"}, true, appish...),
		act(ActRelaunch, "relaunch", []string{"r"}, true, appish...),
		act(ActFilter, "filter", []string{"/"}, true, KindApps),
		act(ActSort, "sort by next column", []string{"o"}, false, KindApps),
		act(ActReverse, "reverse the order", []string{"O"}, false, KindApps),
		act(ActRefresh, "refresh", []string{"R", "ctrl+r"}, false, KindApps, KindDescribe, KindLogs),
		// The logs.
		act(ActFollow, "follow/pause", []string{"f"}, true, KindLogs),
		act(ActReplica, "next pane", []string{"tab", "right", "l"}, true, KindLogs),
		act(ActPrevReplica, "previous pane", []string{"shift+tab", "left", "h"}, false, KindLogs),
		act(ActZoom, "zoom pane", []string{"z"}, true, KindLogs),
		act(ActMerged, "merged view", []string{"m"}, true, KindLogs),
		act(ActHide, "hide pane", []string{"x"}, false, KindLogs),
		act(ActShowAll, "show hidden panes", []string{"X"}, false, KindLogs),
		act(ActNextPage, "next page of panes", []string{"]"}, false, KindLogs),
		act(ActPrevPage, "previous page of panes", []string{"["}, false, KindLogs),
		act(ActWrap, "wrap on/off", []string{"w"}, false, KindLogs),
		act(ActTimestamps, "timestamps on/off", []string{"t"}, false, KindLogs),
		act(ActStreams, "streams: both/stdout/stderr", []string{"s"}, false, KindLogs),
		act(ActSearch, "search", []string{"/"}, true, KindLogs),
		act(ActNextMatch, "next match", []string{"n"}, false, KindLogs),
		act(ActPrevMatch, "previous match", []string{"N"}, false, KindLogs),
		act(ActRegex, "search: regex on/off", []string{"alt+r"}, false, KindLogs),
		act(ActCase, "search: case on/off", []string{"alt+c"}, false, KindLogs),
		act(ActOnlyMatches, "only matching lines", []string{"F"}, false, KindLogs),
		act(ActContext, "lines of context", []string{"c"}, false, KindLogs),
		act(ActSave, "save lines to a file", []string{"S", "ctrl+s"}, false, KindLogs),
		act(ActMark, "select lines", []string{"v", "V"}, false, KindLogs),
		act(ActCopy, "copy selection (OSC 52)", []string{"y"}, false, KindLogs),
		act(ActSummary, "summary on/off", []string{"i"}, false, KindLogs),
		// Confirmations.
		act(ActYes, "yes", []string{"y", "enter"}, true, KindConfirm),
		act(ActNo, "no", []string{"n", "esc"}, true, KindConfirm),
		// Moving in lists and scrolling.
		act(ActUp, "up", []string{"up", "k", "ctrl+p"}, false, scrolls...),
		act(ActDown, "down", []string{"down", "j", "ctrl+n"}, false, scrolls...),
		act(ActPageUp, "page up", []string{"pgup", "ctrl+b", "ctrl+u"}, false, scrolls...),
		act(ActPageDown, "page down", []string{"pgdown", "ctrl+f", "ctrl+d", "space"}, false, scrolls...),
		act(ActTop, "top", []string{"home", "g"}, false, scrolls...),
		act(ActBottom, "bottom", []string{"end", "G"}, false, scrolls...),
		// Everywhere.
		act(ActNew, "new", []string{"n"}, true, KindApps, KindDescribe, KindPreview, KindLaunch),
		act(ActHome, "app list", []string{"a"}, false, KindDescribe, KindLogs, KindPreview, KindLaunch),
		act(ActBack, "back", []string{"esc"}, true),
		act(ActHelp, "help", []string{"?", "f1"}, true),
		act(ActPalette, "command palette", []string{":"}, false),
		act(ActQuit, "quit", []string{"q", "ctrl+c"}, true),
	}
}

// Registry is the action table in use: DefaultActions with the user's key overrides.
type Registry struct {
	actions []Action
}

// NewRegistry returns the default action table.
func NewRegistry() *Registry { return &Registry{actions: DefaultActions()} }

// Rebind replaces the keys of every row named name (from the [keys] section of
// config.toml). An unknown name is an error that suggests the closest.
func (r *Registry) Rebind(name string, keys []string) error {
	found := false
	for i := range r.actions {
		if r.actions[i].Name == name {
			help := r.actions[i].Help()
			r.actions[i].Binding = key.NewBinding(key.WithKeys(keys...), key.WithHelp(keyLabel(keys), help))
			found = true
		}
	}
	if !found {
		return fmt.Errorf("unknown action %q%s", name, spec.DidYouMean(name, r.Names()))
	}
	if len(keys) == 0 {
		return fmt.Errorf("action %q: no keys", name)
	}
	return nil
}

// Names lists the action names, each once, in table order.
func (r *Registry) Names() []string {
	var names []string
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
func (r *Registry) Get(name string, kind Kind) (Action, bool) {
	for _, a := range r.actions {
		if a.Name == name && a.In(kind) {
			return a, true
		}
	}
	return Action{}, false
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

// editKeys are the keys a focused text field keeps for itself besides printable text.
var editKeys = map[string]bool{
	"backspace": true, "delete": true, "left": true, "right": true, "home": true, "end": true,
	"ctrl+a": true, "ctrl+e": true, "ctrl+u": true, "ctrl+w": true, "ctrl+k": true, "ctrl+h": true,
	"ctrl+d": true, "ctrl+b": true, "ctrl+f": true, "ctrl+v": true,
	"alt+backspace": true, "alt+b": true, "alt+f": true, "alt+d": true, "alt+left": true, "alt+right": true,
	"ctrl+left": true, "ctrl+right": true, "ctrl+backspace": true, "ctrl+delete": true,
}

// IsEditKey reports whether k is text or a line-editing key, which a focused text
// field takes before any action.
func IsEditKey(k tea.KeyPressMsg) bool {
	if k.Text != "" && k.Mod&^tea.ModShift == 0 {
		return true
	}
	return editKeys[k.Keystroke()]
}

// WhileTyping returns b with only the keys that still work while a text field has
// focus (not text or editing keys), for the help of typing views; false if none do.
func WhileTyping(b key.Binding) (key.Binding, bool) {
	var keys []string
	for _, k := range b.Keys() {
		if !isEditKeyName(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, false
	}
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(keyLabel(keys), b.Help().Desc)), true
}

// isEditKeyName reports whether a key name is text (one character, or "space") or an
// editing key.
func isEditKeyName(k string) bool {
	return k == "space" || len([]rune(k)) == 1 || editKeys[k]
}
