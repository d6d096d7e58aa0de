package wall_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/wall"
)

// earlyRanks is a torchrun node whose workers' lines are logged before its rendezvous
// block (they come on stdout, the block on stderr: which pipe the supervisor reads
// first is not promised), and whose block says what the wall assumed: group rank 0.
const earlyRanks = `echo "[0]:early line of rank 0"
echo "[1]:early line of rank 1"
sleep 0.3
{
echo "INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:"
echo "  group_rank=0"
echo "  local_ranks=[0, 1]"
echo "  global_ranks=[0, 1]"
} >&2`

// TestWallRankLinesBeforeTheRendezvous: a rendezvous block that confirms the ranks the
// node's earlier lines went to moves nothing: the wall settles with each line once in
// its rank's pane, instead of reading the logs again for ever (as it did when every
// block counted as a change).
func TestWallRankLinesBeforeTheRendezvous(t *testing.T) {
	e := newEnv(t)
	r := spec.NewRole("train", spec.None, "sh", "-c", earlyRanks, "torchrun", "--nproc_per_node=2", "train.py")
	h := e.run(&spec.AppDef{Name: "early", Roles: []spec.Role{r}})
	e.wait(h)
	vc := viewtest.Context(t, 120, 20, time.Now(), wall.Actions())
	vc.Backend = e.r
	d := viewtest.New(t, vc, wall.New(vc, h, wall.Options{}))
	scr := d.WaitFor("end of logs", "global_ranks=[0, 1]")
	for _, w := range []string{"early line of rank 0", "early line of rank 1"} {
		if n := strings.Count(scr, w); n != 1 {
			t.Errorf("%q is shown %d times, want once in its rank's pane:\n%s", w, n, scr)
		}
	}
	if !strings.Contains(scr, "1 node · 2 ranks") {
		t.Errorf("no pane per rank:\n%s", scr)
	}
}
