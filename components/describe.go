package components

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wick-dev/wick/engine/spec"
)

// Describe returns the component written as a component file (see ParseFile), a
// starting point for a component of one's own (`wick builtins --print NAME`). A user
// component is printed as defined. A builtin is printed with its parameters and an app
// template: wherever a parameter flows into the AppDef unchanged, the template refers
// to it (${{ name }}); what the builtin computes in Go (dist.ddp's -j, for one) is
// written out as built for the component's Example arguments, and a comment says
// which parameters those are. Loading the output and running it with the Example
// arguments builds the same AppDef as the builtin.
func (c *Component) Describe() string {
	if c.template != nil {
		return c.describeFile()
	}
	short := c.Name
	if i := strings.LastIndexByte(short, '.'); i >= 0 && i < len(short)-1 {
		short = short[i+1:]
	}
	var head strings.Builder
	fmt.Fprintf(&head, "%s, written as a wick component file. Save it (e.g. as my.yaml) and run\n", c.Name)
	fmt.Fprintf(&head, "  wick run my.yaml:%s", short)
	if len(c.Example) > 0 {
		head.WriteString(" " + shellJoin(c.Example))
	}
	head.WriteString("\nParameters become flags; in the app, ${{ name }} takes a parameter's value\n" +
		"and ${{ name | quote }} shell-quotes it.")

	app, fixed, err := c.inferTemplate()
	if err != nil {
		fmt.Fprintf(&head, "\nNo sample AppDef: %v", err)
	} else if len(fixed) > 0 {
		fmt.Fprintf(&head, "\n%s computes part of its AppDef in Go from %s:\nthe app below is written out for the example arguments.",
			c.Name, strings.Join(fixed, ", "))
	}

	body := &yaml.Node{Kind: yaml.MappingNode}
	addField := func(k string, v *yaml.Node) { body.Content = append(body.Content, strNode(k), v) }
	if c.Summary != "" {
		addField("summary", strNode(c.Summary))
	}
	if h := strings.TrimSpace(c.Help); h != "" {
		n := strNode(h + "\n")
		if strings.Contains(h, "\n") {
			n.Style = yaml.LiteralStyle
		}
		addField("help", n)
	}
	if len(c.Params) > 0 {
		ps := &yaml.Node{Kind: yaml.SequenceNode}
		for _, p := range c.Params {
			ps.Content = append(ps.Content, paramNode(p))
		}
		addField("params", ps)
	}
	if c.Varargs != "" {
		addField("varargs", strNode(c.Varargs))
		if c.VarargsHelp != "" {
			addField("varargs_help", strNode(c.VarargsHelp))
		}
	}
	if len(c.Example) > 0 {
		addField("example", strList(c.Example, yaml.FlowStyle))
	}
	if app != nil {
		addField("app", app)
	}
	key := strNode(short)
	key.HeadComment = head.String()
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key, body}}
	return encodeYAML(doc)
}

// describeFile prints a component file's definition back: a user's, or a builtin that
// is a template (components/builtins/utils.yaml).
func (c *Component) describeFile() string {
	key := strNode(c.template.name)
	key.HeadComment = fmt.Sprintf("%s, from %s", c.template.name, c.template.path)
	if c.Source == "" {
		head := fmt.Sprintf("%s, a builtin written as a wick component file. Save it (e.g. as my.yaml) and run\n  wick run my.yaml:%s", c.Name, c.Name)
		if len(c.Example) > 0 {
			head += " " + shellJoin(c.Example)
		}
		key.HeadComment = head + "\nParameters become flags; in the app, ${{ name }} takes a parameter's value\n" +
			"and ${{ name | quote }} shell-quotes it."
	}
	return encodeYAML(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key, c.template.node}})
}

func encodeYAML(n *yaml.Node) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return fmt.Sprintf("# cannot encode: %v\n", err)
	}
	_ = enc.Close()
	return b.String()
}

