package wall_test

import (
	"context"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui"
)

// mergedLines is how many lines replica K of the merged read-back test writes: (K+1)
// times this. With rings of 4096 lines, replica 0's are all held, replica 3's mostly
// on disk only.
const mergedLines = 6000

// TestWallMergedReadsBack: with most lines on disk only, the merged view reaches them
// all. g shows line 1 of the app; paging down from there runs through every line of
// every pane, in time order, up to the last, without a gap or a duplicate; paging
// (and the wheel, and k) up from the end runs back to line 1 the same way, and down
// again. A match on disk only shows among its time's lines. The header counts the
// lines on disk as a pane's title does.
func TestWallMergedReadsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Each replica writes numbered lines, and a stderr line every 1000: the streams
	// interleave, the replicas run side by side, some longer than others.
	h := e.run(shApp("deep", 4, `n=$(( (K+1) * `+itoa(mergedLines)+` )); i=1; while [ $i -le $n ]; do echo "w$K n $i"; if [ $((i % 1000)) -eq 0 ]; then echo "w$K e $i" >&2; fi; i=$((i+1)); done`))
	e.wait(h)
	want := mergedOnDisk(t, e, h, 4)
	if total := 10 * (mergedLines + mergedLines/1000); len(want) != total {
		t.Fatalf("the logs hold %d lines, not %d", len(want), total)
	}

	d := e.open(h, 200, 120, func(o *tui.Options) { o.RingLines = 4096 })
	d.waitFor("end of logs", "w3 n "+itoa(4*mergedLines))
	d.keys("i", "m")
	if head := mergedHead(t, d); !regexp.MustCompile(`\d+(\.\d)?k older lines on disk`).MatchString(head) {
		t.Fatalf("the merged header does not count the lines on disk: %q", head)
	}

	// g: line 1 of the app, read back from disk; then down to the end.
	d.update(key("g"))
	d.drain()
	seen := mergedRows(t, d)
	if len(seen) == 0 || seen[0] != want[0] {
		t.Fatalf("g shows %q first, want %q:\n%s", first(seen), want[0], d.screen())
	}
	if head := mergedHead(t, d); strings.Contains(head, "older lines on disk") {
		t.Fatalf("at line 1, the header still counts lines on disk: %q", head)
	}
	if seen = d.page(seen, len(want), false, key("pgdown")); !slices.Equal(seen, want) {
		t.Fatalf("paging down showed the lines out of order:\n%s", firstDiff(seen, want))
	}

	// G follows the end again (the windows read back go); up from there to line 1,
	// by pages, the wheel and lines.
	d.keys("G")
	if head := mergedHead(t, d); !strings.Contains(head, "older lines on disk") {
		t.Fatalf("following, the header does not count the lines on disk: %q", head)
	}
	wheel := tea.MouseWheelMsg{X: 100, Y: 60, Button: tea.MouseWheelUp}
	seen = d.page(reversed(mergedRows(t, d)), len(want), true, key("pgup"), key("pgup"), key("pgup"), wheel, key("k"), key("pgup"))
	if seen = reversed(seen); !slices.Equal(seen, want) {
		t.Fatalf("paging up showed the lines out of order:\n%s", firstDiff(seen, want))
	}
	if head := mergedHead(t, d); strings.Contains(head, "older lines on disk") {
		t.Fatalf("at line 1, the header still counts lines on disk: %q", head)
	}
	// Down again: the lines read back in front of the rings leave them no room now,
	// the windows run on into the rings' lines.
	if seen = d.page(mergedRows(t, d), len(want), false, key("pgdown")); !slices.Equal(seen, want) {
		t.Fatalf("paging down again showed the lines out of order:\n%s", firstDiff(seen, want))
	}

	// A match far back on disk: the merged view shows it among the lines of its time.
	d.keys("G", "/")
	d.typ("w2 n 3000")
	d.keys("enter")
	// The jump reads the match's time back from disk: wait for its row (drain alone
	// may look before the read has begun, and a loaded machine starts it late).
	d.waitForRe(regexp.MustCompile(`(?m)^[ ▌]worker/2 +w2 n 3000$`))
	d.drain()
	rows := mergedRows(t, d)
	at := slices.Index(want, rows[0])
	if !slices.Contains(rows, "worker/2 w2 n 3000") || at < 0 || !slices.Equal(rows, want[at:min(len(want), at+len(rows))]) {
		t.Fatalf("the match is not shown among the lines of its time:\n%s", d.screen())
	}
}

