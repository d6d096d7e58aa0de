package wall

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// state is what the wall remembers of an app between two openings: the layout, the
// focus, the search and each view's follow and display settings. It is small JSON.
type state struct {
	Focus   string   `json:"focus,omitempty"`
	Zoom    bool     `json:"zoom,omitempty"`
	Merged  bool     `json:"merged,omitempty"`
	Hidden  []string `json:"hidden,omitempty"`
	Summary *bool    `json:"summary,omitempty"`
	// FailSeen: the wall focused the app's failure already; the focus is the user's.
	FailSeen bool                 `json:"fail_seen,omitempty"`
	Query    string               `json:"query,omitempty"`
	Regex    bool                 `json:"regex,omitempty"`
	Case     bool                 `json:"case,omitempty"`
	Only     bool                 `json:"only,omitempty"`
	Context  int                  `json:"context,omitempty"`
	Views    map[string]viewState `json:"views,omitempty"`
}

// viewState is one scroller's settings; Anchor is where a paused pane stood (its
// lines are numbered from the first line of the logs, so the number holds across
// openings).
type viewState struct {
	Follow  bool         `json:"follow"`
	Anchor  int64        `json:"anchor,omitempty"`
	Anchors []int64      `json:"anchors,omitempty"` // the merged view's, by pane
	Wrap    bool         `json:"wrap,omitempty"`
	Stamps  bool         `json:"stamps,omitempty"`
	Streams sched.Stream `json:"streams,omitempty"`
}

// maxStateFile bounds a layout file: a few hundred bytes per view (panes of 4096
// replicas at most).
const maxStateFile = 4 << 20

// mergedKey names the merged view in state.Views.
const mergedKey = "*merged"

// statePath is the state file of app h, or "" without a state dir. The handle's
// parts are validated names; anything else is refused rather than joined into a path.
func statePath(dir string, h spec.Handle) string {
	if dir == "" {
		return ""
	}
	name := h.Scheduler + "_" + h.Session + "_" + h.AppID
	if strings.ContainsAny(name, `/\`) || strings.Contains(name, "..") {
		return ""
	}
	return filepath.Join(dir, "wall", name+".json")
}

// Forget removes the saved layout of app h (after the app is deleted): nothing of a
// deleted app stays behind. A layout that was never saved is not an error.
func Forget(dir string, h spec.Handle) error {
	path := statePath(dir, h)
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the wall layout of %s: %w", h, err)
	}
	return nil
}

// loadState reads the state of app h; nil when there is none or it is unreadable
// (a bad state file is not worth an error: the wall opens with the defaults).
func loadState(dir string, h spec.Handle) *state {
	path := statePath(dir, h)
	if path == "" {
		return nil
	}
	// wick's own file, but under a directory a replica could write into: a regular
	// file only (a FIFO must not hang the UI, /dev/zero fill its memory), not a link.
	data, err := safefs.ReadFile(path, maxStateFile)
	if err != nil {
		return nil
	}
	var s state
	if json.Unmarshal(data, &s) != nil {
		return nil
	}
	return &s
}

// saveState writes s atomically (a temp file renamed over the old one); errors are
// ignored, the state being a convenience.
func saveState(dir string, h spec.Handle, s *state) {
	path := statePath(dir, h)
	if path == "" {
		return
	}
	data, err := json.Marshal(s)
	if err != nil {
		return
	}
	if safefs.MkdirAll(filepath.Dir(path)) != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".wall-*")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), path) != nil {
		_ = os.Remove(f.Name())
	}
}

func saveView(s *scroller, p int) viewState {
	v := viewState{Follow: s.follow, Wrap: s.wrap, Stamps: s.stamps, Streams: s.streams}
	switch {
	case s.follow:
	case p >= 0:
		v.Anchor = s.anchor[p]
	default:
		v.Anchors = append([]int64(nil), s.anchor...)
	}
	return v
}

func loadView(s *scroller, v viewState, p int) {
	s.follow, s.wrap, s.stamps = v.Follow, v.Wrap, v.Stamps
	if v.Streams != "" {
		s.streams = v.Streams
	}
	switch {
	case s.follow:
	case p >= 0:
		s.anchor[p] = v.Anchor
	case len(v.Anchors) == len(s.anchor):
		copy(s.anchor, v.Anchors)
	default:
		s.follow = true
	}
}

// state captures the wall's state.
func (m *Model) state() *state {
	sum := m.summary
	s := &state{
		Focus: m.panes[m.focus].name(), Zoom: m.zoom, Merged: m.merged, Summary: &sum, FailSeen: m.failSeen,
		Query: m.find.query, Regex: m.find.regex, Case: m.find.caseSens, Only: m.find.only, Context: m.find.ctxStep,
		Views: map[string]viewState{mergedKey: saveView(m.mview, -1)},
	}
	for i, p := range m.panes {
		if p.hidden {
			s.Hidden = append(s.Hidden, p.name())
		}
		s.Views[p.name()] = saveView(p.view, i)
	}
	return s
}

// restore applies a saved state to freshly laid out panes.
func (m *Model) restore(s *state) {
	m.zoom, m.merged = s.Zoom, s.Merged
	f := &m.find
	f.query, f.regex, f.caseSens, f.only = s.Query, s.Regex, s.Case, s.Only
	if s.Context >= 0 && s.Context < len(contextSteps) {
		f.ctxStep = s.Context
	}
	m.failSeen = s.FailSeen
	if s.Summary != nil {
		// The wall saw the app end before: its focus is the user's now.
		m.summary, m.sumSeen = *s.Summary, true
	}
	for i, p := range m.panes {
		if p.name() == s.Focus {
			m.focus = i
		}
		for _, h := range s.Hidden {
			if h == p.name() {
				p.hidden = true
			}
		}
		if v, ok := s.Views[p.name()]; ok {
			loadView(p.view, v, i)
			if !p.view.follow {
				// Lines before it may be on disk only by the time they come: fill
				// reads them back.
				p.want = p.view.anchor[i]
			}
		}
	}
	if v, ok := s.Views[mergedKey]; ok {
		loadView(m.mview, v, -1)
	}
	if len(m.visible()) == 0 {
		for _, p := range m.panes {
			p.hidden = false
		}
	}
	if m.panes[m.focus].hidden {
		// The saved focus may name no pane of this layout, which leaves it on a
		// hidden one: the focus is always on a pane shown, so no frame moves it.
		m.moveFocus(1)
	}
}
