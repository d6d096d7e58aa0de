package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// ComponentError is what is wrong with a component call: an unknown name, bad
// arguments, a request for help, or an AppDef that does not validate. It is always the
// user's input.
type ComponentError struct {
	// Component is the resolved component, when the name was found.
	Component *components.Component
	Err       error
}

func (e *ComponentError) Error() string { return e.Err.Error() }
func (e *ComponentError) Unwrap() error { return e.Err }

// Materialize resolves a component by name and builds its AppDef from command-line
// style arguments (flags, then "--" and trailing arguments). Errors are
// *ComponentError; asking for help gives one wrapping components.ErrHelp.
//
// A name wick does not define (a .py file, a TorchX entry point or builtin) goes to
// c.Find.External, in one call to the user's TorchX, which parses the arguments.
func (r *Runner) Materialize(ctx context.Context, name string, args []string, c components.Lookup) (*components.Component, *spec.AppDef, error) {
	if components.IsExternal(name, c.Find) {
		var defaults map[string]string
		if c.Defaults != nil {
			defaults = c.Defaults(name) // TorchX looks [component:NAME] up by the name as called
		}
		// A relative file is read from the External's own working directory (the
		// CLI's and the UI's are Find.WorkDir).
		comp, app, err := c.Find.External.Materialize(ctx, name, args, defaults)
		switch {
		case err == nil:
			return comp, app, nil
		case comp == nil && !components.IsPythonFile(name) &&
			(errors.Is(err, components.ErrNoSuchComponent) || errors.Is(err, components.ErrNoTorchX)):
			// Neither wick nor TorchX knows the name: wick's error, which suggests the
			// closest name.
			own := c.Find
			own.External = nil
			if _, ownErr := components.FindContext(ctx, name, own); ownErr != nil {
				if errors.Is(err, components.ErrNoTorchX) {
					// utils.booth, say: the name may be TorchX's, which is missing.
					ownErr = fmt.Errorf("%w (TorchX's components were not searched: no Python that imports torchx; see wick run --help)", ownErr)
				}
				err = ownErr
			}
		}
		return comp, nil, &ComponentError{Component: comp, Err: err}
	}
	comp, err := components.FindContext(ctx, name, c.Find)
	if err != nil {
		return nil, nil, &ComponentError{Err: err}
	}
	var defaults map[string]string
	if c.Defaults != nil {
		defaults = c.Defaults(comp.Name)
	}
	parsed, err := comp.Parse(args, defaults)
	if err != nil {
		return comp, nil, &ComponentError{Component: comp, Err: fmt.Errorf("%s: %w", comp.Name, err)}
	}
	c.Ready(ctx, &parsed)
	if c.Warn != nil {
		for _, w := range parsed.Warnings {
			c.Warn(w)
		}
	}
	app, err := comp.AppDef(parsed)
	if err != nil {
		return comp, nil, &ComponentError{Component: comp, Err: err}
	}
	return comp, app, nil
}

// DryRunComponent plans a component call on a scheduler: Materialize then DryRun.
func (r *Runner) DryRunComponent(ctx context.Context, name string, args []string, schedName string, cfg spec.Cfg, workspace string, c components.Lookup) (*sched.DryRunInfo, error) {
	comp, app, err := r.Materialize(ctx, name, args, c)
	if err != nil {
		return nil, err
	}
	info, err := r.DryRun(ctx, app, schedName, cfg, workspace)
	if err != nil {
		return nil, err
	}
	ref := comp.Name
	if comp.Source != "" {
		// The file as found now (relative names are read from Find.WorkDir): a
		// relaunch from another directory finds it too.
		src := comp.Source
		if !filepath.IsAbs(src) && c.Find.WorkDir != "" {
			src = filepath.Join(c.Find.WorkDir, src)
		}
		if abs, err := filepath.Abs(src); err == nil {
			src = abs
		}
		ref = src + ":" + comp.Name
	}
	info.Call = &sched.Call{Component: ref, Args: slices.Clone(args)}
	return info, nil
}

// BuildApp builds the AppDef of a call of comp, a component resolved already (by
// Materialize): a sweep resolves its component once for the whole grid (resolving it
// again per app, builtins' YAML and the search path, took most of a 10,000-app
// plan), except for a component of the user's TorchX, which only TorchX can build
// (name is how the user called it). Errors are *ComponentError.
func (r *Runner) BuildApp(ctx context.Context, comp *components.Component, name string, args []string, c components.Lookup) (*spec.AppDef, error) {
	if comp.From == components.FromTorchX {
		_, app, err := r.Materialize(ctx, name, args, c)
		return app, err
	}
	var defaults map[string]string
	if c.Defaults != nil {
		defaults = c.Defaults(comp.Name)
	}
	parsed, err := comp.Parse(args, defaults)
	if err != nil {
		return nil, &ComponentError{Component: comp, Err: fmt.Errorf("%s: %w", comp.Name, err)}
	}
	c.Ready(ctx, &parsed)
	app, err := comp.AppDef(parsed)
	if err != nil {
		return nil, &ComponentError{Component: comp, Err: err}
	}
	return app, nil
}
