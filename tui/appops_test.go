package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui"
)

// TestRelaunchAsksAndEditsOpenTheFilledForm: `r` relaunched at once; it asks now. `e`
// opens the form of the component the app was launched from, filled with the
// arguments `wick run` was given; an app launched from an AppDef says its arguments
// are not known.
func TestRelaunchAsksAndEditsOpenTheFilledForm(t *testing.T) {
	e := newEnv(t)
	appdef := e.launch(echoApp("plain", "from an appdef", 1))
	e.wait(appdef)
	ctx := context.Background()
	info, err := e.r.DryRunComponent(ctx, "utils.echo", []string{"--msg", "from the cli", "--num_replicas=2"}, local.NameCwd, nil, "", components.Lookup{})
	if err != nil {
		t.Fatal(err)
	}
	hd, err := e.r.Schedule(ctx, info, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := hd.String()
	e.wait(h)

	d := newDriver(t, e.opts, 120, 32)
	d.send(tick())
	d.selected(h)
	d.contains("2 apps")
	d.keys("r")
	d.contains("Relaunch " + h + " as is?")
	d.keys("n")
	d.contains("nothing done", "2 apps")

	d.keys("e")
	d.contains("utils.echo", "│from the cli", "num_replicas")
	d.keys("ctrl+u")
	d.typ("edited")
	d.keys("enter")
	d.contains(`args:         [edited]`, "num_replicas: 2")
	d.keys("enter")
	d.contains("launched local_cwd://wick/echo-", "3 apps")
	nh := selectedHandle(t, d)
	if nh == h {
		t.Fatalf("the relaunch is not selected: %s", nh)
	}
	e.wait(nh)

	// The wall has the same keys: r asks, R (or e) opens the filled form.
	d.keys("l")
	d.waitScreen("end of logs")
	d.keys("r")
	d.contains("Relaunch " + nh + " as is?")
	d.keys("n")
	d.keys("R")
	d.contains("utils.echo", "│edited", "num_replicas")
	d.keys("esc", "esc")
	d.contains("3 apps")

	d.keys("G") // the oldest: the AppDef
	d.selected(appdef)
	d.keys("e")
	d.contains("its component and arguments are not known")
	d.lacks("Arguments")
}

// TestBulkMarkCancelDeleteAndDeleteFinished: space marks apps (the row and the summary
// say so); x and D act on every marked app after one confirmation that says how many
// and which are skipped; P deletes every finished app shown, saying how many.
func TestBulkMarkCancelDeleteAndDeleteFinished(t *testing.T) {
	e := newEnv(t)
	s := seed(e) // newest first: serve RUNNING, sh FAILED, train RUNNING, echo, eval
	d := newDriver(t, e.opts, 120, 24)
	d.selected(s.serve)
	d.keys("space", "space")
	d.contains("2 marked", "● serve", "● sh")
	d.selected(s.train)
	d.lacks("● train")
	d.keys("esc")
	d.contains("unmarked every app")
	d.lacks("2 marked", "● ")
	d.keys("up", "up", "space", "space")
	d.contains("2 marked")
	d.keys("D")
	d.contains("Delete 1 marked app? (1 still running: skipped)")
	d.keys("n")
	d.contains("nothing done", "2 marked")
	d.keys("x")
	d.contains("Cancel 1 marked app? (1 already ended: skipped)")
	d.keys("y")
	d.contains("cancelled 1 app")
	d.lacks("marked", "● ")
	if st := e.wait(s.serve); st.State != spec.Cancelled {
		t.Fatalf("%s is %s after the bulk cancel", s.serve, st.State)
	}
	d.send(tick())
	d.contains("1 running") // train
	d.keys("P")
	d.contains("Delete 4 finished apps? Their state and logs are removed.")
	d.keys("y")
	d.contains("deleted 4 apps")
	d.send(tick())
	d.contains("1 app ", s.train)
	d.lacks(s.serve, s.sh, s.echo, s.eval)
}

// TestAppListSortAndFilterRestored: the app list reopens with the sort and filter it
// was left with, kept under the Runner's state directory (ui/apps.json, 0600) as the
// wall's layout is.
func TestAppListSortAndFilterRestored(t *testing.T) {
	e := newEnv(t)
	seed(e)
	d := newDriver(t, e.opts, 120, 24)
	d.keys("o", "O") // by name, reversed
	d.keys("/")
	d.typ("fail")
	d.keys("enter")
	d.contains("1 shown", "sorted by name ↑")
	d.m.Close()

	path := filepath.Join(e.r.StateDir(), "ui", "apps.json")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the app list's state: %v %v", fi, err)
	}
	d = newDriver(t, e.opts, 120, 24)
	d.send(tick())
	d.contains("1 shown", "sorted by name ↑", "filter: fail", "wick/sh-")
	d.lacks("wick/train-")
	d.keys("esc") // clears the filter: the next run shows every app
	d.contains("5 apps")
	d.m.Close()
	d = newDriver(t, e.opts, 120, 24)
	d.send(tick())
	d.contains("wick/train-", "sorted by name ↑")
	d.lacks("shown")
}

// TestThemeFromThePaletteIsSaved: the theme action (ctrl+t, or `theme` in the palette)
// cycles the builtins then the user themes of ~/.config/wick/themes, and saves the
// choice in config.toml, keeping the file's other settings.
func TestThemeFromThePaletteIsSaved(t *testing.T) {
	e := newEnv(t)
	opts := e.opts
	opts.Theme = ""
	opts.SettingsPath = filepath.Join(t.TempDir(), "wick", "config.toml")
	writeFile(t, opts.SettingsPath, "theme = \"dark\"\n\n[keys]\nquit = [\"q\", \"ctrl+q\"]\n")
	writeFile(t, filepath.Join(filepath.Dir(opts.SettingsPath), "themes", "mine.toml"), "base = \"light\"\naccent = \"#ff79c6\"\n")
	d := newDriver(t, opts, 120, 24)
	dark := d.m.Screen()
	d.keys("ctrl+t")
	d.contains("theme light (saved to " + opts.SettingsPath + ")")
	if d.m.Screen() == dark {
		t.Fatal("the screen did not change with the theme")
	}
	d.keys(":")
	d.typ("theme")
	d.keys("enter")
	d.contains("theme high-contrast")
	d.keys("ctrl+t")
	d.contains("theme mine")
	s, err := tui.LoadSettings(opts.SettingsPath)
	if err != nil || s.Theme != "mine" || len(s.Keys["quit"]) != 2 {
		t.Fatalf("settings after the switch: %+v, %v", s, err)
	}
	if fi, err := os.Stat(opts.SettingsPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config.toml: %v %v", fi, err)
	}
	d.keys("ctrl+t")
	d.contains("theme dark")
}
