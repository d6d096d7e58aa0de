package tui_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wick-dev/wick/engine/runner"
)

// TestLaunchWithFilterLandsOnNewApp: with a filter active in the app list, a launch
// left the new app hidden and the cursor on an old one, so `l` opened the wrong logs.
// The filter now goes, the new app is selected and `l` opens its logs.
func TestLaunchWithFilterLandsOnNewApp(t *testing.T) {
	e := newEnv(t)
	e.launch(shApp("older", "echo older-app", 1))
	d := newDriver(t, e.opts, 120, 32)
	d.send(tick())
	d.contains("wick/older-")
	d.keys("/")
	d.typ("older")
	d.keys("enter")
	d.contains("filter: older", "▸ local_cwd://wick/older-")

	d.keys("n")
	d.typ("echo")
	d.keys("enter") // the form
	d.keys("ctrl+u")
	d.typ("from the new app")
	d.keys("enter") // the preview
	d.keys("enter") // launch
	d.contains("▸ local_cwd://wick/echo-", "filter cleared to show the new app")
	d.lacks("filter: older")
	h := selectedHandle(t, d)
	if !strings.Contains(h, "/echo-") {
		t.Fatalf("selected %s, want the new echo app", h)
	}
	e.wait(h)
	d.keys("l")
	d.contains("from the new app")
	d.lacks("older-app")
}

// TestLaunchTimerStopsOnFailure: the launch view's timer kept counting after a launch
// had failed. It shows the time the launch took, however long the user looks at it.
func TestLaunchTimerStopsOnFailure(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 160, 30)
	openForm(d, "utils.echo")
	d.focus("log_dir", "tab")
	logDir := filepath.Join(e.root, "logs")
	d.keys("ctrl+u")
	d.typ(logDir)
	d.keys("enter")
	d.contains("=== SCHEDULER REQUEST (local_cwd) ===")
	writeFile(t, logDir, "not a directory\n") // the launch fails
	d.keys("enter")
	d.contains("launch failed")
	before := launchHeader(t, d.raw())
	e.clock.mu.Lock()
	e.clock.t = e.clock.t.Add(5 * time.Minute)
	e.clock.mu.Unlock()
	d.send(tick())
	if after := launchHeader(t, d.raw()); after != before {
		t.Errorf("the failed launch's timer went on: %q, then %q", before, after)
	}
}

func launchHeader(t *testing.T, screen string) string {
	t.Helper()
	for _, l := range strings.Split(plain(screen), "\n") {
		if strings.Contains(l, "Launching echo on local_cwd") {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("no launch header in\n%s", screen)
	return ""
}

// TestDeleteForgetsWallLayout: deleting an app left its saved wall layout behind, in
// the UI and with wick delete. Now nothing of a deleted app stays.
func TestDeleteForgetsWallLayout(t *testing.T) {
	e := newEnv(t)
	h := e.launch(echoApp("echo", "kept", 2))
	e.wait(h)
	layout := saveWallLayout(t, e, h)

	d := newDriver(t, e.opts, 120, 24)
	d.send(tick())
	d.selected(h)
	d.keys("D")
	d.contains("Delete " + h + "?")
	d.keys("y")
	d.contains("deleted " + h)
	if _, err := os.Stat(layout); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted app's wall layout is still there: %v", err)
	}
}

// TestAppListAt80ColumnsKeepsAppIDs: at 80 columns the list cut the app id (the only
// part that tells apps apart) while NAME kept 18 columns. NAME gives way first, and
// the handle loses its start, never its id.
func TestAppListAt80ColumnsKeepsAppIDs(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for _, name := range []string{"demo-train", "eighteen-char-name"} {
		h := e.launch(shApp(name, "true", 1))
		e.wait(h)
		ids = append(ids, h[strings.LastIndex(h, "-")+1:]) // the random part
	}
	d := newDriver(t, e.opts, 80, 24)
	d.send(tick())
	d.contains(ids[0], ids[1], "SUCCEEDED")
}

// TestHelpOverlayScrollsAndKeepsDescriptions: at 80x24 the help overlay cut its
// descriptions at half width and could not show its last rows. It scrolls now, its
// descriptions wrap rather than lose their ends ("…sort by … du…"), and the title bar
// names only keys that work where the user is typing.
func TestHelpOverlayScrollsAndKeepsDescriptions(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 80, 24)
	d.keys("?")
	// Descriptions wider than their column wrap: their ends are there.
	d.contains("This view (apps)", "mark / unmark", "unmarks)", "scroll (1-")
	d.lacks("command palette") // below the fold
	d.keys("pgdown")
	d.contains("sort by next column", "duration, cpu, rss)")
	d.keys("G")
	d.contains("command palette")
	if m := regexp.MustCompile(`scroll \(\d+-(\d+) of (\d+)\)`).FindStringSubmatch(d.screen()); m == nil || m[1] != m[2] {
		t.Errorf("G does not show the last rows of the help: %v\n%s", m, d.screen())
	}
	d.lacks("This view (apps)")
	d.keys("q") // not a moving key: closes
	d.lacks("command palette")

	// The palette does not say a name twice.
	d.keys(":")
	d.typ("refresh")
	if scr := d.screen(); strings.Count(scr, "refresh") != 2 { // the query and the name
		t.Errorf("palette repeats the name:\n%s", scr)
	}
	d.keys("esc")

	// In the form, ? and : type into the field: the title bar does not offer them.
	openForm(d, "utils.echo")
	d.contains("f1 help")
	d.lacks("? help", ": commands")
}

// TestFormKeepsItsColumnsAcrossSchedulers: the form's label column changed width when
// switching scheduler, shifting every field.
func TestFormKeepsItsColumnsAcrossSchedulers(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // slurm's run options, no Slurm needed
	e := newEnvWith(t, envConfig{reg: runner.Builtin()})
	d := newDriver(t, e.opts, 160, 40)
	openForm(d, "utils.echo")
	col := func() int {
		for _, l := range strings.Split(d.screen(), "\n") {
			if strings.Contains(l, " msg ") {
				return utf8.RuneCountInString(l[:strings.Index(l, "│")])
			}
		}
		t.Fatalf("no msg field:\n%s", d.screen())
		return 0
	}
	before := col()
	d.focus("scheduler", "tab")
	d.keys("right", "right", "right") // slurm: other run options
	d.contains("Run options · slurm")
	if after := col(); after != before {
		t.Errorf("the msg field moved from column %d to %d", before, after)
	}
}
