package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"[local_cwd]\nlog_dir = /tmp\n",
		"[component:dist.ddp]\nj = 2x8\nenv = A=B,C=D\nscript_args = -a b --c=d e\n",
		"[cli:run]\nscheduler = local_cwd\ncomponent = dist.ddp\n",
		"[s]\na = 1\n  continued\n\n  more\nb: %(a)s %%\n",
		"# comment\n; comment\n[s]\n",
		"[s]\na = %(a)s\n",
		"[s]\na = 50%\n",
		"\ufeff[s]\r\na=1\r\n",
		"[DEFAULT]\n",
		"a = 1\n",
		"[",
		"[s]\n=\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("f", data)
		lines := strings.Count(string(data), "\n") + 1
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 || se.Line > lines || strings.Contains(se.Msg, "\n") && !strings.Contains(string(data), "\n") {
				t.Errorf("bad error %v", err)
			}
			return
		}
		c := &Config{files: []*File{file}}
		for _, s := range file.Sections {
			if s.Line < 1 || s.Line > lines {
				t.Errorf("section %q at line %d of %d", s.Name, s.Line, lines)
			}
			for _, e := range s.Entries {
				if e.Key == "" || e.Line <= s.Line || e.Line > lines {
					t.Errorf("entry %+v in section at %d", e, s.Line)
				}
			}
			_, _ = c.RunOpts(s.Name, opts)
		}
		_ = c.CLIRun()
		_ = c.CheckSections([]string{"local_cwd"})
		if _, err := c.RunOpts("local_cwd", spec.RunOpts{}); err != nil && !strings.HasPrefix(err.Error(), "f:") {
			t.Errorf("error does not name the file: %v", err)
		}
	})
}