func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// scalarNode writes a default of type t plainly when YAML reads it back as the same
// text (2, 0.5, true), and quoted otherwise.
func scalarNode(v string, t ParamType) *yaml.Node {
	n := strNode(v)
	if t == Int || t == Float || t == Bool {
		var probe yaml.Node
		if err := yaml.Unmarshal([]byte(v), &probe); err == nil && len(probe.Content) == 1 {
			if k := probe.Content[0]; k.Kind == yaml.ScalarNode && k.Value == v && k.Tag != "!!str" && k.Tag != "!!null" {
				n.Tag = k.Tag
			}
		}
	}
	return n
}

func intNode(v int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}
}

func strList(items []string, style yaml.Style) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: style}
	for _, s := range items {
		n.Content = append(n.Content, strNode(s))
	}
	return n
}

func mapNode(pairs ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: pairs}
}

// paramNode writes a parameter so that ParseFile reads the same Param back.
func paramNode(p Param) *yaml.Node {
	n := mapNode(strNode("name"), strNode(p.Name))
	add := func(k string, v *yaml.Node) { n.Content = append(n.Content, strNode(k), v) }
	if p.Short != "" && !(len(p.Name) == 1 && p.Short == p.Name) {
		add("short", strNode(p.Short))
	}
	if p.Type != String {
		add("type", strNode(p.Type.String()))
	}
	switch {
	case p.Required:
	case p.Optional && p.Default == "":
		add("optional", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	default:
		add("default", scalarNode(p.Default, p.Type))
		if p.Optional {
			add("optional", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
	}
	if p.Help != "" {
		add("help", strNode(p.Help))
	}
	return n
}

// renderApp writes an AppDef as a template holding only literal values, leaving out
// the fields that equal a template's defaults.
func renderApp(a *spec.AppDef) *yaml.Node {
	n := mapNode(strNode("name"), strNode(a.Name))
	roles := &yaml.Node{Kind: yaml.SequenceNode}
	for _, r := range a.Roles {
		roles.Content = append(roles.Content, renderRole(r))
	}
	n.Content = append(n.Content, strNode("roles"), roles)
	if len(a.Metadata) > 0 {
		n.Content = append(n.Content, strNode("metadata"), renderStrMap(a.Metadata))
	}
	return n
}

func renderRole(r spec.Role) *yaml.Node {
	n := mapNode()
	add := func(k string, v *yaml.Node) { n.Content = append(n.Content, strNode(k), v) }
	add("name", strNode(r.Name))
	add("image", strNode(r.Image))
	add("entrypoint", strNode(r.Entrypoint))
	if len(r.Args) > 0 {
		add("args", strList(r.Args, 0))
	}
	if len(r.Env) > 0 {
		add("env", renderStrMap(r.Env))
	}
	add("num_replicas", intNode(r.NumReplicas))
	if r.MinReplicas != 0 {
		add("min_replicas", intNode(r.MinReplicas))
	}
	if r.MaxRetries != 0 {
		add("max_retries", intNode(r.MaxRetries))
	}
	if r.RetryPolicy != "" && r.RetryPolicy != spec.RetryApplication {
		add("retry_policy", strNode(string(r.RetryPolicy)))
	}
	if !r.Resource.IsNull() {
		res := mapNode(strNode("cpu"), intNode(r.Resource.CPU), strNode("gpu"), intNode(r.Resource.GPU),
			strNode("memMB"), intNode(r.Resource.MemMB))
		res.Style = yaml.FlowStyle
		if len(r.Resource.Capabilities) > 0 {
			res.Style = 0
			res.Content = append(res.Content, strNode("capabilities"), renderStrMap(r.Resource.Capabilities))
		}
		if len(r.Resource.Devices) > 0 {
			res.Style = 0
			res.Content = append(res.Content, strNode("devices"), renderIntMap(r.Resource.Devices))
		}
		add("resource", res)
	}
	if len(r.PortMap) > 0 {
		add("port_map", renderIntMap(r.PortMap))
	}
	if len(r.Mounts) > 0 {
		ms := make([]string, len(r.Mounts))
		for i, m := range r.Mounts {
			ms[i] = m.String()
		}
		add("mounts", strList(ms, 0))
	}
	if len(r.Metadata) > 0 {
		add("metadata", renderStrMap(r.Metadata))
	}
	return n
}

func renderStrMap(m map[string]string) *yaml.Node {
	n := mapNode()
	for _, k := range spec.SortedKeys(m) {
		n.Content = append(n.Content, strNode(k), strNode(m[k]))
	}
	return n
}

func renderIntMap(m map[string]int) *yaml.Node {
	n := mapNode()
	for _, k := range spec.SortedKeys(m) {
		n.Content = append(n.Content, strNode(k), intNode(m[k]))
	}
	return n
}

// Template inference. A parameter is written as a reference when the builtin passes
// it through unchanged: the builtin is built with sentinel values (strings with a
// space, a slash and a dot, which quoting, path or case handling would change;
// unlikely numbers; lists of two and of one item), the sentinels in the rendered
// AppDef are replaced by references, and the template is accepted only if expanding
// it builds exactly the builtin's AppDef for the example arguments and for two sets of
// sentinels (and, for maps, for values that collide with the builtin's own keys, which
// decides where the merge entry goes). Parameters are added one at a time, each kept
// only if the template still verifies.

type sentinelSet int

const (
	sentinelA sentinelSet = iota
	sentinelB
	sentinelCollide
)

// sentinel is the value of parameter number i (of type t) in a sentinel set; nil for a
// type that cannot be a reference (bool). baseKeys are the keys of every map in the
// example AppDef, which the collision set overrides.
func sentinel(t ParamType, i int, set sentinelSet, baseKeys []string) any {
	switch t {
	case String:
		if set == sentinelB {
			return fmt.Sprintf("Wick/Other %d.x", i)
		}
		return fmt.Sprintf("Wick Sentinel %d!", i)
	case Int:
		if set == sentinelB {
			return 8880000 + 13*i
		}
		return 7770000 + 11*i
	case Float:
		if set == sentinelB {
			return 888000.75 + float64(i)
		}
		return 777000.25 + float64(i)
	case List:
		if set == sentinelB {
			return []string{fmt.Sprintf("Wick/Other %d.a", i)}
		}
		return []string{fmt.Sprintf("Wick Sentinel %da!", i), fmt.Sprintf("Wick Sentinel %db!", i)}
	case Map:
		switch set {
		case sentinelB:
			return map[string]string{fmt.Sprintf("WICK_OTHER_%d", i): fmt.Sprintf("Wick/Other %d.x", i)}
		case sentinelCollide:
			m := map[string]string{fmt.Sprintf("WICK_SENTINEL_%d", i): fmt.Sprintf("Wick Sentinel %d!", i)}
			for _, k := range baseKeys {
				m[k] = fmt.Sprintf("Wick Collide %d!", i)
			}
			return m
		}
		return map[string]string{fmt.Sprintf("WICK_SENTINEL_%d", i): fmt.Sprintf("Wick Sentinel %d!", i)}
	}
	return nil
}

// slot is a parameter (or the varargs) that may become a reference.
type slot struct {
	name string
	typ  ParamType
	idx  int
}

func (c *Component) slots() []slot {
	var out []slot
	for i, p := range c.Params {
		if p.Type != Bool {
			out = append(out, slot{p.Name, p.Type, i + 1})
		}
	}
	if c.Varargs != "" {
		out = append(out, slot{c.Varargs, List, len(c.Params) + 1})
	}
	return out
}

// withSentinels returns base with the slots in set given their sentinel values.
func (c *Component) withSentinels(base Args, set []slot, which sentinelSet, baseKeys []string) Args {
	a := Args{Values: maps.Clone(base.Values), Varargs: base.Varargs}
	if a.Values == nil {
		a.Values = map[string]any{}
	}
	for _, s := range set {
		v := sentinel(s.typ, s.idx, which, baseKeys)
		if s.name == c.Varargs {
			a.Varargs, _ = v.([]string)
			continue
		}
		a.Values[s.name] = v
	}
	return a
}

// inferTemplate builds the app template of a builtin, and lists the parameters that
// it could not write as references.
func (c *Component) inferTemplate() (*yaml.Node, []string, error) {
	if c.Build == nil {
		return nil, nil, fmt.Errorf("%s has no Build function", c.Name)
	}
	base, err := c.Parse(c.Example, nil)
	if err != nil {
		return nil, nil, err
	}
	baseApp, err := c.Build(base)
	if err != nil {
		return nil, nil, err
	}
	baseKeys := mapKeys(baseApp)
	var accepted []slot
	tmpl := renderApp(baseApp)
	for _, s := range c.slots() {
		try := append(slices.Clone(accepted), s)
		if t, ok := c.tryTemplate(base, try, baseKeys); ok {
			accepted, tmpl = try, t
		}
	}
	isAccepted := func(name string) bool {
		return slices.ContainsFunc(accepted, func(s slot) bool { return s.name == name })
	}
	// The named resource h is not passed through, but a resource template with
	// h: ${{ h }} may still build the same resource: try it.
	if hp := c.param("h"); hp != nil && hp.Type == String && !isAccepted("h") {
		if t, ok := c.tryNamedResource(base, tmpl, accepted, baseKeys); ok {
			tmpl = t
			accepted = append(accepted, slot{name: "h"})
		}
	}
	var fixed []string
	for _, p := range c.Params {
		if !isAccepted(p.Name) {
			fixed = append(fixed, p.Name)
		}
	}
	if c.Varargs != "" && !isAccepted(c.Varargs) {
		fixed = append(fixed, c.Varargs)
	}
	return tmpl, fixed, nil
}

// mapKeys lists the keys of every string map of an AppDef.
func mapKeys(a *spec.AppDef) []string {
	set := map[string]bool{}
	for k := range a.Metadata {
		set[k] = true
	}
	for _, r := range a.Roles {
		for k := range r.Env {
			set[k] = true
		}
		for k := range r.Metadata {
			set[k] = true
		}
	}
	return spec.SortedKeys(set)
}

// tryTemplate templatizes the AppDef built with set's sentinels and verifies it.
func (c *Component) tryTemplate(base Args, set []slot, baseKeys []string) (*yaml.Node, bool) {
	argsA := c.withSentinels(base, set, sentinelA, baseKeys)
	appA, err := c.Build(argsA)
	if err != nil {
		return nil, false
	}
	argsC := c.withSentinels(base, set, sentinelCollide, baseKeys)
	appC, err := c.Build(argsC)
	if err != nil {
		return nil, false
	}
	tmpl := renderApp(appA)
	collide := renderApp(appC)
	c.templatize(tmpl, collide, set, baseKeys)
	return tmpl, c.verify(tmpl, []Args{base, argsA, c.withSentinels(base, set, sentinelB, baseKeys), argsC})
}

func (c *Component) tryNamedResource(base Args, tmpl *yaml.Node, set []slot, baseKeys []string) (*yaml.Node, bool) {
	t := cloneNode(tmpl)
	found := false
	walkMaps(t, "", func(path string, m *yaml.Node) {
		if strings.HasSuffix(path, ".resource") {
			m.Content = append(m.Content, strNode("h"), strNode("${{ h }}"))
			m.Style = 0
			found = true
		}
	})
	if !found {
		return nil, false
	}
	var runs []Args
	for _, a := range []Args{base, c.withSentinels(base, set, sentinelA, baseKeys)} {
		withH := Args{Values: maps.Clone(a.Values), Varargs: a.Varargs}
		withH.Values["h"] = "gpu.xlarge"
		runs = append(runs, a, withH)
	}
	return t, c.verify(t, runs)
}

// verify checks that expanding tmpl builds what the builtin builds, for every args.
func (c *Component) verify(tmpl *yaml.Node, runs []Args) bool {
	t := &fileComponent{path: c.Name, name: c.Name, app: tmpl}
	if _, err := t.expand(c, nil); err != nil {
		return false
	}
	for _, a := range runs {
		want, err := c.Build(a)
		if err != nil {
			return false
		}
		// A template's default app name is the component's; the rendered template
		// always writes it, so the two agree.
		got, err := t.expand(c, &a)
		if err != nil || !sameApp(got, want) {
			return false
		}
	}
	return true
}

func sameApp(a, b *spec.AppDef) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// templatize replaces the sentinels of set in tmpl (rendered from the sentinel-A
// AppDef) by references; collide is the AppDef rendered from the collision set, which
// tells, for each map, whether the builtin's own keys win over a map parameter's.
func (c *Component) templatize(tmpl, collide *yaml.Node, set []slot, baseKeys []string) {
	type repl struct{ needle, ref string }
	var repls []repl
	for _, s := range set {
		v := sentinel(s.typ, s.idx, sentinelA, baseKeys)
		ref, quoted := "${{ "+s.name+" }}", "${{ "+s.name+" | quote }}"
		switch s.typ {
		case String, Int, Float:
			str := formatValue(v)
			if q := ShellQuote(str); q != str {
				repls = append(repls, repl{q, quoted})
			}
			repls = append(repls, repl{str, ref})
		case List:
			l := v.([]string)
			repls = append(repls, repl{shellJoin(l), quoted})
			sep := ","
			if s.name == c.Varargs {
				sep = " "
			}
			repls = append(repls, repl{strings.Join(l, sep), ref})
		}
	}
	sort.SliceStable(repls, func(i, j int) bool { return len(repls[i].needle) > len(repls[j].needle) })

	collideMaps := map[string]*yaml.Node{}
	walkMaps(collide, "", func(path string, m *yaml.Node) { collideMaps[path] = m })

	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.ScalarNode:
			v := n.Value
			for _, r := range repls {
				v = strings.ReplaceAll(v, r.needle, r.ref)
			}
			if v != n.Value {
				n.Value, n.Tag = v, "!!str"
			}
		case yaml.SequenceNode:
			for _, s := range set {
				if s.typ == List {
					n.Content = spliceSentinel(n.Content, sentinel(List, s.idx, sentinelA, nil).([]string), "${{ "+s.name+" }}")
				}
			}
			for i, item := range n.Content {
				walk(item, path+"."+strconv.Itoa(i))
			}
		case yaml.MappingNode:
			for _, s := range set {
				if s.typ == Map {
					mergeSentinel(n, collideMaps[path], s)
				}
			}
			for i := 1; i < len(n.Content); i += 2 {
				walk(n.Content[i], path+"."+n.Content[i-1].Value)
			}
		}
	}
	walk(tmpl, "")
}

// spliceSentinel replaces the run of items equal to l by one item ref.
func spliceSentinel(items []*yaml.Node, l []string, ref string) []*yaml.Node {
	for i := 0; i+len(l) <= len(items); i++ {
		match := true
		for j, s := range l {
			if items[i+j].Kind != yaml.ScalarNode || items[i+j].Value != s {
				match = false
				break
			}
		}
		if match {
			out := append(slices.Clone(items[:i]), strNode(ref))
			return append(out, items[i+len(l):]...)
		}
	}
	return items
}

// mergeSentinel rewrites a map that holds map parameter s's sentinel entry as a
// template: the map's own keys that s overrides (per the collision rendering) first,
// then the merge entry "${{ s }}:", then the keys that win over s.
func mergeSentinel(m, collide *yaml.Node, s slot) {
	key := fmt.Sprintf("WICK_SENTINEL_%d", s.idx)
	idx := -1
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			idx = i
		}
	}
	if idx < 0 || collide == nil {
		return
	}
	collided := fmt.Sprintf("Wick Collide %d!", s.idx)
	userWins := map[string]bool{}
	for i := 0; i+1 < len(collide.Content); i += 2 {
		if collide.Content[i+1].Value == collided {
			userWins[collide.Content[i].Value] = true
		}
	}
	var before, after []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if i == idx {
			continue
		}
		if userWins[m.Content[i].Value] {
			before = append(before, m.Content[i], m.Content[i+1])
		} else {
			after = append(after, m.Content[i], m.Content[i+1])
		}
	}
	merge := []*yaml.Node{strNode("${{ " + s.name + " }}"), {Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}}
	m.Content = append(append(before, merge...), after...)
}

// walkMaps calls fn for every mapping under n with its path (".roles.0.env").
func walkMaps(n *yaml.Node, path string, fn func(path string, m *yaml.Node)) {
	switch n.Kind {
	case yaml.MappingNode:
		fn(path, n)
		for i := 1; i < len(n.Content); i += 2 {
			walkMaps(n.Content[i], path+"."+n.Content[i-1].Value, fn)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			walkMaps(item, path+"."+strconv.Itoa(i), fn)
		}
	}
}

func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = cloneNode(k)
	}
	return &c
}
