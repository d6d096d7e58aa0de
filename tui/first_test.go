package tui_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/docker"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/common"
)

// TestConfirmFitsTheScreen: at 80x24 the confirm of a cancel was a box as wide as its
// question (a handle is 40 columns: 89 in all), cut at the screen's edge with "…",
// border and all: "Its replicas get SIGTERM, then SIGKILL" was never read. The question
// now folds inside a box that fits, and y still cancels.
func TestConfirmFitsTheScreen(t *testing.T) {
	e := newEnv(t)
	h := e.launch(shApp("serve", sleeper, 1))
	d := newDriver(t, e.opts, 80, 24)
	d.send(tick())
	d.waitScreen("1 running")
	d.keys("x")
	d.contains("Cancel ")
	box := confirmBox(t, plain(d.screen()), 80)
	want := "Cancel local_cwd://wick/serve-XXXXXXXXXXXX? Its replicas get SIGTERM, then SIGKILL." // plain masks ids
	if !strings.Contains(box, want) {
		t.Errorf("the box does not say %q whole:\n%s", want, box)
	}
	d.keys("y")
	if st := e.wait(h); st.State != spec.Cancelled {
		t.Errorf("%s: %s after y, want CANCELLED", h, st.State)
	}
}

// confirmBox is the text of the box drawn on screen, its lines joined by spaces, after
// checking that every line of the screen fits width and that the box is whole: a top
// and a bottom border, and each line between them closed on the right.
func confirmBox(t *testing.T, screen string, width int) string {
	t.Helper()
	var text []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("a line of %d columns on a screen of %d: %q", w, width, l)
		}
		s := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(s, "╭"):
			in = true
			if !strings.HasSuffix(s, "╮") {
				t.Errorf("the box's top border is cut: %q", s)
			}
		case strings.HasPrefix(s, "╰"):
			if !strings.HasSuffix(s, "╯") {
				t.Errorf("the box's bottom border is cut: %q", s)
			}
			return strings.Join(text, " ")
		case in:
			if !strings.HasPrefix(s, "│") || !strings.HasSuffix(s, "│") || strings.Contains(s, "…") {
				t.Errorf("a line of the box is cut: %q", s)
			}
			if s = strings.TrimSpace(strings.Trim(s, "│")); s != "" {
				text = append(text, s)
			}
		}
	}
	t.Fatalf("no box on the screen:\n%s", screen)
	return ""
}

// gatedLister holds the listings of one scheduler until the test opens the gate: a
// scheduler that has not answered yet, for as long as the test wants.
type gatedLister struct {
	common.Backend
	sched string
	gate  chan struct{}
}

func (g *gatedLister) List(ctx context.Context, scheduler string) ([]spec.AppStatus, []error) {
	if scheduler == g.sched || scheduler == "" {
		select {
		case <-g.gate:
		case <-ctx.Done():
		}
	}
	return g.Backend.List(ctx, scheduler)
}

// hungEngine is a Docker Engine that takes connections and never answers: its socket.
func hungEngine(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return sock
}

// TestSlowSchedulerHoldsBackNoRows: the app list was one listing of every scheduler,
// shown when the slowest answered: with a Docker Engine that does not answer, the UI
// said "listing apps…" for 10 s, and an app launched from a terminal took 32 s to show
// (tried in tmux). Each scheduler is now listed on its own: the local rows come and
// stay fresh while local_docker has not answered, and when the Engine's listing gives
// up it is one line under the rows, never a row.
func TestSlowSchedulerHoldsBackNoRows(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+hungEngine(t))
	reg := &sched.Registry{}
	local.Register(reg)
	reg.Register(docker.Name, docker.New)
	e := newEnvWith(t, envConfig{reg: reg})
	e.launch(shApp("before", sleeper, 1))
	g := &gatedLister{Backend: e.opts.Runner, sched: docker.Name, gate: make(chan struct{})}
	e.opts.Runner = g
	d := asyncDriver(t, e.opts, 120, 24)
	d.waitScreen("wick/before-") // the screen masks the ids' random part
	d.contains("1 running")
	d.lacks("listing apps")

	// Launched from a terminal while the Engine still has not answered: its row comes
	// with the next listing of local_cwd.
	after := e.launch(shApp("after", "true", 1))
	e.wait(after)
	d.waitUntil("the row of the app launched beside the UI", func(scr string) bool {
		return strings.Contains(scr, "wick/after-") && strings.Contains(scr, "SUCCEEDED")
	})

	close(g.gate) // the Engine is asked, and does not answer
	d.waitScreen("the Docker Engine did not answer")
	scr := plain(d.screen())
	for _, bad := range []string{"GET ", "/v1.", "context deadline exceeded"} {
		if strings.Contains(scr, bad) {
			t.Errorf("the screen shows the client's request (%q):\n%s", bad, scr)
		}
	}
	if n := strings.Count(scr, "did not answer"); n != 1 {
		t.Errorf("the Engine's silence is said %d times, want once:\n%s", n, scr)
	}
	d.contains("wick/before-", "wick/after-")
}

