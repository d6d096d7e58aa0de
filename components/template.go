package components

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wick-dev/wick/engine/spec"
)

// fileComponent is the AppDef template of a component read from a file.
type fileComponent struct {
	path, name string
	node       *yaml.Node // the component's whole definition
	app        *yaml.Node // its app template
}

// expand builds the AppDef for args; with args nil it only checks the template
// (references, structure, literal values), as ParseFile does.
func (t *fileComponent) expand(c *Component, args *Args) (*spec.AppDef, error) {
	e := &expander{f: &fileParser{path: t.path}, c: c, args: args}
	return e.appDef(t.app, t.name)
}

// tmplPart is a piece of a template string: literal text, or a reference.
type tmplPart struct {
	lit   string
	ref   string // the parameter referred to; "" for literal text
	quote bool   // ${{ ref | quote }}
}

// parseTemplate splits s into literal text and ${{ name }} / ${{ name | quote }}
// references. "$$" is kept as is (the macro pass reads it), so "$${{" is literal.
func parseTemplate(s string) ([]tmplPart, error) {
	if !strings.Contains(s, "${{") {
		return []tmplPart{{lit: s}}, nil
	}
	var parts []tmplPart
	var lit strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			lit.WriteString("$$")
			i += 2
		case strings.HasPrefix(s[i:], "${{"):
			end := strings.Index(s[i+3:], "}}")
			if end < 0 {
				return nil, fmt.Errorf("unterminated reference in %q: want ${{ name }}", s)
			}
			inner := s[i+3 : i+3+end]
			name, filter, hasFilter := strings.Cut(inner, "|")
			name, filter = strings.TrimSpace(name), strings.TrimSpace(filter)
			if !isIdentifier(name) || hasFilter && filter != "quote" {
				return nil, fmt.Errorf("bad reference ${{%s}}: want ${{ name }} or ${{ name | quote }}", inner)
			}
			if lit.Len() > 0 {
				parts = append(parts, tmplPart{lit: lit.String()})
				lit.Reset()
			}
			parts = append(parts, tmplPart{ref: name, quote: hasFilter})
			i += 3 + end + 2
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	if lit.Len() > 0 || len(parts) == 0 {
		parts = append(parts, tmplPart{lit: lit.String()})
	}
	return parts, nil
}

// expander expands a template node by node; with args nil it checks only.
type expander struct {
	f    *fileParser
	c    *Component
	args *Args
}

func (e *expander) checking() bool { return e.args == nil }

// parts parses a scalar's template and checks its references.
func (e *expander) parts(n *yaml.Node, what string) ([]tmplPart, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, e.f.errAt(n, "%s: want a string", what)
	}
	parts, err := parseTemplate(n.Value)
	if err != nil {
		return nil, e.f.errAt(n, "%s: %v", what, err)
	}
	for _, p := range parts {
		if p.ref == "" || p.ref == e.c.Varargs || e.c.param(p.ref) != nil {
			continue
		}
		names := e.c.paramNames()
		if e.c.Varargs != "" {
			names = append(names, e.c.Varargs)
		}
		return nil, e.f.errAt(n, "%s: unknown parameter %q in %q%s", what, p.ref, n.Value, spec.DidYouMean(p.ref, names))
	}
	return parts, nil
}

// single reports the parameter a template refers to when it is exactly one
// unfiltered reference.
func single(parts []tmplPart) string {
	if len(parts) == 1 && !parts[0].quote {
		return parts[0].ref
	}
	return ""
}

// value is the argument a reference names; ok is false when unset (or checking).
func (e *expander) value(ref string) (any, bool) {
	if e.args == nil {
		return nil, false
	}
	if ref == e.c.Varargs {
		return e.args.Varargs, len(e.args.Varargs) > 0
	}
	v, ok := e.args.Values[ref]
	return v, ok
}

// text writes a reference in a string: lists joined with ',' (varargs with ' '), maps
// as K=V pairs, unset as ""; quoted, every list item is shell-quoted and joined with
// ' '.
func (e *expander) text(p tmplPart) string {
	if p.ref == "" {
		return p.lit
	}
	v, ok := e.value(p.ref)
	if !ok {
		return ""
	}
	if l, isList := v.([]string); isList {
		if p.quote {
			return shellJoin(l)
		}
		if p.ref == e.c.Varargs {
			return strings.Join(l, " ")
		}
		return strings.Join(l, ",")
	}
	if p.quote {
		return ShellQuote(formatValue(v))
	}
	return formatValue(v)
}

