package components

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/wick-dev/wick/engine/spec"
)

// LoadFile reads the components defined in a component file.
func LoadFile(path string) ([]*Component, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFile(path, data)
}

// Limits of component files, checked before any work: a component is a few hundred
// lines at most.
const (
	// maxFileSize bounds the file.
	maxFileSize = 1 << 20
	// maxExpanded bounds the file's YAML with its aliases expanded: a few aliases
	// repeated many times (100,000 copies of one string, or aliases of aliases) would
	// otherwise make a 1 MB file gigabytes in memory.
	maxExpanded = 4 << 20
)

// readFile reads a component file: a regular file (not a FIFO that would block, not
// /dev/zero that never ends) of at most maxFileSize bytes, checked before reading.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("component file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("component file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("component file %s: not a regular file", path)
	}
	if st.Size() > maxFileSize {
		return nil, fmt.Errorf("%s: file is larger than %d bytes", path, maxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("component file: %w", err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: file is larger than %d bytes", path, maxFileSize)
	}
	return data, nil
}

// expandedSize is the size of n with every alias replaced by what it names, counted
// once per node (memo) so that the count itself stays linear; it stops counting past
// limit.
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int64, limit int64) int64 {
	if n == nil {
		return 0
	}
	if v, ok := memo[n]; ok {
		return v
	}
	memo[n] = limit + 1 // a cycle (yaml.v3 refuses them) counts as too much
	size := int64(len(n.Value) + 8)
	if n.Kind == yaml.AliasNode {
		size += expandedSize(n.Alias, memo, limit)
	}
	for _, c := range n.Content {
		if size > limit {
			break
		}
		size += expandedSize(c, memo, limit)
	}
	size = min(size, limit+1)
	memo[n] = size
	return size
}

