package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// MetricsReader is what --stop-on-nan needs of the Launcher besides: an app's
// description and its log lines (the Runner has both).
type MetricsReader interface {
	metrics.Lines
	Describe(ctx context.Context, h spec.Handle) (*sched.Description, error)
}

// nanEvery is how often a running app's new log lines are read for a NaN: a NaN loss
// wastes its GPU for a second at most before it is seen.
const nanEvery = time.Second

// watchNaN reads the running app h's metrics until ctx ends; at the first NaN or Inf
// value it cancels the app and records why on its row.
func (r *run) watchNaN(ctx context.Context, mr MetricsReader, h spec.Handle) {
	store := metrics.NewAlarmStore(metrics.DefaultConfig())
	var pos metrics.Position
	t := time.NewTicker(nanEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d, err := mr.Describe(ctx, h)
		if err != nil {
			continue
		}
		if _, err := pos.Read(ctx, mr, h, d, store, nil); err != nil {
			continue
		}
		for _, a := range store.Alarms() {
			if a.Kind != metrics.AlarmNaN && a.Kind != metrics.AlarmInf {
				continue
			}
			why := fmt.Sprintf("%s %s", a.Metric, metrics.FormatValue(a.Value))
			if a.Step >= 0 {
				why += fmt.Sprintf(" at step %d", a.Step)
			}
			r.logf("%s: %s: cancelling it (--stop-on-nan)", h, why)
			_ = r.q.Store.Change(r.q.ID, func(s *Sweep, edit func(int) *Entry) error {
				if i := s.index(h.String()); i >= 0 {
					edit(i).Stopped = why
				}
				return nil
			})
			if err := r.q.Launcher.Cancel(ctx, h); err != nil {
				r.logf("cancel %s: %v", h, err)
			}
			return
		}
	}
}
