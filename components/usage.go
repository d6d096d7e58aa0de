package components

import (
	"fmt"
	"strconv"
	"strings"
)

// Usage returns the component's help: a usage line, its description, one line per
// flag with type, help, and "(required)" or its default, the varargs, and an example.
// A file's component is named FILE:NAME in it, as `wick run` takes it.
func (c *Component) Usage() string {
	if c.Source != "" {
		return c.UsageAs(c.Source + ":" + c.Name)
	}
	return c.UsageAs(c.Name)
}

// UsageAs is Usage with the component called name, as the user wrote it
// (./component.py:trainer): the usage line and the example say it so.
func (c *Component) UsageAs(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: wick run [RUN OPTIONS] %s [FLAGS]", name)
	if c.Varargs != "" {
		fmt.Fprintf(&b, " [--] [%s...]", c.Varargs)
	}
	b.WriteString("\n")
	if c.Summary != "" {
		b.WriteString("\n" + c.Summary + "\n")
	}
	if h := strings.TrimSpace(c.Help); h != "" {
		b.WriteString("\n" + h + "\n")
	}
	if c.Source != "" {
		fmt.Fprintf(&b, "\nDefined in %s.\n", c.Source)
	}

	type row struct{ left, right string }
	var rows []row
	for _, p := range c.Params {
		left := "    --" + p.Name
		if s := p.short(); s != "" {
			left = "-" + s + ", --" + p.Name
		}
		left = "  " + left + " " + p.Type.String()
		right := p.Help
		switch {
		case p.Required:
			right = joinSpace(right, "(required)")
		case p.Default != "":
			right = joinSpace(right, "(default: "+quoteDefault(p)+")")
		case p.Optional:
			right = joinSpace(right, "(optional)")
		}
		rows = append(rows, row{left, right})
	}
	help := "show this help"
	left := "    --help"
	if c.paramByShort('h') == nil {
		left = "-h, --help"
	}
	rows = append(rows, row{"  " + left, help})
	width := 0
	for _, r := range rows {
		width = max(width, len(r.left))
	}
	width = min(width, 36)
	b.WriteString("\nflags:\n")
	for _, r := range rows {
		writeRow(&b, r.left, r.right, width)
	}
	if c.Varargs != "" {
		b.WriteString("\narguments:\n")
		vh := c.VarargsHelp
		if vh == "" {
			vh = "trailing arguments (everything after the flags, or after --)"
		}
		writeRow(&b, "  "+c.Varargs+"...", vh, width)
	}
	if len(c.Example) > 0 {
		fmt.Fprintf(&b, "\nexample:\n  wick run %s %s\n", name, shellJoin(c.Example))
	}
	return b.String()
}

// writeRow writes left padded to width and right, indenting right's later lines under
// its first; a left too wide for the column puts right on the next line.
func writeRow(b *strings.Builder, left, right string, width int) {
	lines := strings.Split(strings.TrimSpace(right), "\n")
	pad := strings.Repeat(" ", width+2)
	if len(left) > width {
		b.WriteString(left + "\n" + pad)
	} else {
		b.WriteString(left + strings.Repeat(" ", width+2-len(left)))
	}
	for i, l := range lines {
		if i > 0 {
			b.WriteString(pad)
		}
		b.WriteString(strings.TrimSpace(l) + "\n")
	}
}

func joinSpace(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// quoteDefault writes a default for the help: strings quoted, other types bare.
func quoteDefault(p Param) string {
	if p.Type == String {
		return strconv.Quote(p.Default)
	}
	return p.Default
}

// shellJoin quotes each argument for a POSIX shell and joins them with spaces.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a POSIX shell exactly as Python's shlex.quote does: an
// empty string becomes ”; a string of only letters, digits and @%+=:,./_- is left
// alone; anything else is wrapped in single quotes, each ' written as '"'"'.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnumByte(c) && strings.IndexByte("@%+=:,./_-", c) < 0 {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
