package spec

import "strings"

// Macro names substituted in args, env values and metadata.
const (
	MacroAppID     = "app_id"
	MacroReplicaID = "replica_id"
	MacroImgRoot   = "img_root"
	MacroRank0Env  = "rank0_env"
)

// Rank0Env names the env var that holds rank 0's host (what ${rank0_env} expands to).
const Rank0Env = "TORCHX_RANK0_HOST"

// Macros are the values a scheduler fills in for one replica.
type Macros struct {
	AppID     string
	ReplicaID string
	ImgRoot   string
	Rank0Env  string
}

func (m Macros) lookup(name string) (string, bool) {
	switch name {
	case MacroAppID:
		return m.AppID, true
	case MacroReplicaID:
		return m.ReplicaID, true
	case MacroImgRoot:
		return m.ImgRoot, true
	case MacroRank0Env:
		return m.Rank0Env, true
	}
	return "", false
}

// Substitute fills in ${name} and $name the way Python's Template.safe_substitute does:
// known macros are replaced, unknown ones and malformed ones are left alone, and $$
// becomes $.
func (m Macros) Substitute(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		next := s[i+1]
		switch {
		case next == '$':
			b.WriteByte('$')
			i += 2
		case next == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				b.WriteByte(c)
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if !isIdent(name) {
				// Not a placeholder: keep the '$' and go on after it, as Python's
				// Template does, so that "${a ${app_id}" still fills in ${app_id}.
				b.WriteByte(c)
				i++
				continue
			}
			if v, ok := m.lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 3 + end
		case isIdentStart(next):
			j := i + 1
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			name := s[i+1 : j]
			if v, ok := m.lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i:j])
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// Apply returns a copy of role with macros substituted in args, env values and metadata
// values (never in the entrypoint or image, as in TorchX).
func (m Macros) Apply(role Role) Role {
	r := role.Clone()
	for i, a := range r.Args {
		r.Args[i] = m.Substitute(a)
	}
	for k, v := range r.Env {
		r.Env[k] = m.Substitute(v)
	}
	for k, v := range r.Metadata {
		r.Metadata[k] = m.Substitute(v)
	}
	return r
}

func isIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || '0' <= c && c <= '9' }
