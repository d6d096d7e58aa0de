package themes

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Entry is one `key = value` line of a TOML file, with the [section] it sits in and
// its line number (from 1), for error messages.
type Entry struct {
	Section string
	Key     string
	// Value is a string, a bool, an int64 or a []string.
	Value any
	Line  int
}

// ParseTOML reads a TOML file of wick's UI (config.toml, a theme) with go-toml: the
// whole of TOML 1.0 is parsed, and the file is then read as what these files hold,
// flat keys in [section]s (no nested tables, no arrays of tables), each value a
// string, a boolean, an integer or an array of strings. Every error, of the syntax or
// of that shape, names the line, so a typo never passes silently: callers prefix the
// file's name.
func ParseTOML(data string) ([]Entry, error) {
	// The parser's walk gives each key its line (and finds a key set twice, which
	// the decoder would report without the first line); the decoder, the values.
	var p unstable.Parser
	p.Reset([]byte(data))
	var out []Entry
	first := map[string]int{} // section + "\x00" + key -> line
	section := ""
	for p.NextExpression() {
		e := p.Expression()
		parts, line := keyOf(&p, e)
		switch e.Kind {
		case unstable.ArrayTable:
			return nil, fmt.Errorf("line %d: [[%s]]: arrays of tables are not used in wick's files", line, strings.Join(parts, "."))
		case unstable.Table:
			if len(parts) != 1 {
				return nil, fmt.Errorf("line %d: [%s]: sections are not nested in wick's files", line, strings.Join(parts, "."))
			}
			section = parts[0]
		case unstable.KeyValue:
			if len(parts) != 1 {
				return nil, fmt.Errorf("line %d: %s: dotted keys are not used in wick's files", line, strings.Join(parts, "."))
			}
			id := section + "\x00" + parts[0]
			if l, ok := first[id]; ok {
				return nil, fmt.Errorf("line %d: %s is set twice (first on line %d)", line, parts[0], l)
			}
			first[id] = line
			out = append(out, Entry{Section: section, Key: parts[0], Line: line})
		}
	}
	var doc map[string]any
	if err := toml.Unmarshal([]byte(data), &doc); err != nil {
		return nil, decodeError(data, err)
	}
	if err := p.Error(); err != nil { // the decoder took it: not expected
		return nil, fmt.Errorf("toml: %w", err)
	}
	for i := range out {
		e := &out[i]
		raw := doc[e.Key]
		if e.Section != "" {
			m, _ := doc[e.Section].(map[string]any)
			raw = m[e.Key]
		}
		v, err := entryValue(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", e.Line, e.Key, err)
		}
		e.Value = v
	}
	return out, nil
}

// keyOf returns the parts of the key of a table header or key-value expression, and
// the line it is on.
func keyOf(p *unstable.Parser, e *unstable.Node) (parts []string, line int) {
	it := e.Key()
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = p.Shape(n.Raw).Start.Line
		}
		parts = append(parts, string(n.Data))
	}
	return parts, line
}

// entryValue is the value of an Entry: a string, bool, int64 or []string.
func entryValue(v any) (any, error) {
	switch v := v.(type) {
	case string, bool, int64:
		return v, nil
	case []any:
		items := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, errors.New("array items must be quoted strings")
			}
			items = append(items, s)
		}
		return items, nil
	case map[string]any:
		return nil, errors.New("a table is not used here (want a string, boolean, integer or array of strings)")
	}
	return nil, fmt.Errorf("%v (%T) is not a string, boolean, integer or array of strings", v, v)
}

// commentValue is a `key = #...` line: a color left unquoted, read as a comment.
var commentValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([A-Za-z0-9_-]+)\s*=\s*#`) })

// decodeError is go-toml's error as one line that starts with the line number.
func decodeError(data string, err error) error {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return fmt.Errorf("toml: %w", err)
	}
	row, col := de.Position()
	lines := strings.Split(data, "\n")
	if row >= 1 && row <= len(lines) {
		if m := commentValue().FindStringSubmatch(lines[row-1]); m != nil {
			return fmt.Errorf("line %d: %s: missing value ('#' starts a comment: quote colors, e.g. \"#7aa2f7\")", row, m[1])
		}
	}
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	if k := de.Key(); len(k) > 0 {
		msg = strings.Join(k, ".") + ": " + msg
	}
	return fmt.Errorf("line %d: %s (column %d)", row, msg, col)
}
