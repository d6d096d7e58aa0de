package cli

import (
	"context"
	"time"

	"github.com/wick-dev/wick/engine/hang"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// hangTimeout bounds reading the last lines of a running app's replicas for its hang
// alarm: local files are read in milliseconds, a Docker Engine or Slurm's output files
// in well under a second.
const hangTimeout = 5 * time.Second

// attachHang sets the hang alarm of the app d describes (engine/hang), best effort: an
// app whose logs cannot be read now is shown without it.
func (a *app) attachHang(h spec.Handle, d *sched.Description) {
	ctx, cancel := context.WithTimeout(a.ctx, hangTimeout)
	defer cancel()
	_ = hang.Attach(ctx, a.runner(), h, d, time.Now())
}

// attachHangs sets the hang alarm of each running app of a list.
func (a *app) attachHangs(apps []spec.AppStatus) {
	for i := range apps {
		st := &apps[i]
		if st.State != spec.Running {
			continue
		}
		h, err := spec.ParseHandle(st.Handle)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(a.ctx, hangTimeout)
		d, err := a.runner().Describe(ctx, h)
		if err == nil {
			if hg, err := hang.Check(ctx, a.runner(), h, d, time.Now()); err == nil {
				st.Hang = hg
			}
		}
		cancel()
	}
}
