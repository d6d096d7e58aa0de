package viewtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
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
	state := t.TempDir()
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: state, WorkDir: t.TempDir(), Self: []string{self}})
	t.Cleanup(func() {
		settle(t, r, state)
		_ = r.Close()
	})
	return r
}

// settle ends what a test launched before its state directory is removed: a
// supervisor that is still writing its last files when t.TempDir's removal runs
// makes it fail ("directory not empty"). Running apps are cancelled, every app is
// waited for, then the state directory is removed as soon as nothing writes to it.
func settle(t testing.TB, r *runner.Runner, state string) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	apps, _ := r.List(ctx, "")
	for _, st := range apps {
		h, err := spec.ParseHandle(st.Handle)
		if err != nil {
			continue
		}
		if !st.State.Terminal() {
			_ = r.Cancel(ctx, h)
		}
		_, _ = r.Wait(ctx, h, 20*time.Millisecond)
	}
	testkit.Wait(t, 10*time.Second, "the apps' supervisors to finish writing", func() (bool, string) {
		err := os.RemoveAll(state)
		return err == nil, fmt.Sprint(err)
	})
}
