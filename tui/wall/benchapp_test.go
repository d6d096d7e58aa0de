package wall_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
)

// benchRunner is a runner over the real local schedulers in a fresh directory, for the
// benchmarks that read a real app (they need the wick binary TestMain built).
func benchRunner(b *testing.B) *runner.Runner {
	b.Helper()
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	if wickBin == "" {
		b.Skip("needs the wick binary (not with -short)")
	}
	dir := b.TempDir()
	reg := &sched.Registry{}
	local.Register(reg)
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: dir, WorkDir: dir, Self: []string{wickBin}})
	b.Cleanup(func() { _ = r.Close() })
	return r
}

// rankLinesApp runs an app of 4 replicas that each print n training-like lines
// ("[rank K] step N loss ..."), and returns its handle once it has ended (within
// within).
func rankLinesApp(b *testing.B, r *runner.Runner, name string, n int, within time.Duration) spec.Handle {
	b.Helper()
	role := spec.NewRole("trainer", spec.None, "sh", "-c", `seq -f "[rank $K] step %g loss 2.5000 lr 3.0e-04 grad_norm 1.55" 1 `+strconv.Itoa(n))
	role.NumReplicas = 4
	role.Env = map[string]string{"K": "${" + spec.MacroReplicaID + "}"}
	h, err := r.Run(context.Background(), &spec.AppDef{Name: name, Roles: []spec.Role{role}}, local.NameCwd, nil, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(testkit.Scale(within)); ; time.Sleep(50 * time.Millisecond) {
		if d, err := r.Describe(context.Background(), h); err == nil && d.Status.State.Terminal() {
			return h
		}
		if time.Now().After(deadline) {
			b.Fatal("the app never ended")
		}
	}
}

// benchContext is the views' context of a wall benchmark at 160x45, over r.
func benchContext(ctx context.Context, r *runner.Runner) *common.Context {
	return &common.Context{
		Ctx: ctx, Backend: r, Config: common.NoConfig{}, Theme: themes.ForBackground(true),
		Actions: common.NewRegistry(), Width: 160, Height: 45, Now: time.Now,
	}
}
