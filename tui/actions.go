package tui

import (
	"github.com/wick-dev/wick/tui/apps"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/compare"
	"github.com/wick-dev/wick/tui/describe"
	"github.com/wick-dev/wick/tui/form"
	"github.com/wick-dev/wick/tui/inplace"
	"github.com/wick-dev/wick/tui/launch"
	"github.com/wick-dev/wick/tui/picker"
	"github.com/wick-dev/wick/tui/preview"
	"github.com/wick-dev/wick/tui/sweepchart"
	"github.com/wick-dev/wick/tui/sweepplan"
	"github.com/wick-dev/wick/tui/wall"
)

// The kinds of the overlays, whose keys are in the table too.
const (
	kindConfirm common.Kind = "confirm"
	kindPalette common.Kind = "palette"
)

// The overlays' own actions: the answers to a confirmation, and the palette's.
const (
	actYes          = "yes"
	actNo           = "no"
	actRunAction    = "run-action"
	actClosePalette = "close-palette"
)

// newActions assembles the action table: every view's own rows (a new view adds its
// Actions here), then the root's. The user's [keys] rebind rows by name.
func newActions() *common.Registry {
	return common.NewRegistry(
		form.Actions(),
		picker.Actions(),
		preview.Actions(),
		sweepplan.Actions(),
		launch.Actions(),
		apps.Actions(),
		describe.Actions(),
		compare.Actions(),
		wall.Actions(),
		inplace.Actions(wall.Kind),
		inplace.Actions(describe.Kind),
		sweepchart.Actions(),
		rootActions(),
	)
}

// rootActions are the rows the root model runs itself: the confirmation's answers,
// opening the picker and the app list, and the actions of every view.
func rootActions() []common.Action {
	return []common.Action{
		common.NewAction(actYes, "yes", []string{"y", "enter"}, true, kindConfirm),
		common.NewAction(actNo, "no", []string{"n", "esc"}, true, kindConfirm),
		// The palette types into its field: its keys are not text.
		common.NewAction(actRunAction, "run the selected action", []string{"enter"}, true, kindPalette),
		common.NewAction(actClosePalette, "close the palette", []string{"esc"}, true, kindPalette),
		common.NewAction(common.ActUp, "up", []string{"up", "ctrl+p", "shift+tab"}, false, kindPalette),
		common.NewAction(common.ActDown, "down", []string{"down", "ctrl+n", "tab"}, false, kindPalette),
		common.NewAction(common.ActNew, "new", []string{"n"}, true, apps.Kind, describe.Kind, preview.Kind, sweepplan.Kind, launch.Kind),
		common.NewAction(common.ActHome, "app list", []string{"a"}, false, describe.Kind, compare.Kind, wall.Kind, preview.Kind, sweepplan.Kind, launch.Kind),
		common.NewAction(common.ActBack, "back", []string{"esc"}, true),
		common.NewAction(common.ActHelp, "help", []string{"?", "f1"}, true),
		common.NewAction(common.ActPalette, "command palette", []string{":"}, false),
		common.NewAction(actTheme, "next theme (saved to config.toml)", []string{"ctrl+t"}, false),
		common.NewAction(common.ActQuit, "quit", []string{"q", "ctrl+c"}, true),
	}
}
