package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/safefs"
)

// maxCompletedFile bounds what a completion reads of a component file.
const maxCompletedFile = 1 << 20

// isFileRef reports whether what is typed as wick run's component names a file: a
// path (./comp, ../x, /abs, ~/x, dir/) or a file of components (x.py, x.yaml, with or
// without :NAME).
func isFileRef(s string) bool {
	if strings.ContainsRune(s, '/') || strings.HasPrefix(s, "~") {
		return true
	}
	path, _, _ := strings.Cut(s, ":")
	switch filepath.Ext(path) {
	case ".py", ".yaml", ".yml":
		return true
	}
	return false
}

// completeFileRef completes a component file as wick run takes it: directories and
// .py/.yaml files under what is typed (relative to the working directory), then, for
// a whole file name, FILE:NAME for each component it defines (a .py file's top-level
// functions, read as text: a <TAB> does not start Python).
func (a *app) completeFileRef(toComplete string) ([]string, cobra.ShellCompDirective) {
	if file, _, ok := strings.Cut(toComplete, ":"); ok {
		var out []string
		for _, name := range a.componentsOfFile(file) {
			if ref := file + ":" + name; strings.HasPrefix(ref, toComplete) {
				out = append(out, ref)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	dir, base := filepath.Split(toComplete)
	entries, err := os.ReadDir(a.resolvePath(dir))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		switch ext := filepath.Ext(name); {
		case e.IsDir():
			out = append(out, dir+name+"/")
		case ext == ".py" || ext == ".yaml" || ext == ".yml":
			out = append(out, dir+name+":")
		}
	}
	if len(out) == 1 && strings.HasSuffix(out[0], ":") {
		// One file: its components straight away.
		file := strings.TrimSuffix(out[0], ":")
		for _, name := range a.componentsOfFile(file) {
			out = append(out, file+":"+name)
		}
		out = out[1:]
		if len(out) == 0 {
			out = []string{file + ":"}
		}
	}
	for _, o := range out {
		if strings.HasSuffix(o, "/") || strings.HasSuffix(o, ":") {
			// More to type after a directory or a file: no space yet.
			return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// resolvePath is p relative to the working directory, ~ expanded.
func (a *app) resolvePath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(a.env.Getenv("HOME"), rest)
	}
	if p == "" {
		return a.env.WorkDir
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(a.env.WorkDir, p)
	}
	return p
}

// componentsOfFile names the components of a .py or YAML file, without Python.
func (a *app) componentsOfFile(file string) []string {
	if filepath.Ext(file) != ".py" {
		comps, err := components.LoadFile(a.resolvePath(file))
		if err != nil {
			return nil
		}
		var out []string
		for _, c := range comps {
			out = append(out, c.Name)
		}
		return out
	}
	src, err := safefs.ReadUserFile(a.resolvePath(file), maxCompletedFile)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range pyDef().FindAllStringSubmatch(string(src), -1) {
		if !strings.HasPrefix(m[1], "_") {
			out = append(out, m[1])
		}
	}
	return out
}

// pyDef is a top-level function definition of a Python file.
var pyDef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
})

// pyParams names the parameters of function fn of a .py component file, read as
// text (the signature up to its closing parenthesis; *args, **kwargs left out).
func (a *app) pyParams(file, fn string) []string {
	src, err := safefs.ReadUserFile(a.resolvePath(file), maxCompletedFile)
	if err != nil {
		return nil
	}
	s := string(src)
	loc := regexp.MustCompile(`(?m)^def\s+` + regexp.QuoteMeta(fn) + `\s*\(`).FindStringIndex(s)
	if loc == nil {
		return nil
	}
	depth, start := 1, loc[1]
	var params []string
	add := func(part string) {
		f := strings.FieldsFunc(part, func(r rune) bool { return r == ':' || r == '=' })
		if len(f) == 0 {
			return
		}
		if name := strings.TrimSpace(f[0]); name != "" && !strings.HasPrefix(name, "*") && name != "/" && name != "self" {
			params = append(params, name)
		}
	}
	var quote byte // the quote of a string default being skipped
	for i := loc[1]; i < len(s) && depth > 0; i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
			if depth == 0 {
				add(s[start:i])
			}
		case c == ',' && depth == 1:
			add(s[start:i])
			start = i + 1
		}
	}
	return params
}
