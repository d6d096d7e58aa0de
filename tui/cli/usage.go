package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wick-dev/wick/engine/spec"
)

// usageError marks errors that exit with ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitError carries a specific exit code with an optional message.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

// jsonError writes an error as a JSON object on stdout when the command was asked for
// JSON (--json among wick's own arguments), so that a script reading stdout gets JSON
// whatever happens; stderr has the usual line too.
func jsonError(w io.Writer, args []string, msg string, code int) {
	for _, a := range args {
		if a == "--" {
			return
		}
		if a == "--json" || a == "--json=true" {
			_ = writeJSON(w, map[string]any{"error": msg, "exit_code": code})
			return
		}
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// unknownCommand is the root's argument check: cobra's own says "unknown command" in an
// untyped error; this one is a usageError, with cobra's suggestions.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.Root().SuggestionsFor(args[0]); len(s) > 0 && !cmd.HasParent() {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageError{errors.New(msg)}
}

// typeUsageErrors makes the positional-argument errors of cmd and every command under
// it (cobra's help and completion included) usage errors, so that the exit code comes
// from the error's type, not from its text.
func typeUsageErrors(cmd *cobra.Command) {
	switch {
	case cmd.HasSubCommands() && !cmd.Runnable():
		// A group (completion): an unknown subcommand is an error, not help.
		cmd.Args = unknownCommand
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	case cmd.Args != nil:
		cmd.Args = args(cmd.Args)
	}
	for _, c := range cmd.Commands() {
		typeUsageErrors(c)
	}
}

// flagError makes a bad flag of a verb a usage error, with the nearest flag of the
// verb when the name looks mistyped (--dryrn: did you mean --dryrun?).
func flagError(cmd *cobra.Command, err error) error {
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) {
		if takes := flagTakes[invalid.GetFlag().Value.Type()]; takes != "" {
			// Not pflag's "invalid argument ... strconv.Atoi: parsing ...: invalid
			// syntax": the flag, what it takes, and the value, escaped.
			f := invalid.GetFlag()
			name := "--" + f.Name
			if f.Shorthand != "" {
				name = "-" + f.Shorthand + "/" + name
			}
			return usagef("%s takes %s, not %q", name, takes, truncate(invalid.GetValue(), 40))
		}
		return usageError{err}
	}
	var notExist *pflag.NotExistError
	if !errors.As(err, &notExist) {
		return usageError{err}
	}
	if cmd.Name() == "run" {
		if hint := componentFlagHint(cmd, notExist); hint != nil {
			return hint
		}
	}
	if notExist.GetSpecifiedShortnames() != "" {
		return usageError{err}
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	name := notExist.GetSpecifiedName()
	dym := spec.DidYouMean(name, names)
	if dym == "" {
		return usageError{err}
	}
	_, best, _ := strings.Cut(dym, "\"")
	best, _, _ = strings.Cut(best, "\"")
	return usagef("%v (did you mean --%s?)", err, best)
}

// componentFlagHint is the error of a flag wick run does not have, given before the
// component (`wick run -j 2x2 dist.ddp`): a component's flags go after it. A flag
// that looks like a mistyped flag of wick's own (--dryrn) gets no such hint.
func componentFlagHint(cmd *cobra.Command, e *pflag.NotExistError) error {
	flag := "--" + e.GetSpecifiedName()
	if short := e.GetSpecifiedShortnames(); short != "" {
		flag = "-" + short
	} else {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if spec.DidYouMean(e.GetSpecifiedName(), names) != "" {
			return nil
		}
	}
	return usagef("%s is not a flag of wick run: a component's flags go after the component (wick run COMPONENT %s ...), wick's own before it", flag, flag)
}

// flagTakes says what a flag of each of pflag's value types takes, for the error of
// a value it cannot parse.
var flagTakes = map[string]string{
	"int":          "a whole number",
	"int64":        "a whole number",
	"uint":         "a whole number, 0 or more",
	"float64":      "a number",
	"bool":         "true or false",
	"duration":     "a duration (e.g. 90s, 5m, 1h30m)",
	"intSlice":     "whole numbers, comma-separated (e.g. 3 or 0,2)",
	"float64Slice": "numbers, comma-separated",
}

// args wraps a cobra positional-args validator so that its errors exit with ExitUsage.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		err := v(cmd, a)
		var ue usageError
		if err == nil || errors.As(err, &ue) {
			return err // wrapped twice (typeUsageErrors): said once
		}
		// cobra's "accepts 1 arg(s), received 0" names neither the verb nor what it
		// wants: the usage line says both.
		path := strings.TrimPrefix(cmd.CommandPath(), "wick ")
		if _, want, ok := strings.Cut(cmd.Use, " "); ok && len(a) == 0 {
			return usagef("%s needs %s (usage: %s)", path, want, cmd.UseLine())
		}
		if !cmd.HasSubCommands() && strings.HasPrefix(err.Error(), "unknown command ") {
			// cobra.NoArgs calls an argument a command.
			return usagef("%s takes no argument, got %q (usage: %s)", path, a[0], cmd.UseLine())
		}
		return usageError{fmt.Errorf("%s: %w (usage: %s)", path, err, cmd.UseLine())}
	}
}
