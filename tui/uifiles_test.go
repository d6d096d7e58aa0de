package tui_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/tui"
)

// newModelWithin builds the root model and fails the test if that has not returned
// within a deadline (a FIFO settings file would block it forever).
func newModelWithin(t *testing.T, opts tui.Options) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		m, err := tui.NewModel(opts)
		if m != nil {
			m.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the UI is still starting after 10 s")
		return nil
	}
}

// TestSettingsFileIsARegularFile: config.toml that is a FIFO or a link to /dev/zero
// is refused at start with a one-line error, not a hang or an out-of-memory crash;
// so is one larger than any settings file. A link to a regular file (dotfiles) is
// read.
func TestSettingsFileIsARegularFile(t *testing.T) {
	opts := newEnv(t).opts
	dir := t.TempDir()
	opts.SettingsPath = filepath.Join(dir, "config.toml")

	if err := syscall.Mkfifo(opts.SettingsPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := newModelWithin(t, opts); err == nil || !strings.Contains(err.Error(), "config.toml: not a regular file (a FIFO)") {
		t.Errorf("FIFO config.toml: %v", err)
	}
	os.Remove(opts.SettingsPath)
	if err := os.Symlink("/dev/zero", opts.SettingsPath); err != nil {
		t.Fatal(err)
	}
	if err := newModelWithin(t, opts); err == nil || !strings.Contains(err.Error(), "config.toml: not a regular file (a device)") {
		t.Errorf("config.toml -> /dev/zero: %v", err)
	}
	os.Remove(opts.SettingsPath)
	writeFile(t, opts.SettingsPath, "# "+strings.Repeat("x", 2<<20)+"\n")
	if err := newModelWithin(t, opts); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("a 2 MiB config.toml: %v", err)
	}
	os.Remove(opts.SettingsPath)
	real := filepath.Join(t.TempDir(), "dotfiles.toml")
	writeFile(t, real, "theme = \"light\"\n")
	if err := os.Symlink(real, opts.SettingsPath); err != nil {
		t.Fatal(err)
	}
	if err := newModelWithin(t, opts); err != nil {
		t.Errorf("config.toml linked to a regular file: %v", err)
	}
}

// TestThemeIsAName: `theme = "../../../../etc/passwd"` is refused as a theme name at
// the line that says it: the file is not opened, nothing of it is shown. The user
// themes folder is read for names only; a FIFO or a /dev/zero theme is refused.
func TestThemeIsAName(t *testing.T) {
	opts := newEnv(t).opts
	dir := t.TempDir()
	opts.SettingsPath = filepath.Join(dir, "config.toml")
	writeFile(t, opts.SettingsPath, "theme = \"../../../../etc/passwd\"\n")
	err := newModelWithin(t, opts)
	if err == nil || !strings.Contains(err.Error(), `config.toml: line 1: theme "../../../../etc/passwd": not a theme name`) {
		t.Fatalf("theme = passwd: %v", err)
	}
	if strings.Contains(err.Error(), "root:") {
		t.Fatalf("the error shows /etc/passwd: %v", err)
	}

	writeFile(t, opts.SettingsPath, "")
	if err := os.MkdirAll(tui.ThemesDir(opts.SettingsPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(tui.ThemesDir(opts.SettingsPath), "pipe.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.Theme = "pipe"
	if err := newModelWithin(t, opts); err == nil || !strings.Contains(err.Error(), "pipe.toml: not a regular file (a FIFO)") {
		t.Errorf("a FIFO theme: %v", err)
	}
	opts.Theme = "/etc/passwd"
	if err := newModelWithin(t, opts); err == nil || !strings.Contains(err.Error(), "not a theme name") {
		t.Errorf("--theme /etc/passwd: %v", err)
	}
}

// TestBindingsThatCannotWork: bindings that would take a key from another action of
// the same view, or that no terminal can send, are refused at start, naming the key
// and both actions.
func TestBindingsThatCannotWork(t *testing.T) {
	opts := newEnv(t).opts
	opts.SettingsPath = filepath.Join(t.TempDir(), "config.toml")
	for keys, want := range map[string][]string{
		// j moves down in every list: quit would never run there.
		`quit = "j"`: {`key "j" is bound to both quit and down (in the `, "apps"},
		// q quits everywhere: help and quit would share it.
		`help = "q"`:                           {`key "q" is bound to both help and quit (in every view)`},
		"quit = \"ctrl+y\"\nhelp = \"ctrl+y\"": {`key "ctrl+y" is bound to both help and quit (in every view)`},
		`logs = "ctrl+c"`:                      {`logs = "ctrl+c": ctrl+c always quits`},
		// L is the sweep chart's log scale, where l opens an app's logs.
		`logs = "L"`:           {`key "L" is bound to both logs and sweep-chart-log (in the sweep-chart view)`},
		`quit = "ctrl+"`:       {`quit = "ctrl+": not a key`},
		`help = "hello"`:       {`help = "hello": not a key`},
		`quit = "ctrl+ctrl+q"`: {`quit = "ctrl+ctrl+q": not a key`},
	} {
		writeFile(t, opts.SettingsPath, "[keys]\n"+keys+"\n")
		err := newModelWithin(t, opts)
		if err == nil {
			t.Errorf("[keys] %s: accepted", keys)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("[keys] %s: %v, want %q", keys, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("[keys] %s: the error is not one line: %q", keys, err)
		}
	}
	// Keys nothing else has in those views are fine, as are the usual names. (L is
	// taken where logs can be opened: the sweep chart's log scale.)
	writeFile(t, opts.SettingsPath, "[keys]\nquit = [\"ctrl+q\", \"f10\"]\nhelp = [\"?\", \"shift+f1\"]\nlogs = \"ctrl+o\"\n")
	if err := newModelWithin(t, opts); err != nil {
		t.Errorf("good bindings: %v", err)
	}
}

// TestCtrlCAlwaysQuits: whatever [keys] says of quit, and whatever is open (a text
// field, the palette, a question), ctrl+c quits.
func TestCtrlCAlwaysQuits(t *testing.T) {
	opts := newEnv(t).opts
	opts.SettingsPath = filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, opts.SettingsPath, "[keys]\nquit = \"ctrl+q\"\nclose-palette = \"ctrl+g\"\n")
	for _, before := range [][]string{nil, {"/"}, {":"}, {"?"}, {"n"}} {
		d := newDriver(t, opts, 120, 24)
		d.keys(before...)
		d.keys("ctrl+c")
		if !d.quit {
			t.Errorf("after %v, ctrl+c did not quit:\n%s", before, d.screen())
		}
	}
}
