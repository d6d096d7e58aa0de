package render

import (
	"strings"
)

// Pages renders a view twice, secrets masked (false) and revealed (true), as the lines
// a pager shows: toggling the reveal key then costs nothing. An error draw meets is
// the last line, styled as an error, after what was drawn before it.
func Pages(st Styler, draw func(b *strings.Builder, opts TreeOptions) error) map[bool][]string {
	out := make(map[bool][]string, 2)
	for _, reveal := range []bool{false, true} {
		var b strings.Builder
		if err := draw(&b, TreeOptions{MaskSecrets: !reveal}); err != nil {
			b.WriteString("\n" + st.Error(err.Error()))
		}
		out[reveal] = strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	}
	return out
}
