package local

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestSupervisorHelperBeside: with wick-supervisor beside wick's binary, the app's
// supervisor and its reaper are that program, `wick-supervisor __supervise APP_DIR`
// (here a script that notes its arguments and runs the test binary, which doubles
// as wick); wick itself runs neither.
func TestSupervisorHelperBeside(t *testing.T) {
	bin := t.TempDir()
	wick := filepath.Join(bin, "wick")
	if err := os.Symlink(os.Args[0], wick); err != nil {
		t.Fatal(err)
	}
	used := filepath.Join(bin, "used")
	script := "#!/bin/sh\nprintf '%s %s reaper=%s\\n' \"$1\" \"$2\" \"$" + envReaper + "\" >>'" + used + "'\nexec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, SupervisorHelper), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := testScheduler(t, false)
	s.cfg.Self = []string{wick}
	// Long enough for the reaper to start (reaperDelay).
	id := start(t, s, appOf("helper", role("a", "sh", "-c", "sleep 0.5")), nil)
	if got := waitApp(t, s, id); got.State != spec.Succeeded {
		t.Fatalf("state %s: %s", got.State, got.Msg)
	}
	dir, _ := s.appDir(id)
	b, err := os.ReadFile(used)
	if err != nil {
		t.Fatalf("the helper never ran: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{SuperviseVerb + " " + dir + " reaper=", SuperviseVerb + " " + dir + " reaper=1"}
	if !slices.Equal(lines, want) {
		t.Errorf("the helper ran as\n%s\nwant the supervisor, then the reaper:\n%s", b, strings.Join(want, "\n"))
	}
}

// TestSupervisorCommand: the helper is taken only beside a wick given as one absolute
// path, and only as an executable regular file; else the supervisor is wick itself.
func TestSupervisorCommand(t *testing.T) {
	dir := t.TempDir()
	wick := filepath.Join(dir, "wick")
	helper := filepath.Join(dir, SupervisorHelper)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
		self  []string
		want  []string
	}{
		{"missing", func(t *testing.T) {}, []string{wick}, []string{wick}},
		{"beside", func(t *testing.T) { write(t, helper, 0o755) }, []string{wick}, []string{helper}},
		{"not executable", func(t *testing.T) { write(t, helper, 0o644) }, []string{wick}, []string{wick}},
		{"a directory", func(t *testing.T) {
			if err := os.Mkdir(helper, 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{wick}, []string{wick}},
		{"a wrapped wick", func(t *testing.T) { write(t, helper, 0o755) }, []string{"/bin/sh", "-c", `exec "$0" "$@"`, wick}, []string{"/bin/sh", "-c", `exec "$0" "$@"`, wick}},
		{"a relative wick", func(t *testing.T) { write(t, helper, 0o755) }, []string{"wick"}, []string{"wick"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(helper)
			tc.setup(t)
			if got := supervisorCommand(tc.self); !slices.Equal(got, tc.want) {
				t.Errorf("supervisorCommand(%q) = %q, want %q", tc.self, got, tc.want)
			}
		})
	}
}

func write(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
