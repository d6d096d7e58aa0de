package docker

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
)

// ignoreRule is one line of a .dockerignore file.
type ignoreRule struct {
	pattern string
	negate  bool
	re      *regexp.Regexp
}

// ignorer applies .dockerignore rules the way Docker does: patterns are matched against
// slash-separated paths relative to the context; '*' and '?' do not cross '/', '**'
// matches any number of directories; a pattern that matches a directory excludes what
// it holds; '!' re-includes; the last matching rule wins.
type ignorer struct {
	rules    []ignoreRule
	negation bool
}

// parseIgnore reads .dockerignore content.
func parseIgnore(r io.Reader) (*ignorer, error) {
	ig := &ignorer{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rule := ignoreRule{}
		if line[0] == '!' {
			rule.negate = true
			line = strings.TrimSpace(line[1:])
			ig.negation = true
		}
		p := filepath.ToSlash(filepath.Clean(line))
		if len(p) > 1 && p[0] == '/' {
			p = p[1:]
		}
		if p == "." || p == "" {
			continue
		}
		re, err := compileIgnore(p)
		if err != nil {
			return nil, fmt.Errorf(".dockerignore line %d: bad pattern %q: %v", n, line, err)
		}
		rule.pattern, rule.re = p, re
		ig.rules = append(ig.rules, rule)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading .dockerignore: %w", err)
	}
	return ig, nil
}

// excluded reports whether the slash-separated relative path is left out of the
// context: the last rule that matches it or one of its parent directories decides.
func (ig *ignorer) excluded(rel string) bool {
	if ig == nil {
		return false
	}
	out := false
	for _, r := range ig.rules {
		if r.matches(rel) {
			out = !r.negate
		}
	}
	return out
}

func (r ignoreRule) matches(rel string) bool {
	for p := rel; ; {
		if r.re.MatchString(p) {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// compileIgnore translates a Docker ignore pattern into an anchored regexp.
func compileIgnore(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteByte('^')
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				i++
				if i+1 < len(p) && p[i+1] == '/' {
					i++
					b.WriteString("(.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			end := strings.IndexByte(p[i+1:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unterminated [")
			}
			class := p[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		case '\\':
			if i+1 < len(p) {
				i++
				c = p[i]
			}
			b.WriteString(regexp.QuoteMeta(string(c)))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteByte('$')
	return regexp.Compile(b.String())
}
