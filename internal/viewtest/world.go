package viewtest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Main is the TestMain of a view package whose tests launch local apps: the test
// binary doubles as wick's supervisor (`BINARY __supervise APP_DIR`, what the local
// schedulers start for each app), so the apps are real processes under a real
// supervisor without building wick.
func Main(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == local.SuperviseVerb {
		if err := local.Supervise(context.Background(), os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "wick:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Runner is a real Runner over the local schedulers (local_cwd, local_dir), its state
// and the replicas' working directory under t's temporary directory; the supervisors
// are this test binary (see Main). It is closed when t ends.
func Runner(t testing.TB) *runner.Runner {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg := &sched.Registry{}
	local.Register(reg)
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: t.TempDir(), WorkDir: t.TempDir(), Self: []string{self}})
	t.Cleanup(func() { _ = r.Close() })
	return r
}
