package components

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wick-dev/wick/engine/spec"
)

// ErrNoSuchComponent is wrapped by the errors of Find for a name that names no
// component.
var ErrNoSuchComponent = errors.New("unknown component")

// Lookup is how a component call is resolved: where components are found, which
// argument defaults apply (.torchxconfig's [component:NAME] sections) and where its
// warnings go. The Runner takes one with every component call; the UI and the verbs
// build it.
type Lookup struct {
	Find FindOptions
	// Defaults returns the argument defaults of the named component; nil means none.
	Defaults func(name string) map[string]string
	// Warn, when not nil, receives the warnings a component gives while building its
	// AppDef (e.g. dist.ddp's -j against the host's GPUs).
	Warn func(msg string)
}

// Ready readies parsed arguments for Build: warnings go to l.Warn, and named resources
// are looked up in the entry points of l.Find.External when it reads them
// (NamedResourcer).
func (l Lookup) Ready(ctx context.Context, a *Args) {
	a.Warn = l.Warn
	if n, ok := l.Find.External.(NamedResourcer); ok {
		a.Named = func(name string) (spec.Resource, bool, error) { return n.NamedResource(ctx, name) }
	}
}

// FindOptions say where Find and All look for user components.
type FindOptions struct {
	// Dirs is the search path: directories of component files (*.yaml, *.yml), highest
	// precedence first. Missing directories are skipped. Nil means no user components
	// besides explicit files; DefaultDirs gives wick's search path.
	Dirs []string
	// WorkDir is the directory relative file names ("comps.yaml:NAME") are read from;
	// "" means the process's working directory.
	WorkDir string
	// Self is the path of the wick binary, which demo.train runs; "" means
	// os.Executable().
	Self string
	// External, when not nil, resolves what wick does not define: .py component
	// files, [torchx.components] entry points and TorchX's builtins that wick lacks,
	// through the user's TorchX. Nil: only wick's own components. It reads relative
	// .py files from its own working directory, which should be WorkDir.
	External External
}

// builtins returns the builtins made for these options (demo.train runs Self).
func (o FindOptions) builtins() []*Component { return builtins(o.Self) }

// path resolves a component file name against WorkDir.
func (o FindOptions) path(p string) string {
	if o.WorkDir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(o.WorkDir, p)
}

// DefaultDirs returns wick's search path: the project's .wick/components (under
// cwd), then wick/components under the user's config directory (configDir, i.e.
// os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config). An empty argument leaves its
// directory out.
func DefaultDirs(cwd, configDir string) []string {
	var dirs []string
	if cwd != "" {
		dirs = append(dirs, filepath.Join(cwd, ".wick", "components"))
	}
	if configDir != "" {
		dirs = append(dirs, filepath.Join(configDir, "wick", "components"))
	}
	return dirs
}

// Find resolves a component name, in this order:
//
//   - "path/to/file.yaml:NAME": component NAME of that file (the part after the last
//     ':'); a path without ":NAME" names the file's only component;
//   - a builtin, e.g. "utils.echo" (builtins cannot be shadowed);
//   - a component of the search path: the first file defining NAME, directories in
//     order, files by name;
//   - then, with opts.External, what the user's TorchX resolves ("file.py:fn" goes
//     there directly, never read as YAML).
//
// An unknown name is an error wrapping ErrNoSuchComponent that suggests the closest
// known name.
func Find(name string, opts FindOptions) (*Component, error) {
	return FindContext(context.Background(), name, opts)
}

// FindContext is Find with a context for the call to the user's TorchX (opts.External).
func FindContext(ctx context.Context, name string, opts FindOptions) (*Component, error) {
	if opts.External != nil && IsPythonFile(name) {
		return opts.External.Find(ctx, name)
	}
	if path, comp, ok := splitFileName(name); ok {
		return findInFile(path, opts.path(path), comp)
	}
	builtins := opts.builtins()
	for _, c := range builtins {
		if c.Name == name {
			return c, nil
		}
	}
	known := make([]string, 0, len(builtins))
	for _, c := range builtins {
		known = append(known, c.Name)
	}
	var loadErrs []error
	for _, file := range searchFiles(opts.Dirs, &loadErrs) {
		comps, err := LoadFile(file)
		if err != nil {
			loadErrs = append(loadErrs, err)
			continue
		}
		for _, c := range comps {
			if c.Name == name {
				return c, nil
			}
			known = append(known, c.Name)
		}
	}
	if opts.External != nil {
		// A typo of a builtin's name is more likely than a TorchX component: without
		// TorchX, or when it knows no such name either, the error is wick's own.
		c, err := opts.External.Find(ctx, name)
		if err == nil || !errors.Is(err, ErrNoSuchComponent) && !errors.Is(err, ErrNoTorchX) {
			return c, err
		}
	}
	err := fmt.Errorf("%w %q%s: `wick builtins` lists the components", ErrNoSuchComponent, name, spec.DidYouMean(name, known))
	if len(loadErrs) > 0 {
		err = fmt.Errorf("%w (and a component file could not be read: %v)", err, loadErrs[0])
	}
	return nil, err
}

