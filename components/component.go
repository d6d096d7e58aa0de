// Package components holds wick's builtin components and the loader of user components
// (YAML files). A component turns typed arguments into an AppDef.
//
// Find resolves a name (a builtin such as dist.ddp, path/to/file.yaml:NAME, or a
// component of the search path), Component.Parse turns command-line arguments into
// Args (see there for flag syntax and the precedence of defaults), and
// Component.AppDef builds and validates the AppDef.
//
// # Component files
//
// A component file is YAML: a mapping from component names to components.
//
//	train:                              # the component's name: comps.yaml:train
//	  summary: Train my model           # one line for listings
//	  help: |                           # longer help for --help
//	    ...
//	  params:                           # become flags, in this order
//	    - name: lr                      # --lr; a one-letter name is also -x
//	      type: float                   # string (default), int, float, bool, list, map
//	      default: 0.001                # no default: required (unless optional: true)
//	      help: learning rate
//	    - name: nodes
//	      short: n                      # also -n
//	      type: int
//	      default: 1
//	    - name: resume
//	      optional: true                # may be left unset: expands to nothing
//	  varargs: script_args              # trailing arguments, referenced by this name
//	  varargs_help: arguments of train.py
//	  example: [--nodes, "2"]           # sample arguments, shown by --help
//	  app:                              # the AppDef template
//	    name: train
//	    roles:
//	      - name: trainer
//	        image: ghcr.io/me/train:1.0
//	        entrypoint: python
//	        args: [train.py, --lr, "${{ lr }}", "${{ script_args }}"]
//	        env: {LOGLEVEL: INFO}
//	        num_replicas: ${{ nodes }}
//	        resource: {cpu: 2, gpu: 0, memMB: 4096}   # or {h: gpu.small}
//
// Role fields are those of spec.Role: name, image, entrypoint, args, env, num_replicas
// (default 1), min_replicas, max_retries, retry_policy (REPLICA, ROLE or APPLICATION),
// resource (cpu, gpu, memMB, h, capabilities, devices), port_map, mounts (strings in
// the --mounts syntax) and metadata; the app has name (default: the component's
// name), roles and metadata. A resource is filled in as TorchX's specs.resource does:
// a named resource h wins, and a missing or zero cpu, gpu or memMB falls back to 2, 0,
// 1024. Without a resource, the role has none (it "does not matter").
//
// References: in any string of the template, ${{ name }} takes the value of the
// parameter (or varargs) name, written back as a string: lists as a,b,c (varargs
// space-separated), maps as K=V,K2=V2, an unset optional parameter as "". Write
// ${{ name | quote }} to shell-quote it (each item of a list), for "bash -c" lines.
// A list item that is just a reference to a list (or to the varargs) expands to all of
// its items; one that refers to an unset optional parameter disappears. In env,
// metadata and the other maps, an entry whose key is just a reference to a map
// parameter, with no value ("${{ env }}":), merges that map in, and a later entry wins
// over an earlier one; an entry whose value refers to an unset optional parameter
// disappears. Inside [...] flow lists, quote references: "${{ x }}".
//
// The syntax cannot collide with wick's macros (${app_id}, ${replica_id}, ...), which
// pass through untouched to be filled in per replica. To write a literal "${{", write
// "$${{": the macro pass turns "$$" into "$" in args, env and metadata.
package components

import (
	"errors"
	"fmt"

	"github.com/wick-dev/wick/engine/spec"
)

// ErrHelp is returned by Parse when the arguments ask for help (--help, or -h for a
// component without a parameter named h): the caller prints Usage and exits 0.
var ErrHelp = errors.New("help requested")

// ParamType is the type of a component parameter.
type ParamType int

// Parameter types. Values in Args have the Go types noted.
const (
	String ParamType = iota // string
	Int                     // int
	Float                   // float64
	Bool                    // bool
	List                    // []string, written "a,b,c"
	Map                     // map[string]string, written "K=V,K2=V2"
)

// String names the type as usage text and component files spell it.
func (t ParamType) String() string {
	switch t {
	case String:
		return "string"
	case Int:
		return "int"
	case Float:
		return "float"
	case Bool:
		return "bool"
	case List:
		return "list"
	case Map:
		return "map"
	}
	return fmt.Sprintf("ParamType(%d)", int(t))
}