// asyncDriver is newDriver with every command run as Bubble Tea runs it, beside the
// others (a listing that blocks holds back no other message), the first ones too.
func asyncDriver(t *testing.T, opts tui.Options, w, h int) *driver {
	t.Helper()
	m, err := tui.NewModel(opts)
	if err != nil {
		t.Fatalf("NewModel: %v", err)
	}
	t.Cleanup(m.Close)
	d := &driver{t: t, m: m, pending: make(chan tea.Msg, 64), async: true}
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	d.run(m.Init())
	return d
}

// heldLister holds the listings of one scheduler while held, and counts the
// listings of the others that have come back.
type heldLister struct {
	common.Backend
	sched  string
	mu     sync.Mutex
	gate   chan struct{} // nil: not held
	others atomic.Int32
}

func (g *heldLister) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
}

func (g *heldLister) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = nil
}

func (g *heldLister) List(ctx context.Context, scheduler string) ([]spec.AppStatus, []error) {
	if scheduler != g.sched {
		defer g.others.Add(1)
		return g.Backend.List(ctx, scheduler)
	}
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	return g.Backend.List(ctx, scheduler)
}

// TestAlertOfAnAppListedLate: an app that failed while the UI looked elsewhere was not
// told when another scheduler's listing came between its start and the first listing
// of its own scheduler that held it (tried in tmux: no "FAILED" in 19 s, on the third
// try): the alerts took "created before the last listing taken" for "there before the
// UI looked". Now it is "created before the listing of its own scheduler before".
func TestAlertOfAnAppListedLate(t *testing.T) {
	e := newEnv(t)
	e.opts.SettingsPath = filepath.Join(t.TempDir(), "wick", "config.toml")
	writeFile(t, e.opts.SettingsPath, "[alerts]\nwhen = [\"ended\"]\n")
	g := &heldLister{Backend: e.opts.Runner, sched: "local_cwd"}
	e.opts.Runner = g
	d := asyncDriver(t, e.opts, 140, 24)
	d.waitScreen("No apps yet")
	d.keys("n") // elsewhere: the picker

	g.hold()
	h := e.launch(shApp("late", "exit 3", 1))
	e.wait(h)
	// local_dir's listings come, twice, each taken by the alerts; local_cwd's is held.
	t0 := time.Now()
	step := time.Duration(0)
	for range 2 {
		seen := g.others.Load()
		step += 6 * time.Second
		d.send(common.TickMsg{Time: t0.Add(step)})
		testkit.Wait(t, cmdTimeout, "local_dir's listing", func() (bool, string) {
			d.send(nothing{}) // delivers what came back
			return g.others.Load() > seen, ""
		})
		time.Sleep(100 * time.Millisecond) // its message is sent after the count
		d.send(nothing{})
	}
	g.release()
	testkit.Wait(t, cmdTimeout, "the alert of "+h, func() (bool, string) {
		step += 6 * time.Second
		d.send(common.TickMsg{Time: t0.Add(step)})
		scr := plain(d.screen())
		return strings.Contains(scr, "late-XXXXXXXXXXXX FAILED"), "\n" + scr
	})
}

// nothing is a message no model reads: sent, it delivers what async commands gave.
type nothing struct{}

// downLister is a Backend one of whose schedulers never answers.
type downLister struct {
	common.Backend
	sched string
}

func (d *downLister) List(ctx context.Context, scheduler string) ([]spec.AppStatus, []error) {
	if scheduler == d.sched {
		return nil, []error{errors.New(d.sched + ": cannot reach the Docker Engine")}
	}
	return d.Backend.List(ctx, scheduler)
}

// TestAlertsWithASchedulerDown: a scheduler that did not answer silenced every alert:
// a user without Docker (local_docker's error on every listing) heard of no app's end,
// ever (tried in tmux: DOCKER_HOST on no socket, a failed app, no "FAILED" in 16 s).
// The alerts now take every listing; the down scheduler's line stays under the rows.
func TestAlertsWithASchedulerDown(t *testing.T) {
	e := newEnv(t)
	e.opts.SettingsPath = filepath.Join(t.TempDir(), "wick", "config.toml")
	writeFile(t, e.opts.SettingsPath, "[alerts]\nwhen = [\"failed\"]\n")
	e.opts.Runner = &downLister{Backend: e.opts.Runner, sched: "local_dir"}
	d := newDriver(t, e.opts, 140, 24)
	t0 := time.Now()
	d.send(common.TickMsg{Time: t0})
	d.contains("local_dir: cannot reach the Docker Engine")
	h := e.launch(shApp("bad", "exit 3", 1))
	e.wait(h)
	d.keys("n") // elsewhere: the picker
	d.send(common.TickMsg{Time: t0.Add(6 * time.Second)})
	d.contains("bad-XXXXXXXXXXXX FAILED")
}
