package components

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wick-dev/wick/engine/spec"
)

// FromTorchX is Component.From for a component the user's TorchX defines: a .py
// component file, an entry point of [torchx.components], or one of TorchX's builtins
// that wick has no Go copy of.
const FromTorchX = "torchx"

// ErrNoTorchX is wrapped by External's errors when there is no Python, or no TorchX
// it can import: a setup to fix, or a reason to use a YAML component.
var ErrNoTorchX = errors.New("TorchX is not importable")

// External resolves the components wick does not define itself, through the user's
// TorchX (see components/pycomp). Its components have no Build: their arguments are
// parsed, and their AppDef made, by TorchX, with Materialize.
type External interface {
	// Find returns the component name names (with its parameters), or an error
	// wrapping ErrNoSuchComponent when TorchX knows no such component.
	Find(ctx context.Context, name string) (*Component, error)
	// Materialize builds the AppDef of name from command-line arguments, parsed by
	// TorchX (defaults: the [component:NAME] section of .torchxconfig). It returns the
	// component too, when found, for its usage text; argv holding --help gives it and
	// ErrHelp.
	Materialize(ctx context.Context, name string, argv []string, defaults map[string]string) (*Component, *spec.AppDef, error)
	// All lists TorchX's components (its builtins, or those its entry points
	// register), for the listings.
	All(ctx context.Context) ([]*Component, error)
	// File lists the components of a .py component file, for the listings of the
	// search path: each is called FILE:NAME.
	File(ctx context.Context, path string) ([]*Component, error)
}

// NamedResourcer is implemented by an External that knows the named resources the
// user's Python registers as [torchx.named_resources] entry points.
type NamedResourcer interface {
	// NamedResource returns the resource the entry point name makes, ok false when no
	// entry point has that name (wick's own table answers then).
	NamedResource(ctx context.Context, name string) (r spec.Resource, ok bool, err error)
}

// IsPythonFile reports whether name is a TorchX component file name, FILE.py:FN:
// those are TorchX's, never read as YAML.
func IsPythonFile(name string) bool {
	path, _, ok := strings.Cut(name, ":")
	return ok && filepath.Ext(path) == ".py"
}

// IsExternal reports whether wick leaves name to opts.External: a .py component file,
// or a name that is neither a component file of wick's, a builtin, nor a component of
// the search path. Resolving it needs Python; wick's own components never do.
func IsExternal(name string, opts FindOptions) bool {
	if opts.External == nil {
		return false
	}
	if IsPythonFile(name) {
		return true
	}
	if _, _, ok := splitFileName(name); ok {
		return false
	}
	if slices.Contains(builtinNames, name) {
		return false
	}
	var errs []error
	for _, file := range searchFiles(opts.Dirs, &errs) {
		comps, err := LoadFile(file)
		if err != nil {
			continue
		}
		for _, c := range comps {
			if c.Name == name {
				return false
			}
		}
	}
	return true
}
