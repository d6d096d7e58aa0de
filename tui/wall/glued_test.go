package wall_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui"
)

// gluedNode stands in for the one node of a torchrun training of 2 workers whose tee
// glued the workers' lines, as torch 1.13's tail_log.tail_logfile does under load: it
// copies a worker's partial line, prefixed "[0]:", when the worker is caught between
// the two writes of Python's print (its text, then its newline); the other worker's
// whole line, prefixed "[1]:", lands on it, and the newline comes later as "[0]:"
// alone. Rank 1's ready line and its only loss (0.6) are in such glued lines. It is run
// as `sh -c gluedNode torchrun --nproc_per_node=2 train.py`, so that the wall sees
// torchrun's arguments.
const gluedNode = `{
echo "INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:"
echo "  group_rank=0"
echo "  group_world_size=1"
echo "  local_ranks=[0, 1]"
echo "  role_ranks=[0, 1]"
echo "  global_ranks=[0, 1]"
echo "  role_world_sizes=[2, 2]"
echo "  global_world_sizes=[2, 2]"
} >&2
printf '[0]:rank 0/2 ready[1]:rank 1/2 ready\n[0]:\n'
printf '[0]:step 1 loss 0.5[1]:step 1 loss 0.6\n[0]:\n'
echo "[0]:step 2 loss 0.25"`

// TestWallGluedTeeLine: a line where torchrun's tee glued two workers' lines goes to
// both ranks' panes, each its part without its prefix, and rank 1's loss in it is
// rank 1's (its pane's badge, the chart's legend), not rank 0's.
func TestWallGluedTeeLine(t *testing.T) {
	e := newEnv(t)
	r := spec.NewRole("train", spec.None, "sh", "-c", gluedNode, "torchrun", "--nproc_per_node=2", "train.py")
	h := e.run(&spec.AppDef{Name: "glued", Roles: []spec.Role{r}})
	e.wait(h)
	// 100 columns: rank 0's pane left of the separator, rank 1's right of it (a 2x2
	// grid, see testdata/rank_panes.golden).
	d := e.open(h, 100, 30, nil)
	scr := d.waitFor("end of logs", "rank 0/2 ready", "rank 1/2 ready")
	var left, right []string
	for _, row := range strings.Split(scr, "\n") {
		l, r, ok := strings.Cut(row, "│")
		if !ok {
			continue
		}
		left, right = append(left, strings.TrimSpace(l)), append(right, strings.TrimSpace(r))
	}
	for _, c := range []struct {
		name       string
		pane       []string
		want, lack string
	}{
		{"rank 0", left, "rank 0/2 ready", "rank 1/2"},
		{"rank 1", right, "rank 1/2 ready", "rank 0/2"},
		{"rank 0", left, "step 1 loss 0.5", "loss 0.6"},
		{"rank 1", right, "step 1 loss 0.6", "loss 0.5"},
	} {
		all := strings.Join(c.pane, "\n")
		if !strings.Contains(all, "\n"+c.want+"\n") || strings.Contains(all, c.lack) {
			t.Errorf("%s's pane lacks the line %q or holds %q:\n%s", c.name, c.want, c.lack, scr)
		}
	}
	if !regexp.MustCompile(`rank 1 train/0 SUCCEEDED exit 0 loss \S+ 0\.6\b`).MatchString(scr) {
		t.Errorf("rank 1's title lacks its loss 0.6:\n%s", scr)
	}
	d.keys("i", "p")
	d.contains("● rank 0 0.25", "● rank 1 0.6")
}

// TestWallGluedTeeLineReadBack: a glued line read back from the logs (the pane's ring
// no longer holds it) is split as ingest splits it: g at the top of rank 1's pane shows
// its part of the line, numbered as the ring numbers its lines.
func TestWallGluedTeeLineReadBack(t *testing.T) {
	e := newEnv(t)
	// More lines of rank 1 than the smallest ring holds (4096 and a chunk of 4096 being
	// filled), after the glued one.
	script := strings.SplitN(gluedNode, "printf", 2)[0] + `printf '[0]:rank 0/2 ready[1]:rank 1/2 ready\n[0]:\n'
i=1; while [ $i -le 12000 ]; do echo "[1]:n $i"; i=$((i+1)); done`
	r := spec.NewRole("train", spec.None, "sh", "-c", script, "torchrun", "--nproc_per_node=2", "train.py")
	h := e.run(&spec.AppDef{Name: "glued", Roles: []spec.Role{r}})
	e.wait(h)
	d := e.open(h, 100, 30, func(o *tui.Options) { o.RingLines = 1 })
	d.waitFor("end of logs", "n 12000")
	d.keys("i", "tab", "g")
	scr := d.waitForRe(regexp.MustCompile(`(?m)│ rank 1/2 ready *\n.*│ n 1 *$`))
	if strings.Contains(scr, "ready[1]:") {
		t.Errorf("a glued line read back whole:\n%s", scr)
	}
}
