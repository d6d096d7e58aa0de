package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the first-contact scenarios of testdata/script: each .txtar file is
// a few commands a newcomer types and what they must see (testscript's language: exec,
// stdout, stderr, ! for a command that fails). The wick of `make build` is on PATH,
// with a WICK_HOME and HOME of the script's own; a scenario is a file to add.
func TestScripts(t *testing.T) {
	t.Parallel()
	bin := filepath.Dir(wickBinary(t))
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("WICK_HOME", filepath.Join(env.WorkDir, ".wick"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, ".home"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("TORCHX_INTERNAL_SESSION_ID", os.Getenv("TORCHX_INTERNAL_SESSION_ID"))
			return nil
		},
	})
}
