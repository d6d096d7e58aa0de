package render_test

import (
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/render"
)

// A theme colors the shared renderers: the UI hands its theme to them. The assertion
// lives here, above both, because themes must not import tui.
var _ render.Styler = (*themes.Theme)(nil)
