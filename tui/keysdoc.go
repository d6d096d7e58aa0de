package tui

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/wick-dev/wick/tui/apps"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/compare"
	"github.com/wick-dev/wick/tui/describe"
	"github.com/wick-dev/wick/tui/form"
	"github.com/wick-dev/wick/tui/launch"
	"github.com/wick-dev/wick/tui/picker"
	"github.com/wick-dev/wick/tui/preview"
	"github.com/wick-dev/wick/tui/sweepchart"
	"github.com/wick-dev/wick/tui/sweepplan"
	"github.com/wick-dev/wick/tui/wall"
)

// KeysDocPath is where KeysDoc's page lives in the repository (make docs writes it).
const KeysDocPath = "docs/keys.md"

// viewTitles names each kind of view in the keys page, in the order a user meets them.
var viewTitles = []struct {
	kind  common.Kind
	title string
}{
	{apps.Kind, "The app list"},
	{picker.Kind, "The component picker"},
	{form.Kind, "The argument form"},
	{preview.Kind, "The dry-run preview"},
	{sweepplan.Kind, "A sweep's preview (a swept argument in the form)"},
	{launch.Kind, "Launching"},
	{describe.Kind, "Describe"},
	{wall.Kind, "The log wall"},
	{compare.Kind, "A comparison (a sweep's apps, or the marked apps)"},
	{sweepchart.Kind, "A sweep's chart"},
	{kindConfirm, "A confirmation"},
	{kindPalette, "The command palette"},
}

// KeysDoc renders docs/keys.md from the action table: for each view its own rows, then
// the rows that work everywhere. The page is generated (make docs), and a test fails
// when the file in the repository differs from it.
func KeysDoc() []byte {
	reg := newActions()
	var b bytes.Buffer
	b.WriteString("<!-- Generated from the UI's action table (tui/actions.go) by `make docs`; do not edit. -->\n\n")
	b.WriteString("# Keys\n\n")
	b.WriteString("Every key of the UI, view by view, as the `?` overlay shows them. The NAME column is the\n")
	b.WriteString("action's name: `:` then the name runs it from the command palette, and `[keys]` in\n")
	b.WriteString("`config.toml` rebinds it (`quit = [\"q\", \"ctrl+q\"]`; see [configuration.md](configuration.md)).\n")
	b.WriteString("A row marked *bar* is also in the view's one-line help bar. Where two rows share a key, the\n")
	b.WriteString("first listed wins.\n")
	rows := reg.Rows()
	for _, v := range viewTitles {
		var own []common.Action
		for _, a := range rows {
			if !a.Global() && slices.Contains(a.Views, v.kind) {
				own = append(own, a)
			}
		}
		if len(own) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s (`%s`)\n\n", v.title, v.kind)
		keysTable(&b, own)
	}
	var global []common.Action
	for _, a := range rows {
		if a.Global() {
			global = append(global, a)
		}
	}
	b.WriteString("\n## Everywhere\n\n")
	keysTable(&b, global)
	return b.Bytes()
}

// keysTable writes one markdown table of actions.
func keysTable(b *bytes.Buffer, rows []common.Action) {
	b.WriteString("| keys | does | name | bar |\n|---|---|---|---|\n")
	for _, a := range rows {
		keys := make([]string, 0, len(a.Binding.Keys()))
		for _, k := range a.Binding.Keys() {
			keys = append(keys, "`"+mdCell(k)+"`")
		}
		bar := ""
		if a.Short {
			bar = "bar"
		}
		fmt.Fprintf(b, "| %s | %s | `%s` | %s |\n", strings.Join(keys, " "), mdCell(a.Help()), a.Name, bar)
	}
}

// mdCell escapes what would end a markdown table's cell.
func mdCell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
