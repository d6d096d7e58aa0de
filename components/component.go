// Package components holds wick's builtin components and the loader of user components
// (YAML files). A component turns typed arguments into an AppDef.
package components

import (
	"github.com/wick-dev/wick/engine/spec"
)

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
	// Source is the YAML file a user component came from, or "" for builtins.
	Source string
	// Build makes the AppDef from parsed arguments.
	Build func(Args) (*spec.AppDef, error)
}

// Args are a component's parsed arguments.
type Args struct {
	Values  map[string]any
	Varargs []string
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
func (a Args) Map(name string) map[string]string { v, _ := a.Values[name].(map[string]string); return v }

// Has reports whether the argument name has a value (false for an unset Optional).
func (a Args) Has(name string) bool { _, ok := a.Values[name]; return ok }
