package cli

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wick-dev/wick/internal/testkit"
)

// builtWick is the wick binary built once for the package's tests: supervisors and
// demo.train re-execute it.
var builtWick string

func TestMain(m *testing.M) {
	// The same for every test, so set once here rather than by t.Setenv in newHarness,
	// which would forbid t.Parallel: a fixed session id keeps dry runs comparable, and
	// LOGLEVEL is TorchX's default, whatever the shell that runs the tests says.
	for k, v := range map[string]string{
		"TORCHX_INTERNAL_SESSION_ID": "00000000-0000-4000-8000-000000000000",
		"LOGLEVEL":                   "WARNING",
	} {
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	testkit.UseSlurm() // SLURM_CONF once, for the Slurm tests run in parallel
	dir, err := os.MkdirTemp("", "wick-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	builtWick = filepath.Join(dir, "wick")
	if err := testkit.BuildWick(builtWick, filepath.Join("..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, "building wick:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func wickBinary(t *testing.T) string {
	t.Helper()
	return builtWick
}

// TestWickBuiltAsMakeBuild: the tests run the wick users run, built as `make build`
// builds it: static, with no dynamic loader to start (no PT_INTERP program header).
func TestWickBuiltAsMakeBuild(t *testing.T) {
	f, err := elf.Open(wickBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the tests' wick is linked dynamically; make build's is static (CGO_ENABLED=0)")
		}
	}
}
