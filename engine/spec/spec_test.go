package spec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseHandle(t *testing.T) {
	for in, want := range map[string]Handle{
		"local_cwd://wick/echo-kf2vb0x9qwm3":  {"local_cwd", "wick", "echo-kf2vb0x9qwm3"},
		"local_docker:///app":                 {"local_docker", "wick", "app"}, // empty session: the default
		"k8s://my.session/a_b.c-1":            {"k8s", "my.session", "a_b.c-1"},
		"kubernetes://torchx/default:echo-x1": {"kubernetes", "torchx", "default:echo-x1"}, // TorchX's NAMESPACE:APP_ID
	} {
		got, err := ParseHandle(in)
		if err != nil || got != want {
			t.Errorf("ParseHandle(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if h := (Handle{"local_cwd", "wick", "a"}); h.String() != "local_cwd://wick/a" {
		t.Errorf("String() = %q", h.String())
	}
	for _, in := range []string{
		"", "echo", "://wick/a", "local_cwd://", "local_cwd://wick", "local_cwd://wick/", "local_cwd:/wick/a",
		"local cwd://wick/a", "local_cwd://wick/../etc", "local_cwd://../x/a", "local_cwd://wick/.hidden",
		"local_cwd://a/b/c", "local_cwd://wick/a b", "local_cwd://wick/" + strings.Repeat("a", 129),
		"kubernetes://s/:a", "kubernetes://s/a:", "kubernetes://s/a:b:c", "kubernetes://s/../x:a",
	} {
		_, err := ParseHandle(in)
		if !errors.Is(err, ErrMalformedHandle) {
			t.Errorf("ParseHandle(%q): err = %v, want ErrMalformedHandle", in, err)
		}
	}
}

func TestParseLogID(t *testing.T) {
	for in, want := range map[string]LogID{
		"local_cwd://wick/app":           {Handle: Handle{"local_cwd", "wick", "app"}},
		"local_cwd:///app/trainer":       {Handle: Handle{"local_cwd", "wick", "app"}, Role: "trainer"},
		"local_cwd://s/app/trainer/0,2,": {Handle: Handle{"local_cwd", "s", "app"}, Role: "trainer", Replicas: []int{0, 2}},
		"local_cwd://s/app/trainer/3,3":  {Handle: Handle{"local_cwd", "s", "app"}, Role: "trainer", Replicas: []int{3}},
	} {
		got, err := ParseLogID(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseLogID(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	l := LogID{Handle: Handle{"local_cwd", "wick", "app"}, Role: "r", Replicas: []int{1, 0}}
	if got := formatLogID(l); got != "local_cwd://wick/app/r/1,0" {
		t.Errorf("formatLogID = %q", got)
	}
	for _, in := range []string{
		"local_cwd://wick", "local_cwd://wick/app/r/0/x", "local_cwd://wick/app/r/a", "local_cwd://wick/app/r/-1",
		"local_cwd://wick/app/r/+1", "local_cwd://wick/app/r/", "local_cwd://wick/app/../0", "x://wick//r",
		"local_cwd://wick/app/r/0,,1", "local_cwd://wick/app/r/,",
	} {
		if _, err := ParseLogID(in); !errors.Is(err, ErrMalformedHandle) {
			t.Errorf("ParseLogID(%q): err = %v", in, err)
		}
	}
}

func TestParseReplicaIDs(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0,2": {0, 2}, "1,": {1}, "2,1,2": {2, 1}} {
		got, err := ParseReplicaIDs(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseReplicaIDs(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", ",", "a", "-0", "-1", "+1", " 1", "1,,2", "1 ", "99999999999999999999"} {
		if ids, err := ParseReplicaIDs(in); err == nil {
			t.Errorf("ParseReplicaIDs(%q) = %v: no error", in, ids)
		}
	}
}

func TestParseMounts(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	for in, want := range map[string][]Mount{
		"":                                      nil,
		"   ":                                   nil,
		"type=bind,src=/host,dst=/job,readonly": {{Type: MountBind, Src: "/host", Dst: "/job", ReadOnly: true}},
		"type=bind,source=~/data,target=/data,read_only=false": {{Type: MountBind, Src: filepath.Join(home, "data"), Dst: "/data"}},
		"type=volume,src=vol,destination=/v,type=device,src=/dev/fuse": {
			{Type: MountVolume, Src: "vol", Dst: "/v"},
			{Type: MountDevice, Src: "/dev/fuse", Dst: "/dev/fuse", Permissions: "rwm"},
		},
		"type=device,src=/dev/nvidia0,dst=/dev/gpu,perm=rw":         {{Type: MountDevice, Src: "/dev/nvidia0", Dst: "/dev/gpu", Permissions: "rw"}},
		"type=device,src=/dev/x,permissions=m":                      {{Type: MountDevice, Src: "/dev/x", Dst: "/dev/x", Permissions: "m"}},
		" type=BIND , src=/a=b , dst=/c ,":                          {{Type: MountBind, Src: "/a=b", Dst: "/c"}},
		"type=bind,src=relative/path,dst=/x,readonly=true,":         {{Type: MountBind, Src: "relative/path", Dst: "/x", ReadOnly: true}},
		"type=volume,src=v,dst=/v,readonly,type=bind,src=/a,dst=/b": {{Type: MountVolume, Src: "v", Dst: "/v", ReadOnly: true}, {Type: MountBind, Src: "/a", Dst: "/b"}},
	} {
		got, err := ParseMounts(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseMounts(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		// String writes back what ParseMounts reads.
		var parts []string
		for _, m := range got {
			parts = append(parts, m.String())
		}
		if again, err := ParseMounts(strings.Join(parts, ",")); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("round trip of %q: %+v, %v", in, again, err)
		}
	}
	for in, want := range map[string]string{
		"src=/a,dst=/b":                        "it must start with type=",
		"type=bind,src=/a":                     "a bind mount needs src and dst",
		"type=volume,dst=/v":                   "a volume mount needs src and dst",
		"type=tmpfs,dst=/t":                    `unknown type "tmpfs" (want bind, volume or device)`,
		"type=bind,src=/a,dst=/b,size=1":       `unknown key "size"`,
		"type=bind,src=/a,dst=/b,sorce=/c":     `unknown key "sorce" (did you mean "source"?)`,
		"type=bind,src=/a,dst=relative":        "dst must be an absolute path",
		"type=bind,src=/a,src=/b,dst=/c":       "src given twice",
		"type=bind,src=/a,source=/b,dst=/c":    "src given twice",
		"type=bind,src,dst=/c":                 "src needs a value",
		"type=bind,src=/a,dst=/b,readonly=meh": "readonly:",
		"type=bind,src=/a,dst=/b,perm=rw":      "permissions apply to devices only",
		"type=device,src=/dev/x,perm=rwx":      "permissions may use only r, w and m",
		"type=device,src=/dev/x,readonly":      "use permissions, not readonly, for a device",
		"type=device":                          "a device mount needs src",
		"type":                                 "it must start with type=",
	} {
		_, err := ParseMounts(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "malformed mount") {
			t.Errorf("ParseMounts(%q): err = %v, want %q", in, err, want)
		}
	}
}

func TestSplitCfg(t *testing.T) {
	for in, want := range map[string][]KV{
		"":                      nil,
		"a=b":                   {{"a", "b"}},
		"a=b,c=d":               {{"a", "b"}, {"c", "d"}},
		"FOO=v1,v2,BAR=v3":      {{"FOO", "v1,v2"}, {"BAR", "v3"}},
		"FOO=v1;v2;BAR=v3":      {{"FOO", "v1;v2"}, {"BAR", "v3"}},
		"a='x=1,y',b=\"c;d\"":   {{"a", "x=1,y"}, {"b", "c;d"}},
		"a='',b=\"\"":           {{"a", ""}, {"b", ""}},
		" a = b , c = d ":       {{"a", "b"}, {"c", "d"}},
		"env=A:1;B:2,copy=x":    {{"env", "A:1;B:2"}, {"copy", "x"}},
		"a=,b=1":                {{"a", ""}, {"b", "1"}},
		"a=1,,b=2":              {{"a", "1,"}, {"b", "2"}},
		"k=v1,v2;v3":            {{"k", "v1,v2;v3"}},
		"a=it's":                nil, // unterminated quote: see below
		"image=repo/img:1,x=yz": {{"image", "repo/img:1"}, {"x", "yz"}},
	} {
		got, err := SplitCfg(in)
		if in == "a=it's" {
			if err == nil {
				t.Errorf("SplitCfg(%q): no error for an unterminated quote", in)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitCfg(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"abc", "=x", "a==b", "a=1,=2", "a=1=2"} {
		if kv, err := SplitCfg(in); !errors.Is(err, ErrInvalidRunOpt) {
			t.Errorf("SplitCfg(%q) = %q, %v: want an error", in, kv, err)
		}
	}
}

var testOpts = RunOpts{
	{Name: "log_dir", Type: OptString, Help: "logs"},
	{Name: "prepend_cwd", Type: OptBool, Default: false, Help: "path"},
	{Name: "copy_env", Type: OptList, Help: "globs"},
	{Name: "env", Type: OptMap, Help: "env"},
	{Name: "n", Type: OptInt, Default: 1, Help: "n"},
	{Name: "ratio", Type: OptFloat, Help: "ratio"},
	{Name: "queue", Type: OptString, Required: true, Help: "queue"},
}

func TestParseCfg(t *testing.T) {
	cfg, err := testOpts.ParseCfg("log_dir=/tmp/x,prepend_cwd=Yes,copy_env=A_*;B_*,env=A:1;B:x:y,n=3,ratio=0.5")
	if err != nil {
		t.Fatal(err)
	}
	want := Cfg{"log_dir": "/tmp/x", "prepend_cwd": true, "copy_env": []string{"A_*", "B_*"},
		"env": map[string]string{"A": "1", "B": "x:y"}, "n": 3, "ratio": 0.5}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("ParseCfg = %#v", cfg)
	}
	for in, msg := range map[string]string{
		"log_dri=/x":        `unknown key "log_dri" (did you mean "log_dir"?)`,
		"zzzzzzzz=1":        `unknown key "zzzzzzzz"`,
		"prepend_cwd=maybe": `"maybe" is not a boolean`,
		"n=two":             "want an integer",
		"ratio=fast":        "want a number",
		"env=A=1":           "",
		"env=A":             `want KEY:VALUE pairs, got "A"`,
		"n=1,n=2":           "n given twice",
		"nokey":             "want KEY=VALUE",
	} {
		_, err := testOpts.ParseCfg(in)
		if !errors.Is(err, ErrInvalidRunOpt) || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseCfg(%q): err = %v, want %q", in, err, msg)
		}
	}
	// Resolve fills defaults, checks types and required options.
	got, err := testOpts.Resolve(Cfg{"queue": "q", "log_dir": nil})
	if err != nil || !reflect.DeepEqual(got, Cfg{"queue": "q", "prepend_cwd": false, "n": 1}) {
		t.Errorf("Resolve = %v, %v", got, err)
	}
	if _, err := testOpts.Resolve(Cfg{}); err == nil || !strings.Contains(err.Error(), "queue is required") {
		t.Errorf("Resolve without queue: %v", err)
	}
	if _, err := testOpts.Resolve(Cfg{"queue": "q", "n": "3"}); err == nil || !strings.Contains(err.Error(), "want int") {
		t.Errorf("Resolve with a string n: %v", err)
	}
	if _, err := testOpts.Resolve(Cfg{"queue": "q", "bogus": 1}); err == nil || !strings.Contains(err.Error(), `unknown key "bogus"`) {
		t.Errorf("Resolve with bogus: %v", err)
	}
	merged := Cfg{"a": 1}.Merge(Cfg{"a": 2, "b": 3})
	if !reflect.DeepEqual(merged, Cfg{"a": 1, "b": 3}) {
		t.Errorf("Merge = %v", merged)
	}
	for v, want := range map[any]string{nil: "", "s": "s", 3: "3", 0.25: "0.25", true: "true"} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q", v, got)
		}
	}
	if got := FormatValue([]string{"a", "b"}); got != "a,b" {
		t.Errorf("FormatValue(list) = %q", got)
	}
	if got := FormatValue(map[string]string{"b": "2", "a": "1"}); got != "a:1,b:2" {
		t.Errorf("FormatValue(map) = %q", got)
	}
	// What FormatValue writes, Cast reads back.
	for _, opt := range testOpts {
		for _, v := range []any{"x", 7, 1.5, true, []string{"a", "b"}, map[string]string{"k": "v"}} {
			if !opt.Type.holds(v) {
				continue
			}
			back, err := opt.Cast(FormatValue(v))
			if err != nil || !reflect.DeepEqual(back, v) {
				t.Errorf("%s: Cast(FormatValue(%v)) = %v, %v", opt.Name, v, back, err)
			}
		}
	}
}

func TestParseBool(t *testing.T) {
	for _, s := range []string{"true", "True", "TRUE", "1", "yes", "on", " t ", "Y"} {
		if b, err := ParseBool(s); err != nil || !b {
			t.Errorf("ParseBool(%q) = %v, %v", s, b, err)
		}
	}
	for _, s := range []string{"false", "False", "0", "no", "off", "f", "N"} {
		if b, err := ParseBool(s); err != nil || b {
			t.Errorf("ParseBool(%q) = %v, %v", s, b, err)
		}
	}
	for _, s := range []string{"", "maybe", "2", "truee"} {
		if _, err := ParseBool(s); err == nil {
			t.Errorf("ParseBool(%q): no error", s)
		}
	}
	if got := SplitList(" a, b;;c ,"); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("SplitList = %q", got)
	}
}

func TestMacros(t *testing.T) {
	m := Macros{AppID: "echo-abc", ReplicaID: "1", ImgRoot: "/root", Rank0Env: Rank0Env}
	for in, want := range map[string]string{
		"":                                      "",
		"plain":                                 "plain",
		"${app_id}":                             "echo-abc",
		"$app_id/x":                             "echo-abc/x",
		"${replica_id}${img_root}":              "1/root",
		"$${${rank0_env}:=localhost}:29500":     "${TORCHX_RANK0_HOST:=localhost}:29500",
		"$$":                                    "$",
		"$$app_id":                              "$app_id",
		"${unknown} $unknown $app_idx":          "${unknown} $unknown $app_idx",
		"${APP_ID}":                             "${APP_ID}",
		"$":                                     "$",
		"a$":                                    "a$",
		"$1 $- ${":                              "$1 $- ${",
		"${a b}${app_id}":                       "${a b}echo-abc",
		"${a ${app_id}":                         "${a echo-abc",
		"${{ x }} ${app_id}":                    "${{ x }} echo-abc",
		"'${app_id}' --node_rank ${replica_id}": "'echo-abc' --node_rank 1",
	} {
		if got := m.Substitute(in); got != want {
			t.Errorf("Substitute(%q) = %q, want %q", in, got, want)
		}
	}
	r := NewRole("r", "img", "${app_id}", "${app_id}")
	r.Env["X"] = "${replica_id}"
	r.Metadata = map[string]string{"m": "$img_root"}
	got := m.Apply(r)
	if got.Entrypoint != "${app_id}" || got.Args[0] != "echo-abc" || got.Env["X"] != "1" || got.Metadata["m"] != "/root" {
		t.Errorf("Apply = %+v", got)
	}
	if r.Args[0] != "${app_id}" || r.Env["X"] != "${replica_id}" {
		t.Error("Apply changed the role it was given")
	}
}

func TestNames(t *testing.T) {
	for _, s := range []string{"a", "echo-kf2vb0x9qwm3", "A.b_c-1", "9x", strings.Repeat("a", 128)} {
		if err := ValidateName("name", s); err != nil {
			t.Errorf("ValidateName(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", ".", "..", "-a", "_a", "a/b", "a b", "é", strings.Repeat("a", 129), "a\x00"} {
		if err := ValidateName("name", s); err == nil {
			t.Errorf("ValidateName(%q): no error", s)
		}
	}
	for in, prefix := range map[string]string{"echo": "echo-", "My App!": "my-app-", "": "app-", "..": "app-", "-x": "x-", strings.Repeat("b", 60): strings.Repeat("b", 40) + "-"} {
		id := MakeAppID(in)
		if !strings.HasPrefix(id, prefix) || len(id) != len(prefix)+idSuffixLen || ValidateName("app id", id) != nil {
			t.Errorf("MakeAppID(%q) = %q", in, id)
		}
	}
	if a, b := RandomID(), RandomID(); a == b || strings.ContainsAny(a, "8aeiouy") || !strings.ContainsAny(a[:1], idFirst) {
		t.Errorf("RandomID: %q %q", a, b)
	}
}

func TestResources(t *testing.T) {
	r, err := NamedResource("gpu.small")
	if err != nil || !reflect.DeepEqual(r, Resource{CPU: 8, GPU: 1, MemMB: 32 * 1024}) {
		t.Errorf("gpu.small = %+v, %v", r, err)
	}
	if _, err := NamedResource("gpu.smol"); err == nil || !strings.Contains(err.Error(), `did you mean "gpu.small"?`) {
		t.Errorf("gpu.smol: %v", err)
	}
	if r, _ := NamedResource("NULL"); !r.IsNull() {
		t.Error("NULL is not null")
	}
	for _, tc := range []struct {
		cpu, gpu, mem int
		h             string
		want          Resource
	}{
		{0, 0, 0, "", Resource{CPU: 2, GPU: 0, MemMB: 1024}},
		{4, 0, 2048, "", Resource{CPU: 4, GPU: 0, MemMB: 2048}},
		{4, 1, 2048, "cpu.nano", Resource{CPU: 1, GPU: 0, MemMB: 512}},
		// A named resource wins: the counts are not read (TorchX's specs.resource).
		{-1, -1, -1, "cpu.nano", Resource{CPU: 1, GPU: 0, MemMB: 512}},
	} {
		if got, err := ResourceOf(tc.cpu, tc.gpu, tc.mem, tc.h); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ResourceOf(%d, %d, %d, %q) = %+v, %v", tc.cpu, tc.gpu, tc.mem, tc.h, got, err)
		}
	}
	// A negative count: TorchX's `cpu or 2` keeps -1 in the AppDef; wick refuses it.
	for _, tc := range []struct {
		cpu, gpu, mem int
		err           string
	}{
		{-1, 0, 0, "invalid --cpu -1: a resource cannot be negative (0 takes the default)"},
		{2, -1, 0, "invalid --gpu -1: a resource cannot be negative (0 takes the default)"},
		{2, 0, -512, "invalid --memMB -512: a resource cannot be negative (0 takes the default)"},
	} {
		if _, err := ResourceOf(tc.cpu, tc.gpu, tc.mem, ""); err == nil || err.Error() != tc.err {
			t.Errorf("ResourceOf(%d, %d, %d) err = %v, want %q", tc.cpu, tc.gpu, tc.mem, err, tc.err)
		}
	}
	// dist.spmd's docstring: -h aws_p4d.24xlarge (torchx/specs/named_resources_aws.py:92:
	// memMB=1152 * GiB, GiB = int(1024 * MEM_TAX) = int(1024 * 0.96) = 983).
	if r, err := NamedResource("aws_p4d.24xlarge"); err != nil || r.CPU != 96 || r.GPU != 8 || r.MemMB != 1152*983 || r.Devices["vpc.amazonaws.com/efa"] != 4 {
		t.Errorf("aws_p4d.24xlarge = %+v, %v", r, err)
	}
	if len(NamedResources()) != 12+len(awsNamedResources()) {
		t.Errorf("NamedResources = %v", NamedResources())
	}
	for s, want := range map[string]string{
		"utils.ech": ` (did you mean "utils.echo"?)`,
		"ECHO":      ` (did you mean "echo"?)`,
		"xyzzy":     "",
		"ddp":       ` (did you mean "dist.ddp"?)`,
	} {
		if got := DidYouMean(s, []string{"utils.echo", "echo", "dist.ddp"}); s != "ddp" && got != want ||
			s == "ddp" && DidYouMean(s, []string{"utils.echo", "dist.ddp"}) != want {
			t.Errorf("DidYouMean(%q) = %q, want %q", s, got, want)
		}
	}
	if DidYouMean("x", nil) != "" {
		t.Error("DidYouMean with no candidates")
	}
}

func TestValidate(t *testing.T) {
	good := func() *AppDef { return &AppDef{Name: "app", Roles: []Role{NewRole("r", "img", "echo")}} }
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		change func(*AppDef)
		want   error
		msg    string
	}{
		{func(a *AppDef) { a.Roles = nil }, ErrNoRoles, `app "app": app has no roles`},
		{func(a *AppDef) { a.Roles[0].Entrypoint = "" }, ErrEmptyEntrypoint, `role "r": empty entrypoint`},
		{func(a *AppDef) { a.Roles[0].Entrypoint = Missing }, ErrEmptyEntrypoint, `role "r": empty entrypoint`},
		{func(a *AppDef) { a.Roles[0].NumReplicas = 0 }, ErrBadReplicas, `role "r": num_replicas must be at least 1 (got 0)`},
		{func(a *AppDef) { a.Name = "a/b" }, nil, `app name "a/b" may hold only`},
		{func(a *AppDef) { a.Roles[0].Name = "" }, nil, "role name is empty"},
		{func(a *AppDef) { a.Roles = append(a.Roles, a.Roles[0]) }, nil, `role "r" appears twice`},
		{func(a *AppDef) { a.Roles[0].MinReplicas = 2 }, nil, "min_replicas 2 exceeds num_replicas 1"},
		{func(a *AppDef) { a.Roles[0].MaxRetries = -1 }, nil, "max_retries must not be negative"},
		{func(a *AppDef) { a.Roles[0].RetryPolicy = "SOMETIMES" }, nil, `unknown retry policy "SOMETIMES"`},
	} {
		a := good()
		tc.change(a)
		err := a.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.msg) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("err = %v, want %q", err, tc.msg)
		}
	}
	for in, want := range map[string]RetryPolicy{"": RetryApplication, "replica": RetryReplica, "Role": RetryRole, "APPLICATION": RetryApplication} {
		if got, err := ParseRetryPolicy(in); err != nil || got != want {
			t.Errorf("ParseRetryPolicy(%q) = %q, %v", in, got, err)
		}
	}
	a := good()
	a.Roles[0].PortMap = map[string]int{"c10d": 1}
	c := a.Clone()
	c.Roles[0].Args = append(c.Roles[0].Args, "x")
	c.Roles[0].Env["A"] = "1"
	c.Roles[0].PortMap["c10d"] = 2
	if len(a.Roles[0].Args) != 0 || a.Roles[0].Env["A"] != "" || a.Roles[0].PortMap["c10d"] != 1 {
		t.Error("Clone shares state")
	}
	if a.Role("r") == nil || a.Role("x") != nil || !reflect.DeepEqual(a.RoleNames(), []string{"r"}) {
		t.Error("Role / RoleNames")
	}
}

func TestAppState(t *testing.T) {
	for i, name := range []string{"UNSUBMITTED", "SUBMITTED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "UNKNOWN"} {
		s := AppState(i)
		if s.String() != name {
			t.Errorf("%d: %s", i, s)
		}
		if got, err := ParseAppState(strings.ToLower(name)); err != nil || got != s {
			t.Errorf("ParseAppState(%q) = %v, %v", name, got, err)
		}
		var back AppState
		if err := json.Unmarshal([]byte(`"`+name+`"`), &back); err != nil || back != s {
			t.Errorf("unmarshal %s: %v %v", name, back, err)
		}
	}
	var s AppState
	if err := s.UnmarshalText([]byte("5")); err != nil || s != Failed {
		t.Errorf("numeric code: %v %v", s, err)
	}
	if _, err := ParseAppState("DONE"); err == nil {
		t.Error("ParseAppState(DONE)")
	}
	if !Failed.Terminal() || Running.Terminal() || !Running.Started() || Pending.Started() {
		t.Error("Terminal / Started")
	}
	if msg := ErrorMessage(`{"message": {"message": "RuntimeError: x", "extraInfo": {}}}`); msg != "RuntimeError: x" {
		t.Errorf("ErrorMessage = %q", msg)
	}
	if msg := ErrorMessage(`{"message": "flat"}`); msg != "flat" {
		t.Errorf("ErrorMessage = %q", msg)
	}
	if msg := ErrorMessage("not json"); msg != "not json" {
		t.Errorf("ErrorMessage = %q", msg)
	}
}

func TestFloatRunOptsAreFinite(t *testing.T) {
	opt := RunOpt{Name: "x", Type: OptFloat}
	for _, s := range []string{"nan", "NaN", "inf", "-Inf", "+inf", "1e400", "infinity"} {
		if v, err := opt.Cast(s); err == nil {
			t.Errorf("Cast(%q) = %v, want an error", s, v)
		} else if !strings.Contains(err.Error(), "finite") {
			t.Errorf("Cast(%q): %v", s, err)
		}
	}
	if v, err := opt.Cast("1e10"); err != nil || v.(float64) != 1e10 {
		t.Errorf("Cast(1e10) = %v, %v", v, err)
	}
}

// TestCfgStringsRoundTrip: run options recorded with an app (CfgStrings) read back
// (CfgValues) as they were, every type; one this version does not know, or cannot
// read, is left out.
func TestCfgStringsRoundTrip(t *testing.T) {
	cfg := Cfg{"log_dir": "/tmp/x y", "prepend_cwd": true, "copy_env": []string{"A_*", "B_*"},
		"env": map[string]string{"A": "1", "B": "x:y"}, "n": 3, "ratio": 0.5}
	raw := CfgStrings(cfg)
	if got := testOpts.CfgValues(raw); !reflect.DeepEqual(got, cfg) {
		t.Errorf("CfgValues(CfgStrings(%#v)) = %#v (via %q)", cfg, got, raw)
	}
	raw["gone_option"] = "1" // recorded by another version
	raw["n"] = "many"        // cannot be read as this version's int
	got := testOpts.CfgValues(raw)
	if _, ok := got["gone_option"]; ok || got["n"] != nil {
		t.Errorf("CfgValues kept what it cannot read: %#v", got)
	}
	if CfgStrings(nil) != nil || testOpts.CfgValues(nil) != nil {
		t.Error("no options must record and read back as nil")
	}
}
