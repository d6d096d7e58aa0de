package config

import (
	"fmt"
	"strings"

	"github.com/wick-dev/wick/engine/spec"
)

// File is one parsed config file.
type File struct {
	Path     string     // where it was read from
	Sections []*Section // in file order
}

// Section is a [NAME] section and its entries in file order.
type Section struct {
	Name    string  // between the brackets, e.g. "local_cwd" or "component:dist.ddp"
	Line    int     // of the header, from 1
	Entries []Entry // in file order
}

// Entry is one key and its value (interpolated, continuation lines joined with
// "\n"), with the line of its key.
type Entry struct {
	Key, Value string
	Line       int // of the key, from 1
}

// Section returns the section named name, or nil.
func (f *File) Section(name string) *Section {
	for _, s := range f.Sections {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Get returns the value of key, and whether the section has it.
func (s *Section) Get(key string) (string, bool) {
	for _, e := range s.Entries {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// SyntaxError is a config file that cannot be read; it prints as "PATH:LINE: MSG".
type SyntaxError struct {
	Path string // the file
	Line int    // from 1
	Msg  string // what is wrong
}

// Error formats the error as "PATH:LINE: MSG".
func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg) }

// maxInterpolationDepth is configparser's MAX_INTERPOLATION_DEPTH.
const maxInterpolationDepth = 10

// Parse reads a config file's content with the rules of Python's configparser as
// TorchX sets it up: case-sensitive keys, '=' or ':' between key and value (the
// first of them on the line), whitespace around both trimmed, full-line comments
// (# or ;, possibly indented), no inline comments, values continued on more-indented
// lines, %(key)s interpolation within the section and %% for %. A key outside any
// section, a line that is not "key = value", and a section or a key given twice in
// one file are errors, as in configparser's strict mode; wick also rejects [DEFAULT],
// whose values configparser would copy into every section. path names the file in
// errors.
func Parse(path string, data []byte) (*File, error) {
	text := strings.TrimPrefix(string(data), "\ufeff")
	f := &File{Path: path}
	fail := func(line int, format string, args ...any) (*File, error) {
		return nil, &SyntaxError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	var (
		cur       *Section
		entry     *Entry // the entry continuation lines extend
		indent    int    // the indentation of entry's key
		blanks    int    // blank lines seen inside entry's value
		seenSects = map[string]bool{}
		seenKeys  map[string]bool
	)
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		line = strings.TrimSuffix(line, "\r")
		stripped := strings.TrimSpace(line)
		lineIndent := len(line) - len(strings.TrimLeft(line, " \t"))
		switch {
		case stripped == "":
			if entry != nil {
				blanks++
			}
			continue
		case stripped[0] == '#' || stripped[0] == ';':
			continue
		case entry != nil && lineIndent > indent:
			entry.Value += strings.Repeat("\n", blanks+1) + stripped
			blanks = 0
			continue
		}
		entry, blanks = nil, 0
		if stripped[0] == '[' {
			end := strings.LastIndexByte(stripped, ']')
			if end < 0 {
				return fail(n, "section header %q has no closing ]", stripped)
			}
			name := stripped[1:end]
			if name == "" {
				return fail(n, "empty section name")
			}
			if name == "DEFAULT" {
				return fail(n, "[DEFAULT] is not supported: put the keys in the sections that use them")
			}
			if seenSects[name] {
				return fail(n, "section [%s] given twice", name)
			}
			seenSects[name] = true
			cur = &Section{Name: name, Line: n}
			f.Sections = append(f.Sections, cur)
			seenKeys = map[string]bool{}
			continue
		}
		if cur == nil {
			return fail(n, "%q is outside any section (start the file with a [section] header)", stripped)
		}
		j := strings.IndexAny(stripped, "=:")
		if j < 0 {
			return fail(n, "want KEY = VALUE, got %q", stripped)
		}
		key := strings.TrimSpace(stripped[:j])
		if key == "" {
			return fail(n, "empty key in %q", stripped)
		}
		if seenKeys[key] {
			return fail(n, "[%s] %s given twice", cur.Name, key)
		}
		seenKeys[key] = true
		cur.Entries = append(cur.Entries, Entry{Key: key, Value: strings.TrimSpace(stripped[j+1:]), Line: n})
		entry, indent = &cur.Entries[len(cur.Entries)-1], lineIndent
	}
	for _, s := range f.Sections {
		raw := make(map[string]string, len(s.Entries))
		for _, e := range s.Entries {
			raw[e.Key] = e.Value
		}
		for i := range s.Entries {
			e := &s.Entries[i]
			v, err := interpolate(raw, e.Value, 1)
			if err != nil {
				return fail(e.Line, "[%s] %s: %v", s.Name, e.Key, err)
			}
			e.Value = v
		}
		if s.Name == "cli:run" {
			keys := cliRunKeys()
			for _, e := range s.Entries {
				known := false
				for _, k := range keys {
					known = known || k == e.Key
				}
				if !known {
					return fail(e.Line, "[cli:run] unknown key %q (want %s)%s", e.Key, strings.Join(keys, ", "),
						spec.DidYouMean(e.Key, keys))
				}
			}
		}
	}
	return f, nil
}

// interpolate applies configparser's BasicInterpolation: %% is %, %(key)s is the
// value of key in the same section (itself interpolated).
func interpolate(raw map[string]string, v string, depth int) (string, error) {
	if !strings.Contains(v, "%") {
		return v, nil
	}
	if depth > maxInterpolationDepth {
		return "", fmt.Errorf("interpolation nests deeper than %d levels (a %%(key)s loop?)", maxInterpolationDepth)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		switch {
		case i+1 < len(v) && v[i+1] == '%':
			b.WriteByte('%')
			i++
		case i+1 < len(v) && v[i+1] == '(':
			end := strings.Index(v[i:], ")s")
			if end < 0 {
				return "", fmt.Errorf("bad interpolation in %q: want %%(key)s", v)
			}
			name := v[i+2 : i+end]
			ref, ok := raw[name]
			if !ok {
				return "", fmt.Errorf("%%(%s)s names no key of this section (write %%%% for a literal %%)", name)
			}
			s, err := interpolate(raw, ref, depth+1)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
			i += end + 1
		default:
			return "", fmt.Errorf("'%%' must be followed by '%%' or '(' in %q (write %%%% for a literal %%)", v)
		}
	}
	return b.String(), nil
}
