package pycomp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wick-dev/wick/internal/testkit"
)

// testPython is the interpreter the tests run TorchX with: Debian's, which imports the
// vendored TorchX with make setup's packages (python3-yaml, -fsspec, -tabulate,
// -filelock).
const testPython = "/usr/bin/python3"

// vendorPath is TorchX's source (commit b72ba038, 0.8.0dev0) beside the repository:
// ../shared/vendor/python, in a clone, a worktree of /work or CI's copy. Only tests
// use it: wick finds the user's TorchX wherever their Python does.
func vendorPath(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(dir), "shared", "vendor", "python")
		}
		dir = filepath.Dir(dir)
	}
	t.Fatal("no go.mod above the test's directory")
	return ""
}

// torchxEnv is the environment of a Python that imports the vendored TorchX, plus
// extra PYTHONPATH entries first (entry point packages).
func torchxEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PYTHONPATH=") && !strings.HasPrefix(kv, EnvPython+"=") {
			env = append(env, kv)
		}
	}
	path := strings.Join(append(extra, vendorPath(t)), string(os.PathListSeparator))
	return append(env, "PYTHONPATH="+path, "PYTHONDONTWRITEBYTECODE=1")
}

// torchxImport is what the first needTorchX found, for the others: the import asked
// once per package run, not once per test (a Python start each, ~0.3 CPU-s).
var torchxImport struct {
	once sync.Once
	out  string // the import's output when it failed
	err  error
}

// needTorchX skips (fails under CI=true) when Debian's python3 cannot import the
// vendored TorchX.
func needTorchX(t testing.TB) {
	t.Helper()
	torchxImport.once.Do(func() {
		cmd := exec.Command(testPython, "-c", "import torchx.specs, torchx.specs.finder, torchx.components.utils")
		cmd.Env = torchxEnv(t)
		out, err := cmd.CombinedOutput()
		torchxImport.out, torchxImport.err = string(out), err
	})
	if torchxImport.err == nil {
		return
	}
	msg := "TorchX is not importable by " + testPython + " with PYTHONPATH=" + vendorPath(t) +
		" (make setup installs python3-yaml python3-fsspec python3-tabulate python3-filelock): " + lastLine(torchxImport.out)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// newBridge is a Bridge on the vendored TorchX, working in dir. Its time limit, which
// stops a component that hangs, grows with the load (testkit.Scale): at load 30 on 2
// cores importing TorchX took more than DefaultTimeout.
func newBridge(t testing.TB, dir string, extra ...string) *Bridge {
	t.Helper()
	needTorchX(t)
	return &Bridge{Python: testPython, Dir: dir, Env: torchxEnv(t, extra...), Timeout: testkit.Scale(DefaultTimeout)}
}

// writeFile writes a test's component file.
func writeFile(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
