package cli

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/wick-dev/wick/engine/runner"
)

// unknownCompFlag finds the flag a component did not know in its parse error.
var unknownCompFlag = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`unknown flag (--?)([^\s=]+)(?: in -([^\s=]+))? for (\S+)`)
})

// wickFlagAfterComponent adds to a component's "unknown flag" error, when the flag is
// one of wick run's own (--json after the component), where wick's flags go.
func wickFlagAfterComponent(fl *pflag.FlagSet, err error) error {
	var compErr *runner.ComponentError
	if err == nil || !errors.As(err, &compErr) {
		return err
	}
	m := unknownCompFlag().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	dash, name, comp := m[1], m[2], m[4]
	if m[3] != "" {
		name = m[3] // -cfg: a group of letters pflag failed on at its first
	}
	var f *pflag.Flag
	switch {
	case dash == "--" || len(name) > 1:
		// One dash before a long name (-cfg, TorchX's spelling) is wick's flag too;
		// pflag's ShorthandLookup panics on a name of more than one letter.
		f = fl.Lookup(name)
	default:
		f = fl.ShorthandLookup(name)
	}
	if f == nil || f.Hidden {
		return err
	}
	typed, use := dash+name, dash+name
	if m[3] != "" {
		// The component's own hint (one of its flags a few letters away) is beside
		// the point: the flag is wick's.
		err = fmt.Errorf("%s: unknown flag %s for %s", comp, typed, comp)
		if name != "cfg" { // -cfg is read by wick (TorchXRunArgs); -json is not
			use = "--" + name
		}
	}
	return usagef("%v: %s is wick's own flag; wick's flags go before the component (wick run %s %s ...)", err, typed, use, comp)
}

// onceFlags are the spellings of the run flags TorchX takes at most once each
// (torchx/cli/cmd_run.py: the torchxconfig_run and ArgOnceAction actions, which
// remember the option string given): the same spelling twice is an error there.
var onceFlags = map[string]bool{"-s": true, "--scheduler": true, "-cfg": true, "--scheduler_args": true,
	"--workspace": true, "--parent_run_id": true}

// TorchXRunArgs rewrites wick run's own arguments (those before the component) so
// that pflag reads them as TorchX's argparse does: TorchX's single-dash -cfg (which
// pflag cannot read) becomes --cfg; an unambiguous prefix of a long flag (--dry,
// --parent) becomes the flag, as argparse's allow_abbrev reads it; and a flag TorchX
// takes once (onceFlags) given twice in the same spelling is an error, as in TorchX.
// fl is wick run's flag set: it says which flags take a value. Every scheduler named
// (-s X --scheduler Y names two) is checked by checkScheduler, as argparse's choices=
// checks each.
func TorchXRunArgs(args []string, fl *pflag.FlagSet, checkScheduler func(string) error) ([]string, error) {
	out := append([]string(nil), args...)
	seen := map[string]bool{}
	for i := 0; i < len(out); i++ {
		s := out[i]
		if s == "--" || s == "-" || !strings.HasPrefix(s, "-") {
			return out, nil
		}
		var f *pflag.Flag
		spelling, inline := s, false
		switch {
		case s == "-cfg" || strings.HasPrefix(s, "-cfg="):
			spelling, inline = "-cfg", s != "-cfg"
			out[i] = "-" + s
			f = fl.Lookup("cfg")
		case strings.HasPrefix(s, "--"):
			name, _, eq := strings.Cut(s[2:], "=")
			inline = eq
			if f = fl.Lookup(name); f == nil {
				if f = flagByPrefix(fl, name); f != nil {
					out[i] = "--" + f.Name + s[2+len(name):]
				}
			}
			if f != nil {
				spelling = "--" + f.Name
			}
		default:
			spelling, inline = s[:2], len(s) > 2
			f = fl.ShorthandLookup(s[1:2])
		}
		if onceFlags[spelling] {
			if seen[spelling] {
				return nil, fmt.Errorf("%s is given more than once (as in TorchX, give it once)", spelling)
			}
			seen[spelling] = true
		}
		value := ""
		switch {
		case f == nil || f.NoOptDefVal != "":
			continue
		case !inline && i+1 < len(out):
			i++ // its value
			value = out[i]
		case !inline:
			continue // no value: pflag says so
		case strings.HasPrefix(out[i], "--"):
			_, value, _ = strings.Cut(out[i], "=")
		default:
			value = strings.TrimPrefix(out[i][2:], "=")
		}
		if f.Name == "scheduler" {
			if err := checkScheduler(value); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// flagByPrefix is the one long flag of fl whose name starts with prefix, or nil
// when none or several do.
func flagByPrefix(fl *pflag.FlagSet, prefix string) *pflag.Flag {
	var found *pflag.Flag
	n := 0
	fl.VisitAll(func(f *pflag.Flag) {
		if prefix != "" && strings.HasPrefix(f.Name, prefix) {
			found = f
			n++
		}
	})
	if n != 1 {
		return nil
	}
	return found
}

// checkTorchXFlags refuses what TorchX's run flags cannot mean for wick.
func (f runFlags) checkTorchXFlags() error {
	switch {
	case f.stdin:
		return usagef("--stdin (TorchX's JSON arguments on stdin) is not supported: give the component and its arguments on the command line, or their defaults in .torchxconfig ([cli:run] component, [component:NAME])")
	case f.detach && (f.wait || f.log):
		return usagef("--detach returns at once: it cannot be given with --wait or --log (wick run waits and streams the logs by default)")
	}
	return nil
}