// str expands a string field; hasRef says whether it held a reference.
func (e *expander) str(n *yaml.Node, what string) (s string, hasRef bool, err error) {
	if isNull(n) {
		return "", false, nil
	}
	parts, err := e.parts(n, what)
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, p := range parts {
		hasRef = hasRef || p.ref != ""
		b.WriteString(e.text(p))
	}
	return b.String(), hasRef, nil
}

// list expands a list field: a sequence, or a single string meaning one item.
func (e *expander) list(n *yaml.Node, what string) ([]string, bool, error) {
	if isNull(n) {
		return nil, false, nil
	}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	out := []string{}
	hasRef := false
	for _, item := range items {
		item = e.f.resolve(item)
		if isNull(item) {
			return nil, false, e.f.errAt(item, "%s: empty item (write \"\" for an empty string)", what)
		}
		parts, err := e.parts(item, what)
		if err != nil {
			return nil, false, err
		}
		if len(parts) == 1 && parts[0].ref != "" {
			hasRef = true
			v, ok := e.value(parts[0].ref)
			if !ok {
				continue
			}
			if l, isList := v.([]string); isList && !parts[0].quote {
				out = append(out, l...)
				continue
			}
		}
		var b strings.Builder
		for _, p := range parts {
			hasRef = hasRef || p.ref != ""
			b.WriteString(e.text(p))
		}
		out = append(out, b.String())
	}
	return out, hasRef, nil
}

// entries walks a map field: a mapping, or a single reference to a map parameter.
// For each entry it calls set with the expanded key and value node; a "${{ m }}:" key
// merges map parameter m.
func (e *expander) entries(n *yaml.Node, what string, set func(key string, keyNode, val *yaml.Node) error, merge func(*yaml.Node, map[string]string) error) error {
	if isNull(n) {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		parts, err := e.parts(n, what)
		if err != nil {
			return err
		}
		ref := single(parts)
		if ref == "" || e.c.param(ref) == nil || e.c.param(ref).Type != Map {
			return e.f.errAt(n, "%s: want a mapping, or a reference to a map parameter", what)
		}
		if v, ok := e.value(ref); ok {
			if m, isMap := v.(map[string]string); isMap {
				return merge(n, m)
			}
		}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return e.f.errAt(n, "%s: want a mapping", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], e.f.resolve(n.Content[i+1])
		parts, err := e.parts(kn, what)
		if err != nil {
			return err
		}
		if ref := single(parts); ref != "" && isNull(vn) {
			p := e.c.param(ref)
			if p == nil || p.Type != Map {
				return e.f.errAt(kn, "%s: %q merges a map, but %s is not a map parameter", what, kn.Value, ref)
			}
			if v, ok := e.value(ref); ok {
				if m, isMap := v.(map[string]string); isMap {
					if err := merge(kn, m); err != nil {
						return err
					}
				}
			}
			continue
		}
		key, hasRef, _ := e.str(kn, what)
		if !hasRef {
			if seen[key] {
				return e.f.errAt(kn, "%s: key %q given twice", what, key)
			}
			seen[key] = true
		}
		if key == "" && !(hasRef && e.checking()) {
			return e.f.errAt(kn, "%s: empty key", what)
		}
		if err := set(key, kn, vn); err != nil {
			return err
		}
	}
	return nil
}

// strMap expands a map of strings (env, metadata, capabilities).
func (e *expander) strMap(n *yaml.Node, what string) (map[string]string, error) {
	out := map[string]string{}
	err := e.entries(n, what, func(key string, _, vn *yaml.Node) error {
		if vn.Kind != yaml.ScalarNode {
			return e.f.errAt(vn, "%s: %s: want a string", what, key)
		}
		parts, err := e.parts(vn, what)
		if err != nil {
			return err
		}
		if ref := single(parts); ref != "" {
			if _, ok := e.value(ref); !ok {
				return nil
			}
		}
		s, _, err := e.str(vn, what)
		if err != nil {
			return err
		}
		out[key] = s
		return nil
	}, func(_ *yaml.Node, m map[string]string) error { maps.Copy(out, m); return nil })
	return out, err
}

