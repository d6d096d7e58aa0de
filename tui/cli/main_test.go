package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// builtWick is the wick binary built once for the package's tests: supervisors and
// demo.train re-execute it.
var builtWick string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wick-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	builtWick = filepath.Join(dir, "wick")
	build := exec.Command("go", "build", "-o", builtWick, "../..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build: static
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
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