// ParseFile reads the components of a component file whose content is data; path
// names the file in errors ("comps.yaml:12: ...") and in each component's Source.
// It checks everything it can without arguments: the structure, parameter
// declarations and defaults, that every reference names a parameter, literal
// numbers, a literal num_replicas below 1, a missing or empty entrypoint.
func ParseFile(path string, data []byte) (comps []*Component, err error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: file is larger than %d bytes", path, maxFileSize)
	}
	defer func() {
		// yaml.v3 is not known to panic on any input, but a component file must never
		// crash wick: turn a panic into an error.
		if r := recover(); r != nil {
			comps, err = nil, fmt.Errorf("%s: cannot read YAML: %v", path, r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(path, data, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: no components defined", path)
	}
	if expandedSize(&doc, map[*yaml.Node]int64{}, maxExpanded) > maxExpanded {
		return nil, fmt.Errorf("%s: the YAML expands to more than %d bytes with its aliases", path, maxExpanded)
	}
	f := &fileParser{path: path}
	root := f.resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, f.errAt(root, "want a mapping from component names to components")
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: no components defined", path)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], f.resolve(root.Content[i+1])
		name := k.Value
		if k.Kind != yaml.ScalarNode || !validComponentName(name) {
			if i == 0 {
				// Nothing says this is a component file (/etc/shadow, named by mistake or
				// not): its content is not quoted.
				return nil, f.errAt(k, "not a component file: its first key is not a component name (letters, digits, '_', '.' and '-')")
			}
			return nil, f.errAt(k, "component name %q may hold only letters, digits, '_', '.' and '-'", name)
		}
		if seen[name] {
			return nil, f.errAt(k, "component %q defined twice", name)
		}
		seen[name] = true
		c, err := f.component(name, v)
		if err != nil {
			return nil, err
		}
		comps = append(comps, c)
	}
	return comps, nil
}

// validComponentName: a name usable as path:NAME and in [component:NAME].
func validComponentName(s string) bool {
	if s == "" || len(s) > 128 || !isAlnumByte(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnumByte(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// yamlProblem is a yaml.v3 error without its "yaml: line N: " prefix.
func yamlProblem(err error) string {
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		return m[2]
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// yamlError rewrites a yaml.v3 syntax error as "path:LINE: problem". yaml.v3 reports
// the line where the enclosing block began (counting from 0 or 1 depending on the
// error, and not at all on the first line), so the line is found instead as the
// shortest prefix of the file that fails with the same problem.
func yamlError(path string, data []byte, err error) error {
	msg := yamlProblem(err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	fails := func(k int) bool {
		var n yaml.Node
		e := yaml.Unmarshal(bytes.Join(lines[:k], nil), &n)
		return e != nil && yamlProblem(e) == msg
	}
	lo, hi := 1, len(lines)
	if !fails(hi) {
		return fmt.Errorf("%s: %s", path, msg)
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return fmt.Errorf("%s:%d: %s", path, lo, msg)
}

// fileParser reads one component file.
type fileParser struct {
	path string
}

// errAt is an error at node n: "path:LINE: ...", or without a place for the builtin
// templates (path ""), whose errors the component's name prefixes instead.
func (f *fileParser) errAt(n *yaml.Node, format string, args ...any) error {
	if f.path == "" {
		return fmt.Errorf(format, args...)
	}
	return fmt.Errorf("%s:%d: %s", f.path, n.Line, fmt.Sprintf(format, args...))
}

// resolve follows aliases (yaml.v3 forbids cycles, but bound the chain anyway).
func (f *fileParser) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// fields reads a mapping with the given keys, rejecting unknown and repeated keys.
func (f *fileParser) fields(n *yaml.Node, what string, keys ...string) (map[string]*yaml.Node, error) {
	n = f.resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, f.errAt(n, "%s: want a mapping", what)
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return nil, f.errAt(k, "%s: keys must be strings", what)
		}
		known := false
		for _, want := range keys {
			known = known || k.Value == want
		}
		if !known {
			return nil, f.errAt(k, "%s: unknown key %q%s", what, k.Value, spec.DidYouMean(k.Value, keys))
		}
		if _, dup := out[k.Value]; dup {
			return nil, f.errAt(k, "%s: %s given twice", what, k.Value)
		}
		out[k.Value] = f.resolve(n.Content[i+1])
	}
	return out, nil
}

func isNull(n *yaml.Node) bool { return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// scalar reads a plain string value.
func (f *fileParser) scalar(n *yaml.Node, what string) (string, error) {
	if isNull(n) {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", f.errAt(n, "%s: want a string", what)
	}
	return n.Value, nil
}

func (f *fileParser) boolean(n *yaml.Node, what string) (bool, error) {
	s, err := f.scalar(n, what)
	if err != nil || s == "" {
		return false, err
	}
	b, err := spec.ParseBool(s)
	if err != nil {
		return false, f.errAt(n, "%s: want true or false, got %q", what, s)
	}
	return b, nil
}

// paramTypeNames are the spellings of parameter types in component files.
func paramTypeNames() map[string]ParamType {
	return map[string]ParamType{
		"string": String, "str": String,
		"int": Int, "integer": Int,
		"float": Float, "number": Float,
		"bool": Bool, "boolean": Bool,
		"list": List, "list[str]": List,
		"map": Map, "dict": Map, "dict[str,str]": Map, "dict[str, str]": Map,
	}
}

func (f *fileParser) component(name string, n *yaml.Node) (*Component, error) {
	fs, err := f.fields(n, "component "+name, "summary", "help", "params", "varargs", "varargs_help", "example", "app")
	if err != nil {
		return nil, err
	}
	c := &Component{Name: name, Source: f.path}
	if c.Summary, err = f.scalar(fs["summary"], "summary"); err != nil {
		return nil, err
	}
	if c.Help, err = f.scalar(fs["help"], "help"); err != nil {
		return nil, err
	}
	if c.Varargs, err = f.scalar(fs["varargs"], "varargs"); err != nil {
		return nil, err
	}
	if c.VarargsHelp, err = f.scalar(fs["varargs_help"], "varargs_help"); err != nil {
		return nil, err
	}
	if ex := fs["example"]; !isNull(ex) {
		if ex.Kind != yaml.SequenceNode {
			return nil, f.errAt(ex, "example: want a list of arguments")
		}
		for _, item := range ex.Content {
			s, err := f.scalar(f.resolve(item), "example")
			if err != nil {
				return nil, err
			}
			c.Example = append(c.Example, s)
		}
	}
	if ps := fs["params"]; !isNull(ps) {
		if ps.Kind != yaml.SequenceNode {
			return nil, f.errAt(ps, "params: want a list of parameters")
		}
		for _, pn := range ps.Content {
			p, err := f.param(f.resolve(pn))
			if err != nil {
				return nil, err
			}
			c.Params = append(c.Params, p)
		}
	}
	if err := c.check(); err != nil {
		at := n
		if ps := fs["params"]; ps != nil {
			at = ps
		}
		return nil, f.errAt(at, "%v", strings.TrimPrefix(err.Error(), "component "+name+": "))
	}
	appNode := fs["app"]
	if isNull(appNode) {
		return nil, f.errAt(n, "component %s: no app", name)
	}
	t := &fileComponent{path: f.path, name: name, node: n, app: appNode}
	if _, err := t.expand(c, nil); err != nil {
		return nil, err
	}
	c.template = t
	c.Build = func(a Args) (*spec.AppDef, error) { return t.expand(c, &a) }
	return c, nil
}

func (f *fileParser) param(n *yaml.Node) (Param, error) {
	fs, err := f.fields(n, "parameter", "name", "type", "default", "required", "optional", "help", "short")
	if err != nil {
		return Param{}, err
	}
	var p Param
	if p.Name, err = f.scalar(fs["name"], "name"); err != nil {
		return p, err
	}
	if p.Name == "" {
		return p, f.errAt(n, "parameter: no name")
	}
	what := "parameter " + p.Name
	if p.Help, err = f.scalar(fs["help"], what+": help"); err != nil {
		return p, err
	}
	if p.Short, err = f.scalar(fs["short"], what+": short"); err != nil {
		return p, err
	}
	typ, err := f.scalar(fs["type"], what+": type")
	if err != nil {
		return p, err
	}
	if typ != "" {
		names := paramTypeNames()
		t, ok := names[strings.ToLower(typ)]
		if !ok {
			return p, f.errAt(fs["type"], "%s: unknown type %q (want string, int, float, bool, list or map)%s", what, typ,
				spec.DidYouMean(typ, spec.SortedKeys(names)))
		}
		p.Type = t
	}
	if p.Required, err = f.boolean(fs["required"], what+": required"); err != nil {
		return p, err
	}
	if p.Optional, err = f.boolean(fs["optional"], what+": optional"); err != nil {
		return p, err
	}
	d, hasDefault := fs["default"]
	if hasDefault && isNull(d) {
		hasDefault, p.Optional = false, true
	}
	switch {
	case p.Required && p.Optional:
		return p, f.errAt(n, "%s: both required and optional", what)
	case p.Required && hasDefault:
		return p, f.errAt(d, "%s: a required parameter has no default", what)
	case !hasDefault && !p.Optional:
		p.Required = true
	}
	if hasDefault {
		if p.Default, err = f.defaultValue(d, p.Type, what); err != nil {
			return p, err
		}
		if _, _, err := p.parse(p.Default); err != nil {
			return p, f.errAt(d, "%s: bad default %q: %v", what, p.Default, err)
		}
	}
	return p, nil
}

// defaultValue reads a default written as a scalar, or as a YAML list (for a list) or
// mapping (for a map).
func (f *fileParser) defaultValue(n *yaml.Node, t ParamType, what string) (string, error) {
	switch {
	case n.Kind == yaml.SequenceNode && t == List:
		items := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			s, err := f.scalar(f.resolve(item), what+": default")
			if err != nil {
				return "", err
			}
			items = append(items, s)
		}
		return strings.Join(items, ","), nil
	case n.Kind == yaml.MappingNode && t == Map:
		var pairs []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := f.scalar(n.Content[i], what+": default")
			if err != nil {
				return "", err
			}
			v, err := f.scalar(f.resolve(n.Content[i+1]), what+": default")
			if err != nil {
				return "", err
			}
			pairs = append(pairs, k+"="+quoteMapValue(v))
		}
		return strings.Join(pairs, ","), nil
	}
	return f.scalar(n, what+": default")
}

// quoteMapValue quotes a map value holding a separator, for parseMap.
func quoteMapValue(v string) string {
	if strings.ContainsAny(v, ",;='\"") {
		if !strings.Contains(v, "'") {
			return "'" + v + "'"
		}
		return `"` + v + `"`
	}
	return v
}
