package form

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
)

// Fill sets the form from a component call, for a relaunch with edits: the arguments
// as `wick run` took them (--NAME=VALUE, --NAME VALUE, -S VALUE, then "--" and the
// trailing arguments), the scheduler, and the run options the app ran with. An
// argument the component does not take is an error (the component changed since).
func (m *Model) Fill(args []string, scheduler string, cfg spec.Cfg) error {
	vals, rest, err := splitCall(m.comp, args)
	if err != nil {
		return fmt.Errorf("%s: %w", m.comp.Name, err)
	}
	for _, f := range m.fields {
		switch {
		case f.param != nil:
			v, ok := vals[f.param.Name]
			if !ok {
				continue
			}
			if f.kind == kBool {
				f.on, _ = spec.ParseBool(v)
			} else {
				f.input.SetValue(v)
			}
		case f.varargs:
			q := make([]string, len(rest))
			for i, w := range rest {
				q[i] = components.ShellQuote(w)
			}
			f.input.SetValue(strings.Join(q, " "))
		case f.sec == secScheduler:
			if i := slices.Index(f.choices, scheduler); i >= 0 {
				f.choice = i
			}
		}
		f.check()
	}
	if len(cfg) > 0 {
		m.fill = map[string]spec.Cfg{scheduler: cfg}
	}
	return nil
}

// splitCall reads a component call's arguments into the text of each parameter and
// the trailing arguments.
func splitCall(c *components.Component, argv []string) (map[string]string, []string, error) {
	vals := map[string]string{}
	param := func(flag string) *components.Param {
		long, ok := strings.CutPrefix(flag, "--")
		name := strings.ReplaceAll(long, "-", "_")
		for i := range c.Params {
			p := &c.Params[i]
			if ok && p.Name == name || !ok && (p.Short == flag[1:] || p.Short == "" && len(p.Name) == 1 && p.Name == flag[1:]) {
				return p
			}
		}
		return nil
	}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			return vals, argv[i+1:], nil
		}
		if len(a) < 2 || a[0] != '-' {
			if c.Varargs == "" {
				return nil, nil, fmt.Errorf("unexpected argument %q", a)
			}
			return vals, argv[i:], nil
		}
		flag, v, hasV := strings.Cut(a, "=")
		p := param(flag)
		if p == nil {
			return nil, nil, fmt.Errorf("it takes no %s any more", flag)
		}
		if !hasV {
			switch {
			case p.Type == components.Bool:
				v = "true"
				if i+1 < len(argv) {
					if _, err := spec.ParseBool(argv[i+1]); err == nil {
						v = argv[i+1]
						i++
					}
				}
			case i+1 < len(argv):
				v = argv[i+1]
				i++
			default:
				return nil, nil, fmt.Errorf("%s has no value", flag)
			}
		}
		vals[p.Name] = v
	}
	return vals, nil, nil
}
