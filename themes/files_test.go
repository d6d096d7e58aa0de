package themes_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/themes"
)

// loadWithin runs Load and fails the test if it has not returned within a deadline
// (a FIFO with no writer would block it forever).
func loadWithin(t *testing.T, name, dir string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := themes.Load(name, dir)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Load(%q) still blocked after 10 s", name)
		return nil
	}
}

// TestLoadOnlyNamesRegularFiles: a theme is a name, looked up in the themes folder as
// NAME.toml, which must be a regular file of a theme's size. A path is refused without
// being opened (the settings file once echoed the first line of /etc/passwd), and a
// FIFO or /dev/zero is refused at once instead of hanging or filling the memory.
func TestLoadOnlyNamesRegularFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"../../../../etc/passwd", "/etc/passwd", "ocean.toml", "..", "a b", "x\x1b[31m"} {
		err := loadWithin(t, name, dir)
		if err == nil || !strings.Contains(err.Error(), "not a theme name") {
			t.Errorf("Load(%q) = %v, want a refusal: not a theme name", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "root:") {
			t.Errorf("Load(%q) echoes the file: %v", name, err)
		}
	}

	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.toml")); err != nil {
		t.Fatal(err)
	}
	big := "# " + strings.Repeat("x", 70<<10) + "\naccent = \"#00ffff\"\n"
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"fifo": "not a regular file (a FIFO)",
		"zero": "not a regular file (a device)",
		"big":  "too large",
	} {
		if err := loadWithin(t, name, dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%q) = %v, want %q", name, err, want)
		}
	}

	// A link to a regular theme file (dotfiles) still loads.
	real := filepath.Join(t.TempDir(), "mine.toml")
	if err := os.WriteFile(real, []byte("accent = \"#00ffff\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "linked.toml")); err != nil {
		t.Fatal(err)
	}
	if err := loadWithin(t, "linked", dir); err != nil {
		t.Errorf("Load(linked) = %v", err)
	}
}