// splitFileName tells a file-based name ("dir/comps.yaml:NAME", "comps.yaml") from a
// registry name ("utils.echo").
func splitFileName(name string) (path, comp string, ok bool) {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		return name[:i], name[i+1:], true
	}
	if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
		return name, "", true
	}
	return "", "", false
}

// findInFile finds component name in the file written path (read from file).
func findInFile(path, file, name string) (*Component, error) {
	if path == "" {
		return nil, fmt.Errorf("%w %q: want path/to/file.yaml:NAME", ErrNoSuchComponent, ":"+name)
	}
	data, err := readFile(file)
	if err != nil {
		return nil, err
	}
	comps, err := ParseFile(path, data)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(comps))
	for i, c := range comps {
		if c.Name == name {
			return c, nil
		}
		names[i] = c.Name
	}
	if name == "" {
		if len(comps) == 1 {
			return comps[0], nil
		}
		return nil, fmt.Errorf("%s defines %d components (%s): name one, as %s:NAME", path, len(comps), strings.Join(names, ", "), path)
	}
	return nil, fmt.Errorf("%w %q in %s%s (it defines %s)", ErrNoSuchComponent, name, path, spec.DidYouMean(name, names), strings.Join(names, ", "))
}

// searchFiles lists the component files of dirs, in search order. Directories that
// do not exist are skipped; other failures are added to errs.
func searchFiles(dirs []string, errs *[]error) []string {
	var files []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				*errs = append(*errs, fmt.Errorf("component directory: %w", err))
			}
			continue
		}
		var names []string
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		for _, n := range names {
			files = append(files, filepath.Join(dir, n))
		}
	}
	return files
}

// searchPyFiles lists the .py files of dirs, in search order; unreadable directories
// were reported by searchFiles.
func searchPyFiles(dirs []string) []string {
	var files []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries { // ReadDir sorts by name
			if !e.IsDir() && filepath.Ext(e.Name()) == ".py" {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	return files
}

// All lists the components a bare name reaches: the builtins, then the components of
// the search path in search order (leaving out those a builtin or an earlier file
// shadows), then, with opts.External, the components of the search path's .py files
// (called FILE:NAME) and TorchX's components that none of those shadows (From is
// FromTorchX). It is what `wick builtins` and the UI's picker show. Each
// file that cannot be read gives one error (errors.Join them for a single error); the
// components of the other files are still returned. A TorchX that cannot be
// imported adds nothing and no error: wick's own components need no Python.
func All(opts FindOptions) ([]*Component, []error) {
	return AllContext(context.Background(), opts)
}

// AllContext is All with a context for the call to the user's TorchX.
func AllContext(ctx context.Context, opts FindOptions) ([]*Component, []error) {
	comps := opts.builtins()
	seen := map[string]bool{}
	for _, c := range comps {
		seen[c.Name] = true
	}
	var errs []error
	for _, file := range searchFiles(opts.Dirs, &errs) {
		fc, err := LoadFile(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range fc {
			if !seen[c.Name] {
				seen[c.Name] = true
				comps = append(comps, c)
			}
		}
	}
	if opts.External != nil {
		// .py component files of the search path, listed as FILE:NAME (never by a
		// bare name: TorchX has no search path, a file's components are its own).
		for _, file := range searchPyFiles(opts.Dirs) {
			fc, err := opts.External.File(ctx, file)
			if err != nil {
				if !errors.Is(err, ErrNoTorchX) {
					errs = append(errs, err)
				}
				continue
			}
			comps = append(comps, fc...)
		}
		ext, err := opts.External.All(ctx)
		if err != nil && !errors.Is(err, ErrNoTorchX) {
			errs = append(errs, err)
		}
		for _, c := range ext {
			if !seen[c.Name] {
				seen[c.Name] = true
				comps = append(comps, c)
			}
		}
	}
	return comps, errs
}