// integer expands an int field; set is false when it is absent or expands to "".
func (e *expander) integer(n *yaml.Node, what string) (v int, set bool, err error) {
	if isNull(n) {
		return 0, false, nil
	}
	s, hasRef, err := e.str(n, what)
	if err != nil {
		return 0, false, err
	}
	if hasRef && (e.checking() || strings.TrimSpace(s) == "") {
		return 0, false, nil
	}
	v, err = strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, false, e.f.errAt(n, "%s: %q is not an int", what, s)
	}
	return v, true, nil
}

// intMap expands a map of ints (port_map, devices).
func (e *expander) intMap(n *yaml.Node, what string) (map[string]int, error) {
	out := map[string]int{}
	err := e.entries(n, what, func(key string, _, vn *yaml.Node) error {
		v, set, err := e.integer(vn, what+": "+key)
		if err != nil || !set {
			return err
		}
		out[key] = v
		return nil
	}, func(at *yaml.Node, m map[string]string) error {
		for _, k := range spec.SortedKeys(m) {
			v, err := strconv.Atoi(strings.TrimSpace(m[k]))
			if err != nil {
				return e.f.errAt(at, "%s: %s=%q is not an int", what, k, m[k])
			}
			out[k] = v
		}
		return nil
	})
	return out, err
}

func (e *expander) appDef(n *yaml.Node, defaultName string) (*spec.AppDef, error) {
	fs, err := e.f.fields(n, "app", "name", "roles", "metadata")
	if err != nil {
		return nil, err
	}
	app := &spec.AppDef{Name: defaultName}
	if name, hasRef, err := e.str(fs["name"], "app: name"); err != nil {
		return nil, err
	} else if fs["name"] != nil && (name != "" || !hasRef) {
		app.Name = name
	}
	if md, err := e.strMap(fs["metadata"], "app: metadata"); err != nil {
		return nil, err
	} else if len(md) > 0 {
		app.Metadata = md
	}
	roles := fs["roles"]
	if isNull(roles) || roles.Kind != yaml.SequenceNode || len(roles.Content) == 0 {
		at := n
		if roles != nil {
			at = roles
		}
		return nil, e.f.errAt(at, "app: roles: want a list of at least one role")
	}
	for _, rn := range roles.Content {
		r, err := e.role(e.f.resolve(rn))
		if err != nil {
			return nil, err
		}
		app.Roles = append(app.Roles, r)
	}
	return app, nil
}

func (e *expander) role(n *yaml.Node) (spec.Role, error) {
	fs, err := e.f.fields(n, "role", "name", "image", "entrypoint", "args", "env", "num_replicas",
		"min_replicas", "max_retries", "retry_policy", "resource", "port_map", "mounts", "metadata")
	if err != nil {
		return spec.Role{}, err
	}
	r := spec.NewRole("", "", "")
	name, hasRef, err := e.str(fs["name"], "role: name")
	if err != nil {
		return r, err
	}
	if name == "" && !(hasRef && e.checking()) {
		return r, e.f.errAt(n, "role: no name")
	}
	r.Name = name
	what := "role " + name
	if err := e.roleCommand(n, fs, what, &r); err != nil {
		return r, err
	}
	if err := e.roleReplicas(fs, what, &r); err != nil {
		return r, err
	}
	if err := e.roleHost(fs, what, &r); err != nil {
		return r, err
	}
	return r, nil
}

// roleCommand reads what role n runs: its image, entrypoint, args and env.
func (e *expander) roleCommand(n *yaml.Node, fs map[string]*yaml.Node, what string, r *spec.Role) error {
	var err error
	if r.Image, _, err = e.str(fs["image"], what+": image"); err != nil {
		return err
	}
	ep, hasRef, err := e.str(fs["entrypoint"], what+": entrypoint")
	if err != nil {
		return err
	}
	if ep == "" && !(hasRef && e.checking()) {
		at := n
		if fs["entrypoint"] != nil {
			at = fs["entrypoint"]
		}
		return e.f.errAt(at, "%s: %v", what, spec.ErrEmptyEntrypoint)
	}
	r.Entrypoint = ep
	if r.Args, _, err = e.list(fs["args"], what+": args"); err != nil {
		return err
	}
	if r.Args == nil {
		r.Args = []string{}
	}
	r.Env, err = e.strMap(fs["env"], what+": env")
	return err
}

