package wall_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/wall"
)

// searchLines is the lines each of the 4 replicas of the search benchmark writes:
// with the default ring (100k lines) a fifth of them are on disk only.
const searchLines = 125_000

// syncDriver runs a wall without a Bubble Tea program: commands run in goroutines and
// their messages are handed to the wall from the benchmark's goroutine.
type syncDriver struct {
	w    *wall.Model
	msgs chan tea.Msg
}

func (d *syncDriver) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				d.exec(c)
			}
			return
		}
		if msg != nil {
			d.msgs <- msg
		}
	}()
}

func (d *syncDriver) update(msg tea.Msg) {
	if s, ok := msg.(common.StreamMsg); ok {
		d.exec(d.w.Update(s.Msg))
		d.exec(s.Next)
		return
	}
	d.exec(d.w.Update(msg))
}

// until delivers messages until done reports true, or fails after a minute.
func (d *syncDriver) until(b *testing.B, what string, done func() bool) {
	b.Helper()
	deadline := time.After(time.Minute)
	for !done() {
		select {
		case msg := <-d.msgs:
			d.update(msg)
		case <-deadline:
			b.Fatalf("%s: not within a minute", what)
		}
	}
}

// BenchmarkSearch4x125k searches a finished app of 4 replicas x 125k lines, 25k of
// each on disk only, for "step 1234" (111 matches a replica, 11 of them on disk
// only): the time to the first match shown and to the count of all, beside grep -c
// and a plain Go scan of the same lines in the replicas' stdout.log files.
func BenchmarkSearch4x125k(b *testing.B) {
	r := benchRunner(b)
	h := rankLinesApp(b, r, "search", searchLines, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cctx := benchContext(ctx, r)
	w := wall.New(cctx, h, wall.Options{})
	defer w.Close()
	d := &syncDriver{w: w, msgs: make(chan tea.Msg, 64)}
	d.exec(w.Init())
	d.until(b, "reading the logs", w.AllEnded)
	const query = "step 1234"
	const want = 4 * 111

	b.Run("wall-first-match", func(b *testing.B) {
		for b.Loop() {
			d.exec(w.Search(query))
			d.until(b, "first match", func() bool { n, _, _ := w.Matches(); return n > 0 })
		}
		d.until(b, "the last search", func() bool { _, r, disk := w.Matches(); return !r && !disk })
	})
	b.Run("wall-count-all", func(b *testing.B) {
		for b.Loop() {
			d.exec(w.Search(query))
			d.until(b, "all matches", func() bool { _, r, disk := w.Matches(); return !r && !disk })
		}
		if n, _, _ := w.Matches(); n != want {
			b.Fatalf("%d matches, want %d", n, want)
		}
	})
	files, _ := filepath.Glob(filepath.Join(r.StateDir(), "logs", "*", h.AppID, "trainer", "*", "stdout.log"))
	if len(files) != 4 {
		b.Fatalf("stdout.log files: %v", files)
	}
	b.Run("grep-c", func(b *testing.B) {
		for b.Loop() {
			out, _ := exec.Command("grep", append([]string{"-c", "-i", query}, files...)...).Output()
			n := 0
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				c, _ := strconv.Atoi(l[strings.LastIndexByte(l, ':')+1:])
				n += c
			}
			if n != want {
				b.Fatalf("grep counted %d, want %d", n, want)
			}
		}
	})
	b.Run("scan-files", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, f := range files {
				fh, err := os.Open(f)
				if err != nil {
					b.Fatal(err)
				}
				sc := bufio.NewScanner(fh)
				for sc.Scan() {
					if strings.Contains(strings.ToLower(sc.Text()), query) {
						n++
					}
				}
				fh.Close()
			}
			if n != want {
				b.Fatalf("scan counted %d, want %d", n, want)
			}
		}
	})
}
