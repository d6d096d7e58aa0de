package wall

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/widget"
)

// saver is the save prompt: where to write the lines of the current view.
type saver struct {
	input widget.Input
	open  bool
}

func newSaver() saver {
	in := widget.NewInput("save to: ")
	in.CutMiddle = true // a long path keeps its start: it does not read as a relative one
	return saver{input: in}
}

// begin opens the prompt with path offered.
func (s *saver) begin(path string) {
	s.open = true
	s.input.SetValue(path)
	s.input.Focus()
}

// close closes the prompt.
func (s *saver) close() {
	s.open = false
	s.input.Blur()
}

// saveAction answers the save action, and esc while the prompt is open.
func (m *Model) saveAction(action common.ActionName) (tea.Cmd, bool) {
	switch {
	case action == ActSave:
		m.saving.begin(m.defaultSavePath())
	case action == common.ActBack && m.saving.open:
		m.saving.close()
	default:
		return nil, false
	}
	return nil, true
}

// selectAction answers the actions on a selection of lines: v starts one at the
// bottom line shown (or ends it), y copies it, esc ends it.
func (m *Model) selectAction(action common.ActionName) (tea.Cmd, bool) {
	s, _ := m.current()
	switch {
	case action == ActCopy:
		return m.copySelection(s), true
	case action == ActMark && !s.selecting:
		m.startSelection(s)
	case action == ActMark, action == common.ActBack && s.selecting:
		s.selecting = false
	default:
		return nil, false
	}
	return nil, true
}

// startSelection marks the bottom line shown in s, if any, as both ends of a
// selection; the view stops following so that the lines stay put.
func (m *Model) startSelection(s *scroller) {
	k := m.walkerOf(s)
	h, tw := m.geometry()
	lines, _, _ := k.window(h, tw)
	if len(lines) == 0 {
		return
	}
	s.follow = false
	s.selecting = true
	s.mark, s.cursor = lines[len(lines)-1], lines[len(lines)-1]
}

// saveTyped handles a key of the save prompt: enter saves.
func (m *Model) saveTyped(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok && k.Keystroke() == "enter" {
		m.saving.close()
		return m.save(m.saving.input.Value())
	}
	m.saving.input.Update(msg)
	return nil
}

// selection returns the lines between the mark and the cursor of s, oldest first.
func (m *Model) selection(s *scroller) []ref {
	k := m.walkerOf(s)
	a, b := s.mark, s.cursor
	if k.keyOf(b.p, b.seq).less(k.keyOf(a.p, a.seq)) {
		a, b = b, a
	}
	last := k.keyOf(b.p, b.seq)
	var out []ref
	from := k.anchorsAt(a)
	k.forward(from, func(r ref) bool {
		if last.less(k.keyOf(r.p, r.seq)) {
			return false
		}
		out = append(out, r)
		return true
	})
	return out
}

// lineText is line r of walker k as saved or copied: plain text, with the role/k
// prefix in the merged view.
func (m *Model) lineText(k *walker, r ref) string {
	p := m.panes[r.p]
	e := k.ring(r.p).at(r.seq)
	text := plainText(e.text)
	if e.divider() {
		text = m.dividerText(p, e)
	}
	if k.s == m.mview {
		return p.name() + " | " + text
	}
	return text
}

// copySelection sends the selected lines to the terminal's clipboard through OSC 52.
// Whether the terminal took them cannot be known (tmux drops them unless
// set-clipboard is on), so the notice says "sent", not "copied".
func (m *Model) copySelection(s *scroller) tea.Cmd {
	if !s.selecting {
		return common.Notify("select lines first (v, then ↑/↓), then y copies them")
	}
	refs := m.selection(s)
	k := m.walkerOf(s)
	var b strings.Builder
	for i, r := range refs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(m.lineText(k, r))
	}
	s.selecting = false
	return tea.Batch(tea.SetClipboard(b.String()), common.Notify(fmt.Sprintf("sent %s to the terminal's clipboard (OSC 52; in tmux: set -g set-clipboard on)", spec.Count(len(refs), "line"))))
}

// defaultSavePath names the file the save prompt offers: in the app's log directory
// when the scheduler says where that is, else in the current directory.
func (m *Model) defaultSavePath() string {
	what := "merged"
	if !m.merged {
		p := m.panes[m.focus]
		what = p.role + "-" + fmt.Sprint(p.k)
	}
	if m.find.onlyMatches() {
		what += "-matches"
	}
	name := m.h.AppID + "-" + what + ".log"
	if dir := m.appLogDir(); dir != "" {
		return filepath.Join(dir, name)
	}
	return name
}

// appLogDir is the app's log directory: the directory its replicas' log directories
// (<app log dir>/<role>/<k>) are in, when they all are in one; else "".
func (m *Model) appLogDir() string {
	dir := ""
	for _, p := range m.panes {
		d := p.st.LogDir
		if !p.known || d == "" {
			continue
		}
		d = filepath.Clean(d)
		if filepath.Base(d) == fmt.Sprint(p.k) && filepath.Base(filepath.Dir(d)) == p.role {
			d = filepath.Dir(filepath.Dir(d))
		}
		switch {
		case dir == "":
			dir = d
		case dir != d:
			return ""
		}
	}
	return dir
}

// save writes the lines of the current view (the focused pane or the merged view,
// filtered as shown) to path: a new file, readable by its owner only. It asks before
// overwriting a file and creates no directory (a mistyped path must not leave a tree
// behind).
func (m *Model) save(path string) tea.Cmd {
	path = strings.TrimSpace(path)
	if path == "" {
		return nil
	}
	s, srcs := m.current()
	k := m.walker(s, srcs)
	from := make([]int64, len(m.panes))
	for _, p := range srcs {
		from[p] = k.lo.at(p)
	}
	var b strings.Builder
	n := 0
	k.forward(from, func(r ref) bool {
		b.WriteString(m.lineText(k, r))
		b.WriteByte('\n')
		n++
		return true
	})
	data := []byte(b.String())
	done := common.NoticeMsg{Text: fmt.Sprintf("saved %s to %s", spec.Count(n, "line"), path)}
	return func() tea.Msg {
		err := writeNew(path, data, false)
		switch {
		case errors.Is(err, fs.ErrExist):
			return common.ConfirmMsg{Prompt: fmt.Sprintf("%s exists: overwrite it?", path), Yes: func() tea.Msg {
				if err := writeNew(path, data, true); err != nil {
					return saveError(path, err)
				}
				return done
			}}
		case err != nil:
			return saveError(path, err)
		}
		return done
	}
}

// writeNew writes data to path, a file it creates (mode 0600) unless overwrite is
// set; it follows no symlink at path.
func writeNew(path string, data []byte, overwrite bool) error {
	flags := os.O_WRONLY | os.O_CREATE | syscall.O_NOFOLLOW
	if overwrite {
		flags |= os.O_TRUNC
	} else {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, safefs.FileMode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// saveError says why a save failed; a missing directory is named as such.
func saveError(path string, err error) common.NoticeMsg {
	if errors.Is(err, fs.ErrNotExist) {
		return common.NoticeMsg{Text: fmt.Sprintf("save: no directory %s (create it first)", filepath.Dir(path)), Err: true}
	}
	return common.NoticeMsg{Text: "save: " + err.Error(), Err: true}
}
