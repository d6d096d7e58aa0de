package tui

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
)

// actTheme switches to the next theme and saves it in the settings file.
const actTheme = "theme"

// maxSettingsFile bounds what is read of the settings file to rewrite its theme line.
const maxSettingsFile = 1 << 20

// themeNames lists the themes to cycle through: the builtins, then the user themes of
// dir (NAME.toml), sorted.
func themeNames(dir string) []string {
	names := themes.Names()
	entries, _ := os.ReadDir(dir) // no folder: the builtins only
	var user []string
	for _, e := range entries {
		n, ok := strings.CutSuffix(e.Name(), ".toml")
		if ok && e.Type().IsRegular() && !slices.Contains(names, n) && themes.CheckName(n) == nil {
			user = append(user, n)
		}
	}
	slices.Sort(user)
	return append(names, user...)
}

// nextTheme switches to the theme after the current one and saves its name in the
// settings file: the next run of the UI starts with it. A user theme that does not
// load is skipped with its error; the theme in use stays.
func (m *Model) nextTheme() tea.Cmd {
	if m.ctx.Theme.IsPlain() {
		return common.Notify("no colors: NO_COLOR is set or TERM is dumb")
	}
	names := themeNames(m.themesDir)
	next := names[(slices.Index(names, m.ctx.Theme.Name)+1)%len(names)]
	t, err := themes.Load(next, m.themesDir)
	if err != nil {
		return common.NotifyErr(err)
	}
	m.ctx.Theme, m.autoTheme = t, false
	if err := saveTheme(m.settingsPath, next); err != nil {
		return common.NotifyErr(fmt.Errorf("theme %s, not saved: %w", next, err))
	}
	return common.Notify("theme " + next + " (saved to " + m.settingsPath + ")")
}

// saveTheme sets `theme = "NAME"` in the settings file at path, keeping every other
// line: the top-level theme line is replaced, or one is added at the top. The file is
// created (0600, its folder 0700) when missing.
func saveTheme(path, name string) error {
	if path == "" {
		return errors.New("no settings file")
	}
	data, err := safefs.ReadFile(path, maxSettingsFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	line := []byte("theme = " + strconv.Quote(name))
	lines := bytes.Split(data, []byte("\n"))
	replaced := false
	for i, l := range lines {
		t := bytes.TrimSpace(l)
		if bytes.HasPrefix(t, []byte("[")) {
			break // the top level ends at the first section
		}
		if k, _, ok := bytes.Cut(t, []byte("=")); ok && string(bytes.TrimSpace(k)) == "theme" {
			lines[i], replaced = line, true
			break
		}
	}
	if !replaced {
		lines = append([][]byte{line}, lines...)
	}
	out := bytes.Join(lines, []byte("\n"))
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return safefs.WriteFileAtomic(dir, filepath.Base(path), out)
}
