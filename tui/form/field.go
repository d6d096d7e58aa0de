package form

import (
	"errors"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/widget"
)

// section groups the fields under a heading.
type section int

const (
	secArgs section = iota
	secScheduler
	secRunOpts
)

// kind is how a field is edited.
type kind int

const (
	kText   kind = iota // free text, checked by the parameter's parser
	kBool               // a toggle
	kChoice             // one of choices, cycled with ←/→
)

// field is one row of the form: a component parameter, the trailing arguments, the
// scheduler, or one of the scheduler's run options.
type field struct {
	sec      section
	name     string
	typ      string // shown after the value: "int", "list", "dict[str,str]", ...
	help     string
	required bool
	kind     kind
	input    widget.Input
	on       bool
	choices  []string
	choice   int
	// initial is the value the form started with (defaults and .torchxconfig).
	initial string
	err     string
	// touched says a key or a paste reached the field: until then, typing replaces its
	// value (a default, a .torchxconfig value or a relaunch's argument) rather than
	// appending to it, as in most forms.
	touched bool

	param   *components.Param // for a parameter
	varargs bool              // for the trailing arguments
	opt     *spec.RunOpt      // for a run option
	// swept says the parameter takes a list of values (a sweep: sweep.go); maxPar
	// marks the field of the sweep's parallelism, scriptSweep that of the script's
	// swept flags.
	swept       bool
	maxPar      bool
	scriptSweep bool
	// label is a swept field's type label and the value it is of (typeLabel).
	label struct{ of, text string }
}

// value is the field's text: the input, "true"/"false" or the chosen item.
func (f *field) value() string {
	switch f.kind {
	case kBool:
		return strconv.FormatBool(f.on)
	case kChoice:
		if f.choice < len(f.choices) {
			return f.choices[f.choice]
		}
		return ""
	}
	return f.input.Value()
}

func newText(value, placeholder string) widget.Input {
	in := widget.NewInput("")
	in.SetValue(value)
	in.Placeholder = placeholder
	return in
}

// paramField makes the field of a component parameter, filled with its default (the
// .torchxconfig one when set).
func paramField(p *components.Param, def string, hasDef bool) *field {
	if !hasDef {
		def = p.Default
		if p.Required {
			def = ""
		}
	}
	f := &field{sec: secArgs, name: p.Name, typ: p.Type.String(), help: p.Help, required: p.Required, param: p, initial: def}
	if p.Type == components.Bool {
		f.kind = kBool
		f.on, _ = spec.ParseBool(def)
		f.initial = strconv.FormatBool(f.on)
		return f
	}
	placeholder := ""
	switch {
	case p.Optional:
		placeholder = "none"
	case p.Type == components.List:
		placeholder = "a,b,c"
	case p.Type == components.Map:
		placeholder = "KEY=VALUE,KEY2=VALUE2"
	}
	f.input = newText(def, placeholder)
	return f
}

// varargsField makes the field of the trailing arguments, written as a shell would.
func varargsField(c *components.Component, def string) *field {
	return &field{
		sec: secArgs, name: "-- " + c.Varargs, typ: "args", help: c.VarargsHelp, varargs: true,
		input: newText(def, "arguments, quoted as in a shell"), initial: def,
	}
}

// optField makes the field of a run option, filled with its value from .torchxconfig
// or its default.
func optField(o *spec.RunOpt, value any) *field {
	if value == nil {
		value = o.Default
	}
	s := spec.FormatValue(value)
	f := &field{sec: secRunOpts, name: o.Name, typ: o.Type.String(), help: o.Help, required: o.Required, opt: o, initial: s}
	if o.Type == spec.OptBool {
		f.kind = kBool
		f.on, _ = value.(bool)
		f.initial = strconv.FormatBool(f.on)
		return f
	}
	f.input = newText(s, "")
	return f
}

// errRequired is the inline message of an empty required field.
var errRequired = errors.New("required")

// check validates the field alone and records the message to show beside it.
func (f *field) check() {
	f.err = ""
	if err := f.validate(); err != nil {
		f.err = err.Error()
	}
}

func (f *field) validate() error {
	v := f.value()
	switch {
	case f.kind != kText:
		return nil
	case f.swept || f.maxPar || f.scriptSweep:
		return f.checkSweep() // sweep.go
	case f.varargs:
		_, err := components.SplitWords(v)
		return err
	case strings.TrimSpace(v) == "":
		if f.required {
			return errRequired
		}
		return nil
	case f.opt != nil:
		_, err := f.opt.Cast(v)
		return trimErr(err)
	case f.param != nil:
		return checkParam(*f.param, v)
	}
	return nil
}

// checkParam parses one value with the component parser itself (a one-parameter
// component), so that the inline message is the one `wick run` would print.
func checkParam(p components.Param, v string) error {
	p.Required, p.Short = false, ""
	c := components.Component{Name: "form", Params: []components.Param{p}}
	_, err := c.Parse([]string{"--" + p.Name + "=" + v}, nil)
	return trimErr(err)
}

// trimErr keeps the reason of a parse error, dropping the part that repeats the
// field's name and value: "invalid value "x" for --n: want an integer" reads "want an
// integer" beside the field.
func trimErr(err error) error {
	if err == nil {
		return nil
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return errors.New(s[i+2:])
	}
	return err
}
