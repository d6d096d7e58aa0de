package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MountType is the kind of a mount.
type MountType string

// The mount kinds of TorchX.
const (
	MountBind   MountType = "bind"
	MountVolume MountType = "volume"
	MountDevice MountType = "device"
)

// Mount is a bind mount, a named volume or a device, by Type.
type Mount struct {
	Type MountType `json:"type"`
	// Src is a host path (bind, device) or a volume name (volume).
	Src      string `json:"src"`
	Dst      string `json:"dst"`
	ReadOnly bool   `json:"readonly,omitempty"`
	// Permissions apply to devices: a subset of "rwm".
	Permissions string `json:"permissions,omitempty"`
}

// String writes the mount back in the syntax ParseMounts reads.
func (m Mount) String() string {
	s := fmt.Sprintf("type=%s,src=%s,dst=%s", m.Type, m.Src, m.Dst)
	if m.ReadOnly {
		s += ",readonly"
	}
	if m.Type == MountDevice && m.Permissions != "" {
		s += ",permissions=" + m.Permissions
	}
	return s
}

var mountKeys = []string{"type", "src", "source", "dst", "destination", "target", "readonly", "read_only", "perm", "permissions"}

// ParseMounts reads mounts written as comma-separated tokens, each "key=value" or a bare
// flag, where every "type=" starts a new mount:
//
//	type=bind,src=/data,dst=/data,readonly,type=device,src=/dev/fuse
//
// Keys: type; src|source; dst|destination|target; readonly|read_only; perm|permissions.
// A leading "~" in a bind source is expanded.
func ParseMounts(s string) ([]Mount, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var groups [][]string
	for _, tok := range strings.Split(s, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		if strings.HasPrefix(tok, "type=") {
			groups = append(groups, nil)
		} else if len(groups) == 0 {
			return nil, fmt.Errorf("malformed mount %q: it must start with type=bind, type=volume or type=device", s)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], tok)
	}
	var out []Mount
	for _, g := range groups {
		m, err := parseMount(g)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func parseMount(toks []string) (Mount, error) {
	var m Mount
	text := strings.Join(toks, ",")
	seen := map[string]bool{}
	for _, tok := range toks {
		key, val, hasVal := strings.Cut(tok, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		canon := key
		switch key {
		case "source":
			canon = "src"
		case "destination", "target":
			canon = "dst"
		case "read_only":
			canon = "readonly"
		case "perm":
			canon = "permissions"
		}
		if seen[canon] {
			return m, fmt.Errorf("malformed mount %q: %s given twice", text, canon)
		}
		seen[canon] = true
		switch canon {
		case "type":
			m.Type = MountType(strings.ToLower(val))
		case "src":
			m.Src = val
		case "dst":
			m.Dst = val
		case "readonly":
			if hasVal {
				b, err := ParseBool(val)
				if err != nil {
					return m, fmt.Errorf("malformed mount %q: readonly: %v", text, err)
				}
				m.ReadOnly = b
			} else {
				m.ReadOnly = true
			}
		case "permissions":
			m.Permissions = val
		default:
			return m, fmt.Errorf("malformed mount %q: unknown key %q%s (valid: %s)", text, key, DidYouMean(key, mountKeys), strings.Join(mountKeys, ", "))
		}
		if canon != "readonly" && !hasVal {
			return m, fmt.Errorf("malformed mount %q: %s needs a value", text, key)
		}
	}
	switch m.Type {
	case MountBind, MountVolume:
		if m.Src == "" || m.Dst == "" {
			return m, fmt.Errorf("malformed mount %q: a %s mount needs src and dst", text, m.Type)
		}
		if m.Permissions != "" {
			return m, fmt.Errorf("malformed mount %q: permissions apply to devices only", text)
		}
		if m.Type == MountBind {
			m.Src = expandHome(m.Src)
		}
	case MountDevice:
		if m.Src == "" {
			return m, fmt.Errorf("malformed mount %q: a device mount needs src", text)
		}
		if m.Dst == "" {
			m.Dst = m.Src
		}
		if m.Permissions == "" {
			m.Permissions = "rwm"
		}
		for _, c := range m.Permissions {
			if !strings.ContainsRune("rwm", c) {
				return m, fmt.Errorf("malformed mount %q: permissions may use only r, w and m (got %q)", text, m.Permissions)
			}
		}
		if m.ReadOnly {
			return m, fmt.Errorf("malformed mount %q: use permissions, not readonly, for a device", text)
		}
	default:
		return m, fmt.Errorf("malformed mount %q: unknown type %q (want bind, volume or device)", text, m.Type)
	}
	if !strings.HasPrefix(m.Dst, "/") {
		return m, fmt.Errorf("malformed mount %q: dst must be an absolute path", text)
	}
	return m, nil
}

func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}
