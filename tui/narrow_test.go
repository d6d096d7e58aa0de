package tui_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
)

// startSleepSweep runs `wick run --sweep` of three apps that sleep, one at a time, on
// local_cwd, and returns its id; the sweep is cancelled and its queue waited for
// when the test ends.
func startSleepSweep(t *testing.T, e *env) string {
	t.Helper()
	home := filepath.Join(e.root, "home")
	run := exec.Command(wickBinary(t), "run", "--detach", "--sweep", "lr=0.1,0.01,0.001", "--max-parallel", "1",
		"utils.sh", "--", "sh", "-c", "sleep 60", "sh")
	run.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("wick run --sweep: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`sweep-[0-9a-z]{8}`).FindString(string(out))
	if id == "" {
		t.Fatalf("no sweep id in:\n%s", out)
	}
	t.Cleanup(func() {
		cancel := exec.Command(wickBinary(t), "cancel", id)
		cancel.Env = run.Env
		if out, err := cancel.CombinedOutput(); err != nil {
			t.Errorf("wick cancel %s: %v\n%s", id, err, out)
		}
		store := sweep.NewStore(os.Getenv("WICK_HOME"))
		testkit.Wait(t, 20*time.Second, "the sweep's queue gone", func() (bool, string) {
			sw, err := store.Load(id)
			return err != nil || !sw.QueueRunning(), fmt.Sprint(err)
		})
	})
	return id
}

// lineWith is the line of screen that holds s, without its gutter, or "".
func lineWith(screen, s string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimPrefix(strings.TrimPrefix(l, "▸ "), "  ")
		}
	}
	return ""
}

// TestAppListAt80And100Columns: at 80 columns the list cut the handle at its start
// (the scheduler went: "…demo-train-c0qf…"), NAME to "demo-tr…" and a sweep's row
// to "sweep o…", its counts lost. At 80x24 and at 100x30 each app's row shows its
// scheduler (a tag the summary line explains) and its whole app id, a sweep's row
// its counts whole, unfolded its apps with their values; describe shows the whole
// handle, and the title bar over its logs the keys of help. At 100 columns the
// CPU/RSS of the running app stays.
func TestAppListAt80And100Columns(t *testing.T) {
	e := newEnv(t)
	sw := startSleepSweep(t, e)
	train := e.launch(shApp("demo-train", "sleep 60", 1))
	done := e.launch(shApp("eighteen-char-name", "true", 1))
	e.wait(done)
	trainID, doneID := e.handle(train).AppID, e.handle(done).AppID
	for _, size := range [][2]int{{80, 24}, {100, 30}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			d := newDriver(t, e.opts, w, h)
			counts := "sweep of 3: 1 running, 2 queued"
			want := []string{"+ " + sw, counts, trainID, doneID} // + : a folded sweep
			if w >= 100 {
				want = append(want, "CPU/RSS") // the running apps' usage, read after a listing
			}
			var scr string
			testkit.Wait(t, 20*time.Second, "the list with the sweep running", func() (bool, string) {
				d.send(tick())
				scr = d.raw()
				for _, s := range want {
					if !strings.Contains(scr, s) {
						return false, scr
					}
				}
				return true, scr
			})
			t.Logf("the list:\n%s", scr)
			for i, l := range strings.Split(scr, "\n") {
				if n := ansi.StringWidth(l); n > w {
					t.Errorf("line %d is %d columns wide, over %d: %q", i, n, w, l)
				}
			}
			if !strings.Contains(scr, "cwd=local_cwd") {
				t.Errorf("no legend of the scheduler tag cwd:\n%s", scr)
			}
			for _, id := range []string{trainID, doneID} {
				if l := lineWith(scr, id); !strings.HasPrefix(l, "cwd ") {
					t.Errorf("the row of %s does not start with its scheduler: %q\n%s", id, l, scr)
				}
			}
			if l := lineWith(scr, sw); !strings.Contains(l, counts) {
				t.Errorf("the sweep's row lost its counts: %q", l)
			}

			// The sweep's row unfolds: its apps under it, each with its scheduler and
			// its value of lr.
			selectRow(t, d, sw)
			d.keys("z")
			scr = d.raw()
			t.Logf("unfolded:\n%s", scr)
			for _, v := range []string{"lr0.1-", "lr0.01-", "lr0.001-"} {
				if l := lineWith(scr, "sh-"+v); !strings.HasPrefix(l, "cwd ") {
					t.Errorf("unfolded, the app of %s: %q, want its scheduler and app id\n%s", v, l, scr)
				}
			}
			d.keys("z")

			// Describe shows the whole handle.
			selectRow(t, d, trainID)
			d.keys("enter")
			d.contains(train)
			d.keys("esc")
			// The logs of the ended app (a running one's are followed, a stream this
			// driver does not run): the title bar keeps the view the user is in and
			// the keys of help, the crumbs between giving way.
			selectRow(t, d, doneID)
			d.keys("enter")
			d.contains(done)
			d.keys("l")
			title := strings.SplitN(d.raw(), "\n", 2)[0]
			if !strings.Contains(title, "logs "+doneID) || !strings.Contains(title, "? help") {
				t.Errorf("the title bar of the app's logs: %q", title)
			}
			d.keys("esc", "esc")
		})
	}
}

// selectRow moves the app list's cursor to the row that shows s.
func selectRow(t *testing.T, d *driver, s string) {
	t.Helper()
	d.keys("g")
	for range 20 {
		for _, l := range strings.Split(d.raw(), "\n") {
			if strings.HasPrefix(l, "▸ ") && strings.Contains(l, s) {
				return
			}
		}
		d.keys("down")
	}
	t.Fatalf("no row of %s to select:\n%s", s, d.raw())
}

// TestFormAt80Columns: at 80 columns the form's hint lost its end, the legend of the
// "*" that marks a required field, and the image field showed "io/pytorch/…". A
// shorter hint says it all; the inputs take the room the type column left.
func TestFormAt80Columns(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 80, 24)
	openForm(d, "utils.echo")
	d.contains("enter: dry run", "* required", "│ghcr.io/pytorch/torchx:0.8.0dev0 ")
	d.keys("enter")
	d.contains("=== SCHEDULER REQUEST (local_cwd) ===")
}