// TestWallMergedReadsBackInItsShare: with a budget of lines that leaves the merged
// view's windows 2,048 lines a pane and reads of 1,024 (where 50k and 2,000 are the
// most), g still shows line 1 and paging down runs through every line in time order.
func TestWallMergedReadsBackInItsShare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.run(shApp("share", 4, `n=$(( (K+1) * 3000 )); i=1; while [ $i -le $n ]; do echo "w$K n $i"; i=$((i+1)); done`))
	e.wait(h)
	want := mergedOnDisk(t, e, h, 4)
	d := e.open(h, 200, 120, func(o *tui.Options) { o.RingLines, o.HeldLines = 4096, 4*4096 })
	d.waitFor("end of logs", "w3 n 12000")
	d.keys("i", "m", "g")
	d.drain()
	seen := mergedRows(t, d)
	if len(seen) == 0 || seen[0] != want[0] {
		t.Fatalf("g shows %q first, want %q:\n%s", first(seen), want[0], d.screen())
	}
	if seen = d.page(seen, len(want), false, key("pgdown")); !slices.Equal(seen, want) {
		t.Fatalf("paging down showed the lines out of order:\n%s", firstDiff(seen, want))
	}
}

// page sends keys (in turn) until seen, the lines shown so far in the order of the
// move (up: bottom first), holds n lines; it fails when the view stops moving.
func (d *driver) page(seen []string, n int, up bool, keys ...tea.Msg) []string {
	d.t.Helper()
	for i, stalled := 0, 0; len(seen) < n; i++ {
		before := len(seen)
		d.update(keys[i%len(keys)])
		d.drain()
		rows := mergedRows(d.t, d)
		if up {
			rows = reversed(rows)
		}
		seen = appendScreen(d.t, seen, rows, d)
		if stalled++; len(seen) > before {
			stalled = 0
		}
		if stalled > 3 {
			d.t.Fatalf("the view stopped at %d lines of %d:\n%s", len(seen), n, d.screen())
		}
	}
	return seen
}

// mergedOnDisk is the lines of the n replicas of h in time order, as `wick log`
// merges them, each as the merged view shows it: "worker/K text".
func mergedOnDisk(t *testing.T, e *env, h spec.Handle, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	var its []sched.LogIterator
	for k := range n {
		it, err := e.r.LogLines(ctx, h, "worker", k, sched.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	merged := logs.Merge(its...)
	defer merged.Close()
	var out []string
	for {
		l, err := merged.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "worker/"+itoa(l.Replica)+" "+l.Text)
	}
}

// drain delivers messages until no read of the logs is under way or on its way to
// the wall (the merged header says "reading the logs…" meanwhile), within a minute.
func (d *driver) drain() {
	d.t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case msg := <-d.msgs:
			d.update(msg)
			continue
		default:
		}
		if !strings.Contains(d.screen(), "reading the logs") {
			return
		}
		select {
		case msg := <-d.msgs:
			d.update(msg)
		case <-deadline:
			d.t.Fatalf("the merged view never stopped reading:\n%s", d.screen())
		}
	}
}

// mergedHead is the merged view's header line.
func mergedHead(t *testing.T, d *driver) string {
	t.Helper()
	for _, l := range strings.Split(d.screen(), "\n") {
		if strings.HasPrefix(l, "  merged ") {
			return l
		}
	}
	t.Fatalf("no merged view:\n%s", d.screen())
	return ""
}

// mergedRow is a line of the merged view: the gutter, the pane, the text.
var mergedRow = regexp.MustCompile(`^[ ▌](worker/\d) +(w\d [ne] \d+)$`)

// mergedRows is the lines the merged view shows, top to bottom, as "worker/K text".
func mergedRows(t *testing.T, d *driver) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(d.screen(), "\n") {
		if m := mergedRow.FindStringSubmatch(l); m != nil {
			if m[1][len(m[1])-1] != m[2][1] {
				t.Fatalf("a line of %s in %s's place: %q", m[2][:2], m[1], l)
			}
			out = append(out, m[1]+" "+m[2])
		}
	}
	return out
}

// appendScreen adds the rows of a screen moved on from the last (rows in the order
// of the move) to seen: the rows must go on from a line seen last, not skip any.
func appendScreen(t *testing.T, seen, rows []string, d *driver) []string {
	t.Helper()
	if len(rows) == 0 {
		t.Fatalf("no lines:\n%s", d.screen())
	}
	// The screen's first row is among the last screenful seen (a move shows a line of
	// the screen before): the rows after it are new.
	from := max(0, len(seen)-len(rows)-1)
	at := slices.Index(seen[from:], rows[0])
	if at < 0 {
		t.Fatalf("the screen skipped lines: after %q comes\n%s", seen[len(seen)-1], d.screen())
	}
	at += from
	for i, r := range rows {
		switch {
		case at+i < len(seen) && seen[at+i] != r:
			t.Fatalf("the screen moved back and forth: %q where %q was:\n%s", r, seen[at+i], d.screen())
		case at+i >= len(seen):
			seen = append(seen, r)
		}
	}
	return seen
}

// itoa is strconv.Itoa, short.
func itoa(i int) string { return strconv.Itoa(i) }

func reversed(s []string) []string {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// firstDiff says where got and want part.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			lo := max(0, i-3)
			return "at line " + itoa(i+1) + ": got\n  " + strings.Join(got[lo:min(len(got), i+4)], "\n  ") + "\nwant\n  " + strings.Join(want[lo:min(len(want), i+4)], "\n  ")
		}
	}
	return "got " + itoa(len(got)) + " lines, want " + itoa(len(want))
}
