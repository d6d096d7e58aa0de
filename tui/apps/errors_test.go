package apps

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/spec"
)

// TestErrorColumn: the list says why, as `wick list` does. A failed app's row ends with
// its root cause ("rank 3: RuntimeError: ...", the error file's message: ranks.Cause's
// JSON), a running app's with its hang alarm once the alarm reading found one, whose
// stopped rank comes first; at 80 columns both keep their start, every line fits,
// and the state and app ids stay; at 200 the handles are whole and the cause too. A
// list with no error has no ERROR column, and the alarm gone takes it away.
func TestErrorColumn(t *testing.T) {
	failed := app("local_cwd://wick/multinode-dl60vshqfvbp", spec.Failed, false)
	c := ranks.Cause{Role: "multinode", Replica: 1, Rank: 3, What: "RuntimeError: loss diverged on rank 3 at step 3"}
	failed.Msg, failed.StructuredError = c.String(), c.JSON()
	hung := app("local_cwd://wick/hang-x2k9wq7dz3vb", spec.Running, false)
	ok := app("local_cwd://wick/echo-p0q7lz4mcs1d", spec.Succeeded, false)
	list := []spec.AppStatus{failed, hung, ok}
	for _, w := range []int{80, 100, 200} {
		m := listOnly(t)
		m.Ctx.Width, m.Ctx.Height = w, 24
		m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: list})
		s := screen(m)
		if !strings.Contains(s, "ERROR") || !strings.Contains(rowOf(s, "dl60vshqfvbp"), "rank 3: Runtime") {
			t.Errorf("%d columns: no ERROR column with the failed app's cause:\n%s", w, s)
		}
		now := m.Ctx.Now()
		hg := &spec.Hang{Since: now.Add(-6*time.Minute - 10*time.Second), After: 5 * time.Minute, Ranks: []string{"rank 1"}, Step: 2, Ahead: 3}
		m.Update(alarmsMsg{ViewID: m.ID(), handle: hung.Handle, hang: hg})
		s = screen(m)
		for i, l := range strings.Split(s, "\n") {
			if n := ansi.StringWidth(l); n > w {
				t.Errorf("%d columns: line %d is %d wide: %q", w, i, n, l)
			}
		}
		row := rowOf(s, "x2k9wq7dz3vb")
		if !strings.Contains(row, "RUNNING") || !strings.Contains(row, "hang: rank 1 stop") {
			t.Errorf("%d columns: the hung app's row %q lacks its alarm:\n%s", w, row, s)
		}
		if row := rowOf(s, "dl60vshqfvbp"); !strings.Contains(row, "FAILED") || !strings.Contains(row, "rank 3: Runtime") {
			t.Errorf("%d columns: the failed app's row %q:\n%s", w, row, s)
		}
		if w == 200 {
			want := "hang: rank 1 stopped first, at step 2 · quiet 6m10s"
			if !strings.Contains(s, failed.Handle) || !strings.Contains(s, c.String()) || !strings.Contains(s, want) {
				t.Errorf("200 columns: the whole handles, cause and alarm (%q):\n%s", want, s)
			}
		}
		t.Log("\n" + s)
		m.Update(alarmsMsg{ViewID: m.ID(), handle: hung.Handle})
		if row := rowOf(screen(m), "x2k9wq7dz3vb"); strings.Contains(row, "hang:") {
			t.Errorf("%d columns: the alarm went, the row still says it: %q", w, row)
		}
	}
	m := listOnly(t)
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: []spec.AppStatus{hung, ok}})
	if s := screen(m); strings.Contains(s, "ERROR") {
		t.Errorf("no app has an error, yet an ERROR column:\n%s", s)
	}
}
