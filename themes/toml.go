package themes

import (
	"fmt"
	"strconv"
	"strings"
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

// ParseTOML reads the subset of TOML that wick's UI files use: comments, [section]
// headers, and `key = value` lines whose value is a string ("basic" or 'literal'), a
// boolean, an integer or a one-line array of strings. Anything else is an error naming
// the line, so a typo never passes silently. It is a subset on purpose: theme and
// settings files are a handful of flat keys, and this keeps wick free of a TOML
// dependency.
func ParseTOML(data string) ([]Entry, error) {
	var out []Entry
	section := ""
	for i, raw := range strings.Split(data, "\n") {
		n := i + 1
		line := strings.TrimSpace(stripComment(raw))
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") || strings.HasPrefix(line, "[[") {
				return nil, fmt.Errorf("line %d: malformed section header %q", n, line)
			}
			section = strings.TrimSpace(line[1 : len(line)-1])
			if !isBareKey(section) {
				return nil, fmt.Errorf("line %d: section name %q may hold only letters, digits, '_' and '-'", n, section)
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want key = value, got %q", n, line)
		}
		k = strings.TrimSpace(k)
		if !isBareKey(k) {
			return nil, fmt.Errorf("line %d: key %q may hold only letters, digits, '_' and '-'", n, k)
		}
		v = strings.TrimSpace(v)
		if v == "" && strings.Contains(raw, "#") {
			return nil, fmt.Errorf("line %d: %s: missing value ('#' starts a comment: quote colors, e.g. \"#7aa2f7\")", n, k)
		}
		val, err := parseValue(v)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", n, k, err)
		}
		for _, e := range out {
			if e.Section == section && e.Key == k {
				return nil, fmt.Errorf("line %d: %s is set twice (first on line %d)", n, k, e.Line)
			}
		}
		out = append(out, Entry{Section: section, Key: k, Value: val, Line: n})
	}
	return out, nil
}

// stripComment removes a '#' comment that is outside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return s[:i]
		}
	}
	return s
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

func parseValue(s string) (any, error) {
	switch {
	case s == "":
		return nil, fmt.Errorf("missing value")
	case s == "true":
		return true, nil
	case s == "false":
		return false, nil
	case s[0] == '"' || s[0] == '\'':
		str, rest, err := parseString(s)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(rest) != "" {
			return nil, fmt.Errorf("unexpected %q after the string", rest)
		}
		return str, nil
	case s[0] == '[':
		return parseArray(s)
	}
	if v, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64); err == nil {
		return v, nil
	}
	return nil, fmt.Errorf("%s is not a string, boolean, integer or array of strings (strings need quotes)", s)
}

// parseString reads a quoted string at the start of s and returns it and what follows.
func parseString(s string) (str, rest string, err error) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q:
			if q == '\'' {
				return s[1:i], s[i+1:], nil
			}
			str, err := strconv.Unquote(s[:i+1])
			if err != nil {
				return "", "", fmt.Errorf("bad escape in %s", s[:i+1])
			}
			return str, s[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("unterminated string %s", s)
}

func parseArray(s string) ([]string, error) {
	if !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("arrays must close on the same line")
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	items := []string{}
	for body != "" {
		if body[0] != '"' && body[0] != '\'' {
			return nil, fmt.Errorf("array items must be quoted strings")
		}
		str, rest, err := parseString(body)
		if err != nil {
			return nil, err
		}
		items = append(items, str)
		rest = strings.TrimSpace(rest)
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("want ',' between array items")
		}
		body = strings.TrimSpace(rest[1:])
	}
	return items, nil
}
