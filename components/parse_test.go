package components

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// testComponent has one parameter of every kind, and varargs.
func testComponent(varargs string) *Component {
	return &Component{
		Name: "test.comp",
		Params: []Param{
			{Name: "msg", Type: String, Required: true, Help: "a message"},
			{Name: "n", Type: Int, Default: "1", Help: "a count"},
			{Name: "ratio", Short: "r", Type: Float, Default: "0.5", Help: "a ratio"},
			{Name: "verbose", Short: "v", Type: Bool, Default: "false", Help: "talk"},
			{Name: "quiet", Short: "q", Type: Bool, Default: "false", Help: "do not talk"},
			{Name: "tags", Type: List, Optional: true, Help: "tags"},
			{Name: "env", Type: Map, Optional: true, Help: "env"},
			{Name: "opt", Type: String, Optional: true, Help: "maybe"},
			{Name: "rdzv_port", Type: Int, Default: "29500", Help: "a port"},
		},
		Varargs: varargs,
		Build:   func(Args) (*spec.AppDef, error) { return nil, nil },
	}
}

func TestParseValues(t *testing.T) {
	c := testComponent("rest")
	for _, tc := range []struct {
		argv    []string
		defs    map[string]string
		want    map[string]any
		varargs []string
	}{
		{
			argv: []string{"--msg", "hi"},
			want: map[string]any{"msg": "hi", "n": 1, "ratio": 0.5, "verbose": false, "quiet": false, "rdzv_port": 29500},
		},
		{
			argv: []string{"--msg=hi", "-n", "3", "-r", "2.5", "-v", "--tags", "a, b,,c", "--env", "A=1,B=x,y;C='p=q'", "--opt", "o", "--rdzv-port", "1"},
			want: map[string]any{"msg": "hi", "n": 3, "ratio": 2.5, "verbose": true, "quiet": false, "rdzv_port": 1,
				"tags": []string{"a", "b", "c"}, "env": map[string]string{"A": "1", "B": "x,y", "C": "p=q"}, "opt": "o"},
		},
		{
			// TorchX's bool spelling; stacked short bools; an Optional given "" is unset.
			argv: []string{"--msg", "", "--verbose", "True", "-q", "--opt="},
			want: map[string]any{"msg": "", "n": 1, "ratio": 0.5, "verbose": true, "quiet": true, "rdzv_port": 29500},
		},
		{
			argv: []string{"--msg", "x", "--verbose", "false", "-q", "FALSE"},
			want: map[string]any{"msg": "x", "n": 1, "ratio": 0.5, "verbose": false, "quiet": false, "rdzv_port": 29500},
		},
		{
			// Config defaults override declared ones; argv overrides both; a required
			// parameter may come from the config.
			argv:    []string{"-n", "5"},
			defs:    map[string]string{"msg": "from config", "n": "4", "verbose": "True", "rest": "-a 'b c' --d=e"},
			want:    map[string]any{"msg": "from config", "n": 5, "ratio": 0.5, "verbose": true, "quiet": false, "rdzv_port": 29500},
			varargs: []string{"-a", "b c", "--d=e"},
		},
		{
			// The first positional starts the varargs: flags after it are the program's.
			argv:    []string{"--msg", "m", "prog", "-n", "2", "--", "x"},
			defs:    map[string]string{"rest": "ignored"},
			want:    map[string]any{"msg": "m", "n": 1, "ratio": 0.5, "verbose": false, "quiet": false, "rdzv_port": 29500},
			varargs: []string{"prog", "-n", "2", "--", "x"},
		},
		{
			argv:    []string{"--msg", "m", "--", "-n", "2"},
			want:    map[string]any{"msg": "m", "n": 1, "ratio": 0.5, "verbose": false, "quiet": false, "rdzv_port": 29500},
			varargs: []string{"-n", "2"},
		},
		{
			// A negative number is a value, not a flag (argparse's
			// _negative_number_matcher); so is a word with a space; --msg=-x gives a
			// value that starts with '-'.
			argv: []string{"--msg=-x", "-n", "-2", "--ratio", "-.5", "--opt", "-a b"},
			want: map[string]any{"msg": "-x", "n": -2, "ratio": -0.5, "verbose": false, "quiet": false, "rdzv_port": 29500, "opt": "-a b"},
		},
		{
			// argparse: a bool takes the next token whatever it is, and TorchX decodes
			// it (0 is false); the flags after it stay flags (issue #33's
			// "--debug 0 --image foo:1").
			argv: []string{"--msg", "m", "--verbose", "0", "-n", "3", "-q", "no", "--tags", "a"},
			want: map[string]any{"msg": "m", "n": 3, "ratio": 0.5, "verbose": false, "quiet": false, "rdzv_port": 29500, "tags": []string{"a"}},
		},
		{
			// A bare bool before another flag is true (argparse would refuse it).
			argv: []string{"--verbose", "--msg", "m", "--quiet=TRUE"},
			want: map[string]any{"msg": "m", "n": 1, "ratio": 0.5, "verbose": true, "quiet": true, "rdzv_port": 29500},
		},
		{
			// The last value of a repeated flag wins, as in argparse; unambiguous
			// abbreviations (argparse's allow_abbrev): --ra for --ratio, --rd for
			// --rdzv_port, --ms for --msg.
			argv: []string{"--ms", "a", "--msg", "b", "-n", "1", "-n", "2", "--ra=3", "--rd", "7", "--verbose", "true", "--verbose=false", "--"},
			want: map[string]any{"msg": "b", "n": 2, "ratio": 3.0, "verbose": false, "quiet": false, "rdzv_port": 7},
		},
	} {
		args, err := c.Parse(tc.argv, tc.defs)
		if err != nil {
			t.Errorf("%q: %v", tc.argv, err)
			continue
		}
		if !reflect.DeepEqual(args.Values, tc.want) {
			t.Errorf("%q: values\n got %#v\nwant %#v", tc.argv, args.Values, tc.want)
		}
		if len(args.Varargs) > 0 || len(tc.varargs) > 0 {
			if !reflect.DeepEqual(args.Varargs, tc.varargs) {
				t.Errorf("%q: varargs %q, want %q", tc.argv, args.Varargs, tc.varargs)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		varargs string
		argv    []string
		defs    map[string]string
		err     string
	}{
		{"", nil, nil, "missing required parameter --msg"},
		{"", []string{"--msg", "a", "-n", "x"}, nil, `invalid value "x" for -n: want an int`},
		{"", []string{"--msg", "a", "-n", "1.5"}, nil, `invalid value "1.5" for -n: want an int`},
		{"", []string{"--msg", "a", "--ratio", "fast"}, nil, `invalid value "fast" for --ratio: want a float`},
		{"", []string{"--msg", "a", "--verbose=sure"}, nil, `invalid value "sure" for --verbose: want a bool (true or false)`},
		{"", []string{"--msg", "a", "--env", "novalue"}, nil, `invalid value "novalue" for --env: want a map written KEY=VALUE[,KEY=VALUE...]`},
		// A bool's value that is not true or false is an error naming the flag, never
		// the start of the program's arguments; 1 and yes, which TorchX reads as false.
		{"rest", []string{"--msg", "a", "--verbose", "train.py", "x"}, nil, `invalid value "train.py" for --verbose: want a bool (true or false)`},
		{"", []string{"--msg", "a", "--verbose", "1"}, nil, `invalid value "1" for --verbose: want true or false (TorchX would read it as false)`},
		{"", []string{"--msg", "a", "-q", "yes"}, nil, `invalid value "yes" for --quiet: want true or false (TorchX would read it as false)`},
		{"", []string{"--msg", "--verbose"}, nil, `flag --msg needs a value (--verbose is a flag; for a value that starts with '-' write --msg=--verbose)`},
		{"", []string{"--msg", "a", "-n", "-x"}, nil, `flag -n needs a value (-x is a flag; for a value that starts with '-' write -n=-x)`},
		{"", []string{"--msg", "a", "--r", "1"}, nil, `ambiguous flag --r for test.comp: it could be --ratio, --rdzv_port`},
		{"", []string{"--msg", "a", "--"}, map[string]string{"n": "-"}, `invalid default "-" for -n: want an int`},
		{"", []string{"--msg", "a", "--n="}, nil, `invalid value "" for -n: want an int`},
		{"", []string{"--msg", "a", "--mgs", "b"}, nil, `unknown flag --mgs for test.comp (did you mean --msg?)`},
		{"", []string{"--msg", "a", "--zzzzzz"}, nil, `unknown flag --zzzzzz for test.comp`},
		{"", []string{"--msg", "a", "-x"}, nil, `unknown flag -x for test.comp`},
		{"", []string{"--msg", "a", "--x\ny"}, nil, `unknown flag --"x\ny" for test.comp`},
		// One dash before a long name: named whole, as typed, not as its first letter.
		{"", []string{"--msg", "a", "-rdzv_port", "1"}, nil, `unknown flag -rdzv_port for test.comp (did you mean --rdzv_port?)`},
		{"", []string{"--msg", "a", "-ratio=2"}, nil, `unknown flag -ratio for test.comp (did you mean --ratio?)`},
		{"", []string{"--msg", "a", "-vzq"}, nil, `unknown flag -z in -zq for test.comp`},
		{"", []string{"-mgs", "a"}, nil, `unknown flag -m in -mgs for test.comp (did you mean --msg?)`},
		{"", []string{"--msg"}, nil, "flag --msg needs a value"},
		{"", []string{"--msg", "a", "extra"}, nil, `unexpected argument "extra": test.comp takes no positional arguments`},
		{"", []string{"--msg", "a", "--", "extra"}, nil, `unexpected argument "extra": test.comp takes no positional arguments`},
		{"", []string{"--msg", "a", "-test.v"}, nil, "unknown flag -test.v for test.comp"},
		{"", []string{"--msg", "a"}, map[string]string{"nn": "2"}, `default for unknown parameter "nn" of test.comp (did you mean "n"?)`},
		{"", []string{"--msg", "a"}, map[string]string{"n": "two"}, `invalid default "two" for -n: want an int`},
		{"rest", []string{"--msg", "a"}, map[string]string{"rest": "'unterminated"}, "invalid default for rest: unterminated ' quote"},
	} {
		c := testComponent(tc.varargs)
		_, err := c.Parse(tc.argv, tc.defs)
		if err == nil || err.Error() != tc.err {
			t.Errorf("%q %v: err = %v, want %q", tc.argv, tc.defs, err, tc.err)
		}
	}
}

func TestParseHelp(t *testing.T) {
	c := testComponent("")
	for _, argv := range [][]string{{"--help"}, {"-h"}, {"--msg", "a", "--help"}} {
		if _, err := c.Parse(argv, nil); !errors.Is(err, ErrHelp) {
			t.Errorf("%q: err = %v, want ErrHelp", argv, err)
		}
	}
	// A component with a parameter h keeps -h for it.
	ddp, _ := Find("dist.ddp", FindOptions{})
	args, err := ddp.Parse([]string{"-h", "gpu.small", "--script", "a.py"}, nil)
	if err != nil || args.String("h") != "gpu.small" {
		t.Errorf("-h gpu.small: %v %v", args.Values["h"], err)
	}
	if _, err := ddp.Parse([]string{"--help"}, nil); !errors.Is(err, ErrHelp) {
		t.Errorf("--help: err = %v", err)
	}
	// After the varargs start, --help belongs to the program.
	sh, _ := Find("utils.sh", FindOptions{})
	if args, err := sh.Parse([]string{"ls", "--help"}, nil); err != nil || !reflect.DeepEqual(args.Varargs, []string{"ls", "--help"}) {
		t.Errorf("ls --help: %q %v", args.Varargs, err)
	}
}

func TestParseBadComponents(t *testing.T) {
	for _, tc := range []struct {
		params  []Param
		varargs string
		err     string
	}{
		{[]Param{{Name: "a-b"}}, "", `parameter name "a-b" must be`},
		{[]Param{{Name: ""}}, "", `parameter name "" must be`},
		{[]Param{{Name: "help"}}, "", `"help" is reserved`},
		{[]Param{{Name: "a"}, {Name: "a"}}, "", `parameter "a" declared twice`},
		{[]Param{{Name: "a", Short: "x"}, {Name: "b", Short: "x"}}, "", "short form -x used by both --a and --b"},
		{[]Param{{Name: "a", Short: "xy"}}, "", `short form "xy" of --a must be one letter`},
		{[]Param{{Name: "x"}, {Name: "b", Short: "x"}}, "", "short form -x used by both --x and --b"},
		{[]Param{{Name: "a", Type: ParamType(42)}}, "", "unknown type"},
		{[]Param{{Name: "a"}}, "a", `varargs name "a" is also a parameter`},
		{[]Param{{Name: "a"}}, "1x", `varargs name "1x" must be an identifier`},
		{[]Param{{Name: "a", Type: Int, Default: "x"}}, "", "test.comp: parameter -a has a bad default: want an int"},
	} {
		c := &Component{Name: "test.comp", Params: tc.params, Varargs: tc.varargs}
		if _, err := c.Parse(nil, nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: err = %v, want %q", tc.params, err, tc.err)
		}
	}
}

func TestParseNNodes(t *testing.T) {
	for _, tc := range []struct {
		j    string
		want Nodes
	}{
		{"2:4x8", Nodes{Min: 2, Max: 4, NProcPerNode: 8, Rep: "2:4"}},
		{"2x8", Nodes{Min: 2, Max: 2, NProcPerNode: 8, Rep: "2"}},
		{"02x8", Nodes{Min: 2, Max: 2, NProcPerNode: 8, Rep: "02"}},
		{"4", Nodes{Min: 1, Max: 1, NProcPerNode: 4, Rep: "1"}},
		{"1x1", Nodes{Min: 1, Max: 1, NProcPerNode: 1, Rep: "1"}},
		{"0:1x2", Nodes{Min: 0, Max: 1, NProcPerNode: 2, Rep: "0:1"}},
		{"4096x4096", Nodes{Min: 4096, Max: 4096, NProcPerNode: 4096, Rep: "4096"}},
	} {
		got, err := ParseNNodes(tc.j)
		if err != nil || got != tc.want {
			t.Errorf("ParseNNodes(%q) = %+v, %v; want %+v", tc.j, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ j, err string }{
		{"", "invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: "},
		{"x", "invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: x"},
		{"2x", "invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: 2x"},
		{"x2", "invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: x2"},
		{"2:4", "invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: 2:4"},
		{"1x2x3", "invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: 1x2x3"},
		{"-1x2", "invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: -1x2"},
		{" 2x2", `invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: " 2x2"`},
		{"2\nx2", `invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: "2\nx2"`},
		{"2X2", "invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: 2X2"},
		{"0x2", "invalid -j 0x2: a job needs at least 1 node"},
		{"2x0", "invalid -j 2x0: a node needs at least 1 process"},
		{"0", "invalid -j 0: a node needs at least 1 process"},
		{"4:2x1", "invalid -j 4:2x1: the minimum number of nodes (4) exceeds the maximum (2)"},
		{"99999999999999999999x1", "invalid -j 99999999999999999999x1: 99999999999999999999 is too large"},
		{"1x1000000", "invalid -j 1x1000000: a node runs at most 4096 processes, as an app has at most 4096 replicas (got 1000000)"},
		{"4097x1", "invalid -j 4097x1: an app has at most 4096 replicas (got 4097)"},
		{"1:5000x2", "invalid -j 1:5000x2: an app has at most 4096 replicas (got 5000)"},
	} {
		if _, err := ParseNNodes(tc.j); err == nil || err.Error() != tc.err {
			t.Errorf("ParseNNodes(%q) err = %v, want %q", tc.j, err, tc.err)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":             "''",
		"abc":          "abc",
		"a-b_c.d/e:f":  "a-b_c.d/e:f",
		"@%+=,":        "@%+=,",
		"a b":          "'a b'",
		"$HOME":        "'$HOME'",
		"${app_id}":    "'${app_id}'",
		"it's":         `'it'"'"'s'`,
		"tab\there":    "'tab\there'",
		"é":            "'é'",
		"x*":           "'x*'",
		"--rdzv_id":    "--rdzv_id",
		"localhost:0":  "localhost:0",
		"2:4":          "2:4",
		"a\nb":         "'a\nb'",
		"semi;colon":   "'semi;colon'",
		`back\slash`:   `'back\slash'`,
		"quote\"d":     `'quote"d'`,
		"paren(s)":     "'paren(s)'",
		"tilde~":       "'tilde~'",
		"excl!":        "'excl!'",
		"hash#":        "'hash#'",
		"amp&":         "'amp&'",
		"pipe|":        "'pipe|'",
		"lt<gt>":       "'lt<gt>'",
		"question?":    "'question?'",
		"bracket[0]":   "'bracket[0]'",
		"brace{}":      "'brace{}'",
		"caret^":       "'caret^'",
		"backtick`":    "'backtick`'",
		"UPPER_lower9": "UPPER_lower9",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                     nil,
		"   ":                  nil,
		"-a b --c=d e":         {"-a", "b", "--c=d", "e"},
		`a 'b c' "d e" f\ g`:   {"a", "b c", "d e", "f g"},
		`"a\"b" 'c\d' x""y ''`: {`a"b`, `c\d`, "xy", ""},
		"a\tb\nc":              {"a", "b", "c"},
		`"$x\$y"`:              {`$x$y`},
		`trail\`:               {"trail"},
	} {
		got, err := SplitWords(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`'a`, `"a`, `a "b\"`} {
		if _, err := SplitWords(in); err == nil {
			t.Errorf("SplitWords(%q): no error", in)
		}
	}
}

func TestParseRunName(t *testing.T) {
	// TorchX's StructuredNameArgument doctests.
	for _, tc := range []struct{ name, script, m, exp, run string }{
		{"foo/bar", "bar/baz.py", "", "foo", "bar"},
		{"foo/", "bar/baz.py", "", "foo", "baz"},
		{"/bar", "bar/baz.py", "", "default-experiment", "bar"},
		{"foobar", "", "foo.bar", "default-experiment", "foobar"},
		{"foo/bar", "", "foo.bar.baz", "foo", "bar"},
		{"foo/", "", "foo.bar.baz", "foo", "baz"},
		{"/bar", "", "foo.bar.baz", "default-experiment", "bar"},
		{"/", "a/.hidden", "", "default-experiment", ".hidden"},
		{"/", "a/b.tar.gz", "", "default-experiment", "b.tar"},
		{"a/b/c", "x.py", "", "a", "b/c"},
	} {
		got := ParseRunName(tc.name, tc.script, tc.m)
		if got.Experiment != tc.exp || got.Run != tc.run {
			t.Errorf("ParseRunName(%q, %q, %q) = %+v, want %s/%s", tc.name, tc.script, tc.m, got, tc.exp, tc.run)
		}
	}
}

func TestUsage(t *testing.T) {
	ddp, _ := Find("dist.ddp", FindOptions{})
	u := ddp.Usage()
	for _, want := range []string{
		"usage: wick run [RUN OPTIONS] dist.ddp [FLAGS] [--] [script_args...]",
		"  -j, --j string ",
		`(default: "1x2")`,
		"  -h, --h string ",
		"      --help ",
		"      --rdzv_port int ",
		"(default: 29500)",
		"script_args...",
		"wick run dist.ddp -j 2x4 --script main.py",
	} {
		if !strings.Contains(u, want) {
			t.Errorf("dist.ddp usage lacks %q:\n%s", want, u)
		}
	}
	touch, _ := Find("utils.touch", FindOptions{})
	u = touch.Usage()
	for _, want := range []string{"--file string", "file to create (required)", "-h, --help"} {
		if !strings.Contains(u, want) {
			t.Errorf("utils.touch usage lacks %q:\n%s", want, u)
		}
	}
}

func TestParamTypeString(t *testing.T) {
	for typ, want := range map[ParamType]string{String: "string", Int: "int", Float: "float", Bool: "bool", List: "list", Map: "map", 9: "ParamType(9)"} {
		if got := typ.String(); got != want {
			t.Errorf("%d: %q, want %q", int(typ), got, want)
		}
	}
}

// TestParseConfigBool: a bool default from .torchxconfig is read as TorchX reads it
// (torchx/util/types.py decode: only "true", in any case, is true), with a warning when
// the word means true elsewhere (issue #33: `debug = 1` leaves debug off under TorchX).
func TestParseConfigBool(t *testing.T) {
	c := testComponent("")
	for _, tc := range []struct {
		def  string
		want bool
		warn string
	}{
		{"True", true, ""},
		{"false", false, ""},
		{"0", false, ""},
		{"1", false, `verbose = 1 in the defaults of test.comp: read as false, as TorchX reads every word but "true" (write true or false)`},
		{"yes", false, `verbose = yes in the defaults of test.comp: read as false, as TorchX reads every word but "true" (write true or false)`},
	} {
		args, err := c.Parse([]string{"--msg", "m"}, map[string]string{"verbose": tc.def})
		if err != nil {
			t.Errorf("verbose = %s: %v", tc.def, err)
			continue
		}
		if args.Bool("verbose") != tc.want {
			t.Errorf("verbose = %s: %v, want %v", tc.def, args.Bool("verbose"), tc.want)
		}
		if got := strings.Join(args.Warnings, "\n"); got != tc.warn {
			t.Errorf("verbose = %s: warnings %q, want %q", tc.def, got, tc.warn)
		}
	}
	// --he abbreviates --help, which no parameter starts with.
	if _, err := c.Parse([]string{"--he"}, nil); !errors.Is(err, ErrHelp) {
		t.Errorf("--he: err = %v, want ErrHelp", err)
	}
}
