package components

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func FuzzParseNNodes(f *testing.F) {
	for _, s := range []string{"2:4x8", "2x8", "4", "1x1", "0x2", "2x", "x", "", "1:2:3x4", "99999999999999999999x1", "٣x2", "2 x 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, j string) {
		n, err := ParseNNodes(j)
		if err != nil {
			if !strings.Contains(err.Error(), "-j") {
				t.Errorf("error does not name -j: %v", err)
			}
			return
		}
		if n.Max < 1 || n.NProcPerNode < 1 || n.Min > n.Max || n.Min < 0 || n.Rep == "" {
			t.Errorf("ParseNNodes(%q) = %+v", j, n)
		}
		if !strings.HasSuffix(j, strings.TrimLeft(strings.Split(j, "x")[len(strings.Split(j, "x"))-1], "0")) {
			t.Errorf("ParseNNodes(%q): nproc not from the input", j)
		}
	})
}

func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{"-a b --c=d e", `a 'b c' "d e" f\ g`, `"a\"b"`, "'", `\`, "", "x\x00y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitWords(s)
		if err != nil {
			return
		}
		// Quoting the words back and splitting again gives the same words.
		again, err := SplitWords(shellJoin(words))
		if err != nil || !reflect.DeepEqual(again, words) && !(len(again) == 0 && len(words) == 0) {
			t.Errorf("SplitWords(%q) = %q; round trip %q, %v", s, words, again, err)
		}
	})
}

// FuzzComponentParse feeds arbitrary command lines (words separated by NUL) to every
// builtin: Parse and Build may fail, never panic, and errors are one line.
func FuzzComponentParse(f *testing.F) {
	for _, s := range []string{
		"-j\x002x2\x00--script\x00train.py",
		"--msg\x00hi",
		"--debug\x00True\x00-m\x00a.b",
		"echo\x00-n\x00hi",
		"--help",
		"-h\x00gpu.small",
		"--env\x00A=1,B='x,y'\x00--mounts\x00type=bind,src=/a,dst=/b",
		"--\x00--x",
		"-test.v",
		"--=x",
		"---x",
		"-",
		"--fail_rank\x001\x00--replicas\x003",
	} {
		f.Add(s)
	}
	comps := Builtins()
	comps = append(comps, testComponent(""), testComponent("rest"))
	f.Fuzz(func(t *testing.T, line string) {
		var argv []string
		if line != "" {
			argv = strings.Split(line, "\x00")
		}
		for _, c := range comps {
			args, err := c.Parse(argv, nil)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("%s %q: multi-line error %q", c.Name, argv, err)
				}
				continue
			}
			if c.Build != nil {
				_, _ = c.AppDef(args)
			}
		}
	})
}

// FuzzParseFile loads arbitrary component files: no panic, errors name the file, and
// what loads can be described, reloaded and built with its defaults.
func FuzzParseFile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "*.yaml"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"a: {app: {roles: [{name: r, entrypoint: e}]}}",
		"a: {params: [{name: x, type: list}], app: {roles: [{name: r, entrypoint: e, args: ['${{ x }}']}]}}",
		"a: &x {app: {roles: [{name: r, entrypoint: e}]}}\nb: *x\n",
		"a: [x, ${{ y }}]",
		"a:\n  app:\n    roles:\n      - name: r\n        entrypoint: e\n        env: {'${{ m }}': }\n",
		"- - - - [[[[{{{{",
		"a: !!binary aGVsbG8=",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		comps, err := ParseFile("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		for _, c := range comps {
			if _, err := ParseFile("again.yaml", []byte(c.Describe())); err != nil {
				t.Errorf("%s: the description does not load: %v\n%s", c.Name, err, c.Describe())
			}
			_ = c.Usage()
			if args, err := c.Parse(nil, nil); err == nil {
				_, _ = c.AppDef(args)
			}
		}
	})
}