// roleReplicas reads how many replicas a role runs and how they are retried.
func (e *expander) roleReplicas(fs map[string]*yaml.Node, what string, r *spec.Role) error {
	if v, set, err := e.integer(fs["num_replicas"], what+": num_replicas"); err != nil {
		return err
	} else if set {
		if v < 1 {
			return e.f.errAt(fs["num_replicas"], "%s: %v (got %d)", what, spec.ErrBadReplicas, v)
		}
		r.NumReplicas = v
	}
	if v, set, err := e.integer(fs["min_replicas"], what+": min_replicas"); err != nil {
		return err
	} else if set {
		r.MinReplicas = v
	}
	if v, set, err := e.integer(fs["max_retries"], what+": max_retries"); err != nil {
		return err
	} else if set {
		r.MaxRetries = v
	}
	if rp, hasRef, err := e.str(fs["retry_policy"], what+": retry_policy"); err != nil {
		return err
	} else if !(hasRef && e.checking()) {
		p, err := spec.ParseRetryPolicy(rp)
		if err != nil {
			return e.f.errAt(fs["retry_policy"], "%s: %v", what, err)
		}
		r.RetryPolicy = p
	}
	return nil
}

// roleHost reads what a role takes of its host: its resource, ports, mounts, and
// the metadata schedulers read.
func (e *expander) roleHost(fs map[string]*yaml.Node, what string, r *spec.Role) error {
	var err error
	if r.Resource, err = e.resource(fs["resource"], what+": resource"); err != nil {
		return err
	}
	if pm, err := e.intMap(fs["port_map"], what+": port_map"); err != nil {
		return err
	} else if len(pm) > 0 {
		r.PortMap = pm
	}
	if mounts, hasRef, err := e.list(fs["mounts"], what+": mounts"); err != nil {
		return err
	} else if len(mounts) > 0 && !(hasRef && e.checking()) {
		if r.Mounts, err = spec.ParseMounts(strings.Join(mounts, ",")); err != nil {
			return e.f.errAt(fs["mounts"], "%s: %v", what+": mounts", err)
		}
	}
	if md, err := e.strMap(fs["metadata"], what+": metadata"); err != nil {
		return err
	} else if len(md) > 0 {
		r.Metadata = md
	}
	return nil
}

func (e *expander) resource(n *yaml.Node, what string) (spec.Resource, error) {
	if isNull(n) {
		return spec.NullResource, nil
	}
	fs, err := e.f.fields(n, what, "cpu", "gpu", "memMB", "h", "capabilities", "devices")
	if err != nil {
		return spec.Resource{}, err
	}
	var vals [3]int
	for i, k := range []string{"cpu", "gpu", "memMB"} {
		if vals[i], _, err = e.integer(fs[k], what+": "+k); err != nil {
			return spec.Resource{}, err
		}
	}
	h, hasRef, err := e.str(fs["h"], what+": h")
	if err != nil {
		return spec.Resource{}, err
	}
	if hasRef && e.checking() {
		h = ""
	}
	// A literal h is checked against wick's own names at load (no entry points then);
	// when building, the caller's Named (entry points) answers first.
	var res spec.Resource
	if e.checking() {
		res, err = spec.ResourceOf(vals[0], vals[1], vals[2], h)
	} else {
		res, err = e.args.resource(vals[0], vals[1], vals[2], h)
	}
	if err != nil {
		return spec.Resource{}, e.f.errAt(fs["h"], "%s: %v", what, err)
	}
	caps, err := e.strMap(fs["capabilities"], what+": capabilities")
	if err != nil {
		return spec.Resource{}, err
	}
	if len(caps) > 0 {
		if res.Capabilities == nil {
			res.Capabilities = map[string]string{}
		}
		maps.Copy(res.Capabilities, caps)
	}
	devs, err := e.intMap(fs["devices"], what+": devices")
	if err != nil {
		return spec.Resource{}, err
	}
	if len(devs) > 0 {
		if res.Devices == nil {
			res.Devices = map[string]int{}
		}
		maps.Copy(res.Devices, devs)
	}
	return res, nil
}
