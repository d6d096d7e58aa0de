package wall_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/wall"
)

// oneNode stands in for the one node of a torchrun training of 2 workers: the agent's
// rendezvous result on stderr (as torchrun 1.13 prints it with LOGLEVEL=INFO), then
// its workers' lines teed with their "[local_rank]:" prefixes. Rank 0's loss goes 0.5
// then 0.25, rank 1's 0.6 then 0.3 (near enough not to be a departing rank). It is run
// as `sh -c oneNode torchrun --nproc_per_node=2 train.py`, so that the wall sees
// torchrun's arguments.
const oneNode = `{
echo "INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:"
echo "  group_rank=0"
echo "  group_world_size=1"
echo "  local_ranks=[0, 1]"
echo "  role_ranks=[0, 1]"
echo "  global_ranks=[0, 1]"
echo "  role_world_sizes=[2, 2]"
echo "  global_world_sizes=[2, 2]"
} >&2
echo "[0]:step 1 loss 0.5"
echo "[1]:step 1 loss 0.6"
echo "[0]:step 2 loss 0.25"
echo "[1]:step 2 loss 0.3"`

// TestGoldenRankPanes: the wall of a finished one-node torchrun training, alone in
// 100x16, its summary hidden: a pane per rank and one for the node, each row as
// testdata/rank_panes.golden explains it from the code that draws it.
func TestGoldenRankPanes(t *testing.T) {
	e := newEnv(t)
	r := spec.NewRole("train", spec.None, "sh", "-c", oneNode, "torchrun", "--nproc_per_node=2", "train.py")
	h := e.run(&spec.AppDef{Name: "ddp", Roles: []spec.Role{r}})
	e.wait(h)
	vc := viewtest.Context(t, 100, 16, time.Now(), wall.Actions())
	vc.Backend = e.r
	d := viewtest.New(t, vc, wall.New(vc, h, wall.Options{}))
	d.WaitFor("end of logs", "Summary", "loss █▁ 0.25", "loss █▁ 0.3")
	d.Keys("i")
	viewtest.Golden(t, "testdata/rank_panes.golden", strings.ReplaceAll(d.Screen(), h.AppID, "ddp-XXXXXXXXXXXX"))
}
