package tui

import (
	"io"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/tui/common"
)

// Options configure the UI. Only Runner is required.
type Options struct {
	// Runner is the engine: a *runner.Runner.
	Runner common.Backend
	// Components lists what the picker offers: builtins and user components
	// (components.All). Nil offers the builtins.
	Components func() ([]*components.Component, error)
	// Find is where the Runner finds the component the form plans (components.Find):
	// the search path Components lists.
	Find components.FindOptions
	// Config supplies .torchxconfig defaults; nil means none.
	Config common.Config
	// DefaultScheduler is preselected in the argument form ([cli:run] scheduler, or
	// local_cwd).
	DefaultScheduler string
	// Workspace is passed to dry runs and launches (local_docker image builds).
	Workspace string

	// Theme is the --theme flag: a builtin name, a user theme name, a path, or "auto".
	Theme string
	// SettingsPath is the UI settings file; "" means DefaultSettingsPath.
	SettingsPath string
	// Logs, when set, opens the UI on the logs of this app handle (--logs).
	Logs string
	// Sweep, when set, opens the UI on the app list with this sweep unfolded and
	// selected (--logs with a sweep id).
	Sweep string
	// RingLines is how many lines the log wall keeps in memory per replica; 0 means
	// wall.DefaultRingLines. Older lines are read back from the logs when scrolled to.
	RingLines int
	// Procs, when above 0, is the UI's GOMAXPROCS while no search runs (a search has
	// every processor the process had); 0 leaves GOMAXPROCS alone.
	Procs int
	// HeldLines is how many lines the log wall's panes keep in memory in all; 0 means
	// wall.DefaultHeldLines.
	HeldLines int

	// Input and Output are the terminal; nil means the process's.
	Input  io.Reader
	Output io.Writer
	// Width and Height are the size to draw at when Output is not a terminal that can
	// say its size (a pipe); zero waits for the terminal's.
	Width, Height int
	// Messages receives what the UI says after it closes (that running apps keep
	// running); nil means os.Stderr.
	Messages io.Writer
	// Getenv reads the environment (NO_COLOR, XDG_CONFIG_HOME); nil means os.Getenv.
	Getenv func(string) string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// TickInterval is how often live views refresh; 0 means common.TickInterval and a
	// negative value turns the ticks off (tests send common.TickMsg themselves).
	TickInterval time.Duration
}
