package preview

import (
	"context"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// slowPlanner is a Backend whose dry run lasts until its context ends.
type slowPlanner struct {
	common.Backend
	started chan struct{}
	ended   chan error
}

func (b *slowPlanner) DryRunComponent(ctx context.Context, _ string, _ []string, _ string, _ spec.Cfg, _ string, _ components.Lookup) (*sched.DryRunInfo, error) {
	close(b.started)
	<-ctx.Done()
	b.ended <- ctx.Err()
	return nil, ctx.Err()
}

// TestLeavingThePreviewStopsPlanning: a huge plan kept growing after Esc; closing the
// preview (what leaving it does) cancels the dry run.
func TestLeavingThePreviewStopsPlanning(t *testing.T) {
	b := &slowPlanner{started: make(chan struct{}), ended: make(chan error, 1)}
	ctx := &common.Context{Ctx: context.Background(), Backend: b, Config: common.NoConfig{}}
	m := New(ctx, Plan{Component: "utils.echo", Scheduler: "local_cwd"})
	cmd := m.Init()
	go cmd()
	deadline := time.After(20 * time.Second)
	select {
	case <-b.started:
	case <-deadline:
		t.Fatal("the dry run did not start")
	}
	m.Close()
	select {
	case err := <-b.ended:
		if err == nil {
			t.Fatal("the dry run ended without its context being cancelled")
		}
	case <-deadline:
		t.Fatal("the dry run still runs after the preview was left")
	}
}