// Param is one parameter of a component. It becomes the flag --NAME (and -SHORT).
type Param struct {
	Name  string
	Short string
	Type  ParamType
	// Default is the default in string form; it is ignored when Required.
	Default string
	// Optional marks a parameter whose absence means "none" (TorchX's Optional[T] = None).
	Optional bool
	Required bool
	Help     string
}

// Component is a named recipe for an AppDef.
type Component struct {
	// Name is how users call it: "utils.echo", "dist.ddp", or NAME inside a YAML file.
	Name string
	// Summary is one line; Help is the long description.
	Summary string
	Help    string
	Params  []Param
	// Varargs, when not empty, names the trailing arguments (everything after the
	// flags, or after "--"), e.g. "script_args".
	Varargs     string
	VarargsHelp string
	// Source is the file a user component came from (YAML, or a TorchX .py file), or
	// "" for builtins.
	Source string
	// From is FromTorchX for a component of the user's TorchX (its AppDef is made by
	// FindOptions.External, not Build), "" for wick's own.
	From string
	// Build makes the AppDef from parsed arguments.
	Build func(Args) (*spec.AppDef, error)
	// Example is a sample argument list (e.g. ["--script", "main.py"]) that builds a
	// valid AppDef; Usage shows it and Describe builds its sample AppDef from it. Nil
	// means the defaults suffice.
	Example []string
	// template is the AppDef template of a user component (nil for builtins); Describe
	// prints it back.
	template *fileComponent
}

// AppDef builds the component's AppDef from parsed arguments and validates it
// (roles, names, entrypoints, replica counts), so that a bad app is reported before any
// scheduler sees it.
func (c *Component) AppDef(args Args) (*spec.AppDef, error) {
	if c.Build == nil {
		return nil, fmt.Errorf("component %s: no Build function", c.Name)
	}
	app, err := c.Build(args)
	if err != nil {
		if c.template != nil && c.Source != "" {
			return nil, err // "file.yaml:LINE: ..." says where already
		}
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	if app == nil {
		return nil, fmt.Errorf("%s: Build returned no AppDef", c.Name)
	}
	if err := app.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	return app, nil
}

// Args are a component's parsed arguments.
type Args struct {
	Values  map[string]any
	Varargs []string
	// Warn, when not nil, receives warnings a component issues while building (e.g.
	// dist.spmd's nproc_per_node that differs from the host's GPU count). Parse leaves
	// it nil; the caller sets it before Build.
	Warn func(msg string)
	// Named, when not nil, resolves a named resource (-h, a template's h) before wick's
	// own table: ok is false when name is not registered there. The caller sets it from
	// Lookup (the [torchx.named_resources] entry points of the user's Python, which win
	// over TorchX's own names as TorchX merges them last); Parse leaves it nil.
	Named func(name string) (r spec.Resource, ok bool, err error)
	// Warnings are what Parse noticed but let through (a default that TorchX reads
	// differently from what it seems to say); the caller shows them.
	Warnings []string
}

// warnf sends a warning to a.Warn, if set.
func (a Args) warnf(format string, v ...any) {
	if a.Warn != nil {
		a.Warn(fmt.Sprintf(format, v...))
	}
}

// String returns the string argument name, or "".
func (a Args) String(name string) string { v, _ := a.Values[name].(string); return v }

// Int returns the int argument name, or 0.
func (a Args) Int(name string) int { v, _ := a.Values[name].(int); return v }

// Float returns the float argument name, or 0.
func (a Args) Float(name string) float64 { v, _ := a.Values[name].(float64); return v }

// Bool returns the bool argument name, or false.
func (a Args) Bool(name string) bool { v, _ := a.Values[name].(bool); return v }

// List returns the list argument name, or nil.
func (a Args) List(name string) []string { v, _ := a.Values[name].([]string); return v }

// Map returns the map argument name, or nil.
func (a Args) Map(name string) map[string]string {
	v, _ := a.Values[name].(map[string]string)
	return v
}

// Has reports whether the argument name has a value (false for an unset Optional).
func (a Args) Has(name string) bool { _, ok := a.Values[name]; return ok }
