package components

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

const fixtures = "../testdata/components"

func fixture(name string) string { return filepath.Join(fixtures, name) }

func loadOne(t *testing.T, file, name string) *Component {
	t.Helper()
	c, err := Find(fixture(file)+":"+name, FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFileFull(t *testing.T) {
	c := loadOne(t, "good.yaml", "full")
	if c.Source != fixture("good.yaml") || c.Summary != "all features" || c.Varargs != "rest" {
		t.Errorf("component: %+v", c)
	}
	wantParams := []Param{
		{Name: "msg", Required: true, Help: "required message"},
		{Name: "n", Type: Int, Default: "2"},
		{Name: "ratio", Type: Float, Default: "0.5"},
		{Name: "debug", Type: Bool, Default: "false"},
		{Name: "tags", Type: List, Default: "a,b"},
		{Name: "env", Type: Map, Default: "A=1,B='x,y'"},
		{Name: "opt", Optional: true},
		{Name: "res", Optional: true},
		{Name: "img", Short: "i", Default: "busybox:1"},
	}
	if !reflect.DeepEqual(c.Params, wantParams) {
		t.Errorf("params\n got %+v\nwant %+v", c.Params, wantParams)
	}

	args, err := c.Parse([]string{"--msg", "it's", "--", "x y", "z"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	worker := spec.NewRole("worker", "busybox:1", "/bin/it's",
		"--n=2", "a", "b", `'it'"'"'s'`, "x y", "z", "'x y' z", "$${{ literal }}", "${app_id}")
	worker.Env = map[string]string{"FIRST": "one", "A": "overrides-env", "B": "x,y", "OPT": "", "DEBUG": "false", "RATIO": "0.5"}
	delete(worker.Env, "OPT") // an unset optional value drops its entry
	worker.NumReplicas, worker.MinReplicas, worker.MaxRetries = 2, 1, 3
	worker.RetryPolicy = spec.RetryReplica
	worker.Resource = spec.Resource{CPU: 3, GPU: 2, MemMB: 2048,
		Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p4d"},
		Devices:      map[string]int{"vpc.amazonaws.com/efa": 2}}
	worker.PortMap = map[string]int{"http": 8080, "grpc": 2}
	worker.Mounts = []spec.Mount{{Type: spec.MountBind, Src: "/host", Dst: "/job", ReadOnly: true}, {Type: spec.MountVolume, Src: "vol", Dst: "/vol"}}
	sidecar := spec.NewRole("sidecar", "busybox:1", "sleep", "infinity")
	sidecar.Env = map[string]string{"A": "1", "B": "x,y"}
	want := &spec.AppDef{Name: "full-2", Roles: []spec.Role{worker, sidecar}, Metadata: map[string]string{"owner": "me", "tags": "a,b"}}
	assertApp(t, got, want)

	// Named resources win; an optional given drops nothing; maps and lists from flags.
	args, err = c.Parse([]string{"--msg", "m", "--res", "gpu.small", "--opt", "o", "--env", "Z=26", "--tags", "t", "-i", "img", "-n", "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = c.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	w := got.Roles[0]
	if w.Resource.CPU != 8 || w.Resource.GPU != 1 || w.Resource.Devices["vpc.amazonaws.com/efa"] != 2 {
		t.Errorf("resource %+v", w.Resource)
	}
	if !reflect.DeepEqual(w.Args, []string{"--n=1", "t", "o", "m", "$${{ literal }}", "${app_id}"}) || w.Image != "img" {
		t.Errorf("args %q image %q", w.Args, w.Image)
	}
	if !reflect.DeepEqual(w.Env, map[string]string{"FIRST": "one", "Z": "26", "A": "overrides-env", "OPT": "o", "DEBUG": "false", "RATIO": "0.5"}) {
		t.Errorf("env %v", w.Env)
	}
	if !reflect.DeepEqual(got.Roles[1].Env, map[string]string{"Z": "26"}) {
		t.Errorf("sidecar env %v", got.Roles[1].Env)
	}
	// Macros still work afterwards: $$ becomes $.
	if s := (spec.Macros{AppID: "x"}).Substitute(w.Args[4]); s != "${{ literal }}" {
		t.Errorf("macro pass: %q", s)
	}

	// Values that break the AppDef are caught with the template's line.
	args, _ = c.Parse([]string{"--msg", "m", "-n", "0"}, nil)
	if _, err := c.AppDef(args); err == nil || !strings.Contains(err.Error(), "good.yaml:40: role worker: num_replicas must be at least 1 (got 0)") {
		t.Errorf("-n 0: err = %v", err)
	}
	args, _ = c.Parse([]string{"--msg", "m", "--res", "gpu.hug"}, nil)
	if _, err := c.AppDef(args); err == nil || !strings.Contains(err.Error(), `unknown named resource "gpu.hug"`) {
		t.Errorf("--res gpu.hug: err = %v", err)
	}
	args, _ = c.Parse([]string{"--msg", "a b"}, nil)
	if _, err := c.AppDef(args); err != nil {
		t.Errorf("entrypoint with a space: %v", err)
	}
}

func TestFileIntMapMerge(t *testing.T) {
	comps, err := ParseFile("f.yaml", []byte("a:\n  params: [{name: ports, type: map, default: {http: '80'}}]\n  app:\n    roles:\n      - name: r\n        entrypoint: e\n        port_map: {'${{ ports }}':, grpc: 9}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := comps[0]
	args, _ := c.Parse(nil, nil)
	if app, err := c.AppDef(args); err != nil || !reflect.DeepEqual(app.Roles[0].PortMap, map[string]int{"http": 80, "grpc": 9}) {
		t.Errorf("port_map: %v", err)
	}
	args, _ = c.Parse([]string{"--ports", "http=x"}, nil)
	if _, err := c.AppDef(args); err == nil || err.Error() != `f.yaml:7: role r: port_map: http="x" is not an int` {
		t.Errorf("err = %v", err)
	}
}

func TestFileMinimal(t *testing.T) {
	c := loadOne(t, "good.yaml", "minimal")
	args, err := c.Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	r := spec.NewRole("r", "", "true")
	r.Args = []string{}
	assertApp(t, got, &spec.AppDef{Name: "minimal", Roles: []spec.Role{r}})
}

func TestExampleFile(t *testing.T) {
	c := loadOne(t, "example.yaml", "train")
	args, err := c.Parse(c.Example, nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	r := app.Roles[0]
	wantLine := "torchrun --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint $${${rank0_env}:=localhost}:29500 " +
		"--rdzv_id ${app_id} train.py --lr 0.001 --epochs 3"
	if r.Args[1] != wantLine || r.NumReplicas != 2 || r.Resource.CPU != 4 || r.Resource.MemMB != 8192 || r.Resource.GPU != 0 {
		t.Errorf("train: %q %+v", r.Args, r)
	}
	if len(r.Mounts) != 0 || r.Env["LOGLEVEL"] != "INFO" {
		t.Errorf("train: mounts %v env %v", r.Mounts, r.Env)
	}
	args, _ = c.Parse([]string{"--mounts", "type=bind,src=/d,dst=/data", "-h", "gpu.small"}, nil)
	if app, err = c.AppDef(args); err != nil || len(app.Roles[0].Mounts) != 1 || app.Roles[0].Resource.GPU != 1 {
		t.Errorf("train with mounts: %v %+v", err, app)
	}

	hello := loadOne(t, "example.yaml", "hello")
	args, _ = hello.Parse([]string{"--who", "big world", "-r", "3"}, nil)
	app, err = hello.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	if got := app.Roles[0].Args[1]; got != "echo hello 'big world' from replica $REPLICA of ${app_id}" || app.Name != "hello" || app.Roles[0].NumReplicas != 3 {
		t.Errorf("hello: %q %+v", got, app)
	}
}

func TestFileErrors(t *testing.T) {
	for file, want := range map[string]string{
		"bad_syntax.yaml":        "bad_syntax.yaml:6: did not find expected '-' indicator",
		"bad_unknown_param.yaml": `bad_unknown_param.yaml:9: role echo: args: unknown parameter "mesage" in "${{ mesage }}" (did you mean "message"?)`,
		"bad_replicas.yaml":      "bad_replicas.yaml:6: role echo: num_replicas must be at least 1 (got 0)",
		"bad_entrypoint.yaml":    "bad_entrypoint.yaml:5: role echo: empty entrypoint",
		"bad_key.yaml":           `bad_key.yaml:5: role: unknown key "entrypont" (did you mean "entrypoint"?)`,
		"bad_param_type.yaml":    `bad_param_type.yaml:4: parameter n: unknown type "integr" (want string, int, float, bool, list or map) (did you mean "integer"?)`,
		"bad_default.yaml":       `bad_default.yaml:5: parameter n: bad default "many": want an int`,
	} {
		_, err := LoadFile(fixture(file))
		if err == nil || err.Error() != fixture(want) {
			t.Errorf("%s: err = %v\nwant %s", file, err, fixture(want))
		}
	}
	c := loadOne(t, "bad_replicas_param.yaml", "echo")
	args, err := c.Parse([]string{"--replicas", "0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppDef(args); err == nil || err.Error() != fixture("bad_replicas_param.yaml")+":8: role echo: num_replicas must be at least 1 (got 0)" {
		t.Errorf("--replicas 0: err = %v", err)
	}
}

func TestParseFileErrors(t *testing.T) {
	for _, tc := range []struct{ src, err string }{
		{"", "f.yaml: no components defined"},
		{"# nothing\n", "f.yaml: no components defined"},
		{"{}", "f.yaml: no components defined"},
		{"- a\n", "f.yaml:1: want a mapping from component names to components"},
		{"a: [x, ${{ y }}]\n", "f.yaml:1: did not find expected ',' or ']'"},
		{"a:\n  app: *nope\n", "f.yaml:2: unknown anchor 'nope' referenced"},
		{"a b:\n  app: {}\n", `f.yaml:1: not a component file: its first key is not a component name (letters, digits, '_', '.' and '-')`},
		{"a: {app: {roles: [{name: r, entrypoint: e}]}}\na b:\n  app: {}\n", `f.yaml:2: component name "a b" may hold only letters, digits, '_', '.' and '-'`},
		// /etc/shadow's format (shadow(5)): not a component file, and not quoted.
		{"root:$6$salt$hash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n", `f.yaml:1: not a component file: its first key is not a component name (letters, digits, '_', '.' and '-')`},
		{"a: {app: {roles: [{name: r, entrypoint: e}]}}\na: {}\n", `f.yaml:2: component "a" defined twice`},
		{"a: {}\n", "f.yaml:1: component a: no app"},
		{"a: {summary: [x], app: {}}\n", "f.yaml:1: summary: want a string"},
		{"a: {help: 1, colour: red}\n", `f.yaml:1: component a: unknown key "colour"`},
		{"a: {app: {}}\n", "f.yaml:1: app: roles: want a list of at least one role"},
		{"a: {app: {roles: []}}\n", "f.yaml:1: app: roles: want a list of at least one role"},
		{"a: {app: {roles: [x]}}\n", "f.yaml:1: role: want a mapping"},
		{"a: {app: {roles: [{entrypoint: e}]}}\n", "f.yaml:1: role: no name"},
		{"a: {app: {roles: [{name: r}]}}\n", "f.yaml:1: role r: empty entrypoint"},
		{"a: {app: {roles: [{name: r, entrypoint: e, num_replicas: two}]}}\n", `f.yaml:1: role r: num_replicas: "two" is not an int`},
		{"a: {app: {roles: [{name: r, entrypoint: e, retry_policy: SOMETIMES}]}}\n", `f.yaml:1: role r: unknown retry policy "SOMETIMES" (want REPLICA, ROLE or APPLICATION)`},
		{"a: {app: {roles: [{name: r, entrypoint: e, mounts: [type=bind]}]}}\n", `f.yaml:1: role r: mounts: malformed mount "type=bind": a bind mount needs src and dst`},
		{"a: {app: {roles: [{name: r, entrypoint: e, resource: {h: gpu.smal}}]}}\n", `f.yaml:1: role r: resource: unknown named resource "gpu.smal" (did you mean "gpu.small"?)`},
		{"a: {app: {roles: [{name: r, entrypoint: e, resource: {cpus: 1}}]}}\n", `f.yaml:1: role r: resource: unknown key "cpus" (did you mean "cpu"?)`},
		{"a: {app: {roles: [{name: r, entrypoint: e, args: {x: 1}}]}}\n", `f.yaml:1: role r: args: want a string`},
		{"a: {app: {roles: [{name: r, entrypoint: e, args: [~]}]}}\n", `f.yaml:1: role r: args: empty item (write "" for an empty string)`},
		{"a: {app: {roles: [{name: r, entrypoint: e, env: {A: 1, A: 2}}]}}\n", `f.yaml:1: role r: env: key "A" given twice`},
		{"a: {app: {roles: [{name: r, entrypoint: e, env: [A]}]}}\n", `f.yaml:1: role r: env: want a mapping`},
		{"a: {app: {roles: [{name: r, entrypoint: e, env: {A: [1]}}]}}\n", `f.yaml:1: role r: env: A: want a string`},
		{"a: {app: {roles: [{name: r, entrypoint: e, args: ['${{ x'] }]}}\n", `f.yaml:1: role r: args: unterminated reference in "${{ x": want ${{ name }}`},
		{"a: {params: [{name: x}], app: {roles: [{name: r, entrypoint: e, args: ['${{ x | upper }}'] }]}}\n", `f.yaml:1: role r: args: bad reference ${{ x | upper }}: want ${{ name }} or ${{ name | quote }}`},
		{"a: {params: [{name: x}], app: {roles: [{name: r, entrypoint: e, env: {'${{ x }}':}}]}}\n", `f.yaml:1: role r: env: "${{ x }}" merges a map, but x is not a map parameter`},
		{"a: {params: [{name: x}], app: {roles: [{name: r, entrypoint: e, env: '${{ x }}'}]}}\n", `f.yaml:1: role r: env: want a mapping, or a reference to a map parameter`},
		{"a: {params: [x], app: {}}\n", "f.yaml:1: parameter: want a mapping"},
		{"a: {params: [{type: int}], app: {}}\n", "f.yaml:1: parameter: no name"},
		{"a: {params: {x: 1}, app: {}}\n", "f.yaml:1: params: want a list of parameters"},
		{"a: {params: [{name: x, required: true, default: 1}], app: {}}\n", "f.yaml:1: parameter x: a required parameter has no default"},
		{"a: {params: [{name: x, required: true, optional: true}], app: {}}\n", "f.yaml:1: parameter x: both required and optional"},
		{"a: {params: [{name: x, required: maybe}], app: {}}\n", `f.yaml:1: parameter x: required: want true or false, got "maybe"`},
		{"a: {params: [{name: x}, {name: x}], app: {}}\n", `f.yaml:1: parameter "x" declared twice`},
		{"a: {params: [{name: x-y}], app: {}}\n", `f.yaml:1: parameter name "x-y" must be a letter or '_' followed by letters, digits or '_'`},
		{"a: {params: [{name: x}], varargs: x, app: {}}\n", `f.yaml:1: varargs name "x" is also a parameter`},
		{"a: {params: [{name: x, short: xx}], app: {}}\n", `f.yaml:1: short form "xx" of --x must be one letter or digit`},
		{"a: {example: x, app: {}}\n", "f.yaml:1: example: want a list of arguments"},
	} {
		_, err := ParseFile("f.yaml", []byte(tc.src))
		if err == nil || err.Error() != tc.err {
			t.Errorf("%q:\n got %v\nwant %s", tc.src, err, tc.err)
		}
	}
	big := make([]byte, maxFileSize+1)
	if _, err := ParseFile("big.yaml", big); err == nil {
		t.Error("a huge file loads")
	}
	if _, err := LoadFile(fixture("missing.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseTemplate(t *testing.T) {
	for in, want := range map[string][]tmplPart{
		"plain":                  {{lit: "plain"}},
		"":                       {{lit: ""}},
		"${{x}}":                 {{ref: "x"}},
		"a ${{ x }} b":           {{lit: "a "}, {ref: "x"}, {lit: " b"}},
		"${{ x | quote }}${{y}}": {{ref: "x", quote: true}, {ref: "y"}},
		"$${{ x }}":              {{lit: "$${{ x }}"}},
		"${app_id} ${{ x }}":     {{lit: "${app_id} "}, {ref: "x"}},
		"$$$${{x}}":              {{lit: "$$$$"}, {lit: "{{x}}"}},
	} {
		got, err := parseTemplate(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		// Adjacent literals may be split differently; compare the joined text too.
		if !reflect.DeepEqual(got, want) && joinParts(got) != joinParts(want) {
			t.Errorf("parseTemplate(%q) = %+v, want %+v", in, got, want)
		}
	}
	for _, in := range []string{"${{", "${{ }}", "${{ 1x }}", "${{ x | json }}", "${{ a b }}"} {
		if _, err := parseTemplate(in); err == nil {
			t.Errorf("parseTemplate(%q): no error", in)
		}
	}
}

func joinParts(ps []tmplPart) string {
	var b strings.Builder
	for _, p := range ps {
		if p.ref != "" {
			b.WriteString("<" + p.ref + ">")
		}
		b.WriteString(p.lit)
	}
	return b.String()
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "project", ".wick", "components")
	user := filepath.Join(dir, "config", "wick", "components")
	for _, d := range []string{project, user} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, src string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	comp := func(name, entry string) string {
		return name + ":\n  app:\n    roles:\n      - {name: r, entrypoint: " + entry + "}\n"
	}
	write(filepath.Join(project, "a.yaml"), comp("mine", "project")+comp("utils.echo", "shadowed"))
	write(filepath.Join(user, "b.yml"), comp("mine", "user")+comp("theirs", "user"))
	write(filepath.Join(user, "notes.txt"), "not a component file")
	opts := FindOptions{Dirs: append(DefaultDirs(filepath.Join(dir, "project"), filepath.Join(dir, "config")), filepath.Join(dir, "missing"))}
	if want := []string{project, user}; !reflect.DeepEqual(opts.Dirs[:2], want) {
		t.Fatalf("DefaultDirs = %v, want %v", opts.Dirs[:2], want)
	}

	entry := func(name string) string {
		t.Helper()
		c, err := Find(name, opts)
		if err != nil {
			t.Fatalf("Find(%q): %v", name, err)
		}
		args, err := c.Parse(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		app, err := c.AppDef(args)
		if err != nil {
			t.Fatal(err)
		}
		return app.Roles[0].Entrypoint
	}
	if got := entry("mine"); got != "project" {
		t.Errorf("mine: the project's file should win, got %s", got)
	}
	if got := entry("theirs"); got != "user" {
		t.Errorf("theirs: got %s", got)
	}
	if got := entry("utils.echo"); got != "echo" {
		t.Errorf("utils.echo: builtins win, got %s", got)
	}
	if got := entry(filepath.Join(user, "b.yml") + ":mine"); got != "user" {
		t.Errorf("file:mine: got %s", got)
	}
	single := filepath.Join(dir, "single.yaml")
	write(single, comp("only", "single"))
	if got := entry(single); got != "single" {
		t.Errorf("single-component file: got %s", got)
	}

	for name, want := range map[string]string{
		"utils.ech":                           `unknown component "utils.ech" (did you mean "utils.echo"?): ` + "`wick builtins` lists the components",
		"theirz":                              `unknown component "theirz" (did you mean "theirs"?)`,
		"nothing.like.it":                     `unknown component "nothing.like.it": ` + "`wick builtins`",
		filepath.Join(user, "b.yml") + ":min": `unknown component "min" in ` + filepath.Join(user, "b.yml") + ` (did you mean "mine"?) (it defines mine, theirs)`,
		filepath.Join(user, "b.yml"):          filepath.Join(user, "b.yml") + " defines 2 components (mine, theirs): name one",
		":x":                                  `unknown component ":x": want path/to/file.yaml:NAME`,
		filepath.Join(dir, "nope.yaml:x"):     "no such file or directory",
	} {
		_, err := Find(name, opts)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Find(%q): err = %v, want %q", name, err, want)
		}
	}
	if _, err := Find("utils.ech", opts); !errors.Is(err, ErrNoSuchComponent) {
		t.Errorf("not ErrNoSuchComponent: %v", err)
	}

	all, errs := All(opts)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	var names []string
	for _, c := range all[len(Builtins()):] {
		names = append(names, c.Name+"@"+filepath.Base(c.Source))
	}
	if want := []string{"mine@a.yaml", "theirs@b.yml"}; !reflect.DeepEqual(names, want) {
		t.Errorf("All: user components %v, want %v", names, want)
	}

	// A broken file is reported, and the others still load.
	write(filepath.Join(user, "c.yaml"), "broken: [\n")
	write(filepath.Join(user, "d.yaml"), "also: broken: here\n")
	all, errs = All(opts)
	if len(errs) != 2 || len(all) != len(Builtins())+2 {
		t.Fatalf("All with broken files: %d components, errors %v", len(all), errs)
	}
	if !strings.Contains(errs[0].Error(), "c.yaml:1:") || !strings.Contains(errs[1].Error(), "d.yaml:1:") {
		t.Errorf("All with broken files: %v", errs)
	}
	if _, err := Find("theirs", opts); err != nil {
		t.Errorf("Find with a broken file after: %v", err)
	}
	if _, err := Find("zzz", opts); err == nil || !strings.Contains(err.Error(), "could not be read") {
		t.Errorf("Find unknown with a broken file: %v", err)
	}
	if all, errs := All(FindOptions{}); len(errs) != 0 || len(all) != len(Builtins()) {
		t.Errorf("All without dirs: %d, %v", len(all), errs)
	}
	// WorkDir resolves relative file names; Self is what demo.train runs.
	wopts := FindOptions{WorkDir: dir, Self: "/opt/wick"}
	if c, err := Find("single.yaml:only", wopts); err != nil || c.Source != "single.yaml" {
		t.Errorf("relative to WorkDir: %v", err)
	}
	demo, err := Find("demo.train", wopts)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := demo.Parse(nil, nil)
	if app, err := demo.AppDef(args); err != nil || app.Roles[0].Entrypoint != "/opt/wick" {
		t.Errorf("demo.train with Self: %v", err)
	}
	all, _ = All(wopts)
	if args, _ := all[0].Parse(nil, nil); all[0].Name != "demo.train" {
		t.Errorf("All()[0] = %s", all[0].Name)
	} else if app, _ := all[0].AppDef(args); app.Roles[0].Entrypoint != "/opt/wick" {
		t.Errorf("All: demo.train runs %s", app.Roles[0].Entrypoint)
	}
}

func TestDescribeBuiltins(t *testing.T) {
	unsetLogLevel(t)
	for _, b := range Builtins() {
		text := b.Describe()
		comps, err := ParseFile(b.Name+".yaml", []byte(text))
		if err != nil {
			t.Errorf("%s: Describe does not load: %v\n%s", b.Name, err, text)
			continue
		}
		if len(comps) != 1 {
			t.Fatalf("%s: %d components", b.Name, len(comps))
		}
		c := comps[0]
		if !reflect.DeepEqual(c.Params, b.Params) || c.Varargs != b.Varargs || !reflect.DeepEqual(c.Example, b.Example) {
			t.Errorf("%s: params differ\n got %+v\nwant %+v", b.Name, c.Params, b.Params)
		}
		// With the example arguments both build the same AppDef.
		ba, err := b.Parse(b.Example, nil)
		if err != nil {
			t.Fatal(err)
		}
		ca, err := c.Parse(b.Example, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err1 := b.AppDef(ba)
		got, err2 := c.AppDef(ca)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v / %v", b.Name, err1, err2)
		}
		if !sameApp(got, want) {
			assertApp(t, got, want)
		}
	}
	echo, _ := Find("utils.echo", FindOptions{})
	text := echo.Describe()
	for _, want := range []string{"echo:\n", "image: ${{ image }}", "- ${{ msg }}", "num_replicas: ${{ num_replicas }}"} {
		if !strings.Contains(text, want) {
			t.Errorf("utils.echo description lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "computes part") {
		t.Errorf("utils.echo should be fully templated:\n%s", text)
	}
	// For echo, the template is equivalent for any arguments.
	comps, _ := ParseFile("echo.yaml", []byte(text))
	for _, argv := range [][]string{{"--msg", "a 'b' $c"}, {"--num_replicas", "4", "--image", "x"}} {
		ba, _ := echo.Parse(argv, nil)
		ca, _ := comps[0].Parse(argv, nil)
		want, _ := echo.AppDef(ba)
		got, _ := comps[0].AppDef(ca)
		if !sameApp(got, want) {
			assertApp(t, got, want)
		}
	}
	ddp, _ := Find("dist.ddp", FindOptions{})
	if text := ddp.Describe(); !strings.Contains(text, "computes part of its AppDef in Go from script, m, name, j") ||
		!strings.Contains(text, "--rdzv_backend ${{ rdzv_backend | quote }}") {
		t.Errorf("dist.ddp description:\n%s", text)
	}
}

func TestDescribeFile(t *testing.T) {
	c := loadOne(t, "example.yaml", "hello")
	text := c.Describe()
	if !strings.HasPrefix(text, "# hello, from "+fixture("example.yaml")+"\nhello:\n") || !strings.Contains(text, "whom to greet") {
		t.Errorf("description:\n%s", text)
	}
	comps, err := ParseFile("again.yaml", []byte(text))
	if err != nil || len(comps) != 1 || !reflect.DeepEqual(comps[0].Params, c.Params) {
		t.Errorf("reload: %v", err)
	}
}
