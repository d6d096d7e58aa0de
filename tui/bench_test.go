package tui_test

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/render"
)

// BenchmarkStartToFirstFrame is the work between `wick ui` starting and its first
// frame: reading settings and the theme, building the root model, the first size and
// drawing (the app list says "listing apps…" until the listing arrives).
func BenchmarkStartToFirstFrame(b *testing.B) {
	opts := newEnv(b).opts
	for b.Loop() {
		m, err := tui.NewModel(opts)
		if err != nil {
			b.Fatal(err)
		}
		_ = m.Init()
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		_ = m.View()
		m.Close()
	}
}

// BenchmarkStartToFirstListing adds the first listing (of 20 apps, read from their
// state files by local_cwd) and its frame.
func BenchmarkStartToFirstListing(b *testing.B) {
	opts := manyApps(b, 20).opts
	for b.Loop() {
		d := newDriver(b, opts, 160, 48)
		_ = d.m.View()
		d.m.Close()
	}
}

// BenchmarkAppListView1000 draws the app list of 1,000 apps (one frame). Aim: ≤ 5 ms.
// The apps are launched once per run (some seconds).
func BenchmarkAppListView1000(b *testing.B) {
	d := newDriver(b, manyApps(b, 1000).opts, 160, 48)
	d.contains("1000 apps")
	d.keys("j", "j")
	for b.Loop() {
		_ = d.m.View()
	}
}

// BenchmarkAppListRefresh1000 is one live update of 1,000 apps: local_cwd lists them
// from their state files, the rows are filtered, sorted and made into cells, and the
// frame is drawn. It runs once a second, off the frame path.
func BenchmarkAppListRefresh1000(b *testing.B) {
	d := newDriver(b, manyApps(b, 1000).opts, 160, 48)
	for b.Loop() {
		d.send(tick())
		_ = d.m.View()
	}
}

// openPreview64 opens the preview of utils.echo with 64 replicas on local_cwd.
func openPreview64(b *testing.B) *driver {
	d := newDriver(b, newEnv(b).opts, 160, 48)
	openForm(d, "utils.echo")
	d.keys("tab", "tab", "ctrl+u")
	d.typ("64")
	d.keys("enter")
	d.contains("num_replicas: 64", "=== SCHEDULER REQUEST (local_cwd) ===")
	return d
}

// BenchmarkPreviewView64 draws a frame of the preview of a 64-replica dry run, scrolled
// to the middle. Aim: ≤ 5 ms.
func BenchmarkPreviewView64(b *testing.B) {
	d := openPreview64(b)
	d.keys("pgdown", "pgdown", "pgdown")
	for b.Loop() {
		_ = d.m.View()
	}
}

// BenchmarkPreviewToggleSecrets64 is the frame after `s` in the preview of a
// 64-replica dry run: both renderings were made off the UI loop.
func BenchmarkPreviewToggleSecrets64(b *testing.B) {
	d := openPreview64(b)
	for b.Loop() {
		d.keys("s")
		_ = d.m.View()
	}
}

// BenchmarkDryRunRender64 is the off-loop work of opening the preview of a 64-replica
// local_cwd dry run: render.DryRun, masked and revealed (what `wick run --dryrun`
// prints), split into lines.
func BenchmarkDryRunRender64(b *testing.B) {
	reg := &sched.Registry{}
	local.Register(reg)
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: b.TempDir()})
	defer r.Close()
	role := spec.NewRole("echo", "img", "echo", "hi")
	role.NumReplicas = 64
	info, err := r.DryRun(context.Background(), &spec.AppDef{Name: "echo", Roles: []spec.Role{role}}, local.NameCwd, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	t := themes.Default()
	for b.Loop() {
		for _, reveal := range []bool{false, true} {
			var sb strings.Builder
			if err := render.DryRun(&sb, info, t, render.TreeOptions{MaskSecrets: !reveal}); err != nil {
				b.Fatal(err)
			}
			_ = strings.Split(sb.String(), "\n")
		}
	}
}
