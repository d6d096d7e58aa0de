package wall_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui"
)

// statusRanks is a Runner whose descriptions give each replica of a role the group
// rank 1 - replica, as Slurm's status does once a node's workers reported theirs
// (the local scheduler does not learn it for the status).
type statusRanks struct{ *runner.Runner }

func (s statusRanks) Describe(ctx context.Context, h spec.Handle) (*sched.Description, error) {
	d, err := s.Runner.Describe(ctx, h)
	if err != nil {
		return d, err
	}
	for i := range d.Status.Roles {
		for j := range d.Status.Roles[i].Replicas {
			r := &d.Status.Roles[i].Replicas[j]
			r.GroupRank = spec.IntPtr(1 - r.ID)
		}
	}
	return d, nil
}

// TestWallRanksFromStatus: a node's group rank from its status, not its replica index,
// names the rank panes (without torchrun's rendezvous block in the lines), as `wick log
// --rank` and the metrics name them: replica 0's local rank 1 is rank 3.
func TestWallRanksFromStatus(t *testing.T) {
	e := newEnv(t)
	// Global rank r prints the loss r+0.5 under its local rank's prefix, were the
	// status right; the node's own line names the node.
	script := `echo "node $K up"; echo "[0]:step 1 loss $((2 - 2*K)).5"; echo "[1]:step 1 loss $((3 - 2*K)).5"`
	r := spec.NewRole("train", spec.None, "sh", "-c", script, "torchrun", "--nproc_per_node=2", "train.py")
	r.NumReplicas = 2
	r.Env = map[string]string{"K": "${" + spec.MacroReplicaID + "}"}
	h := e.run(&spec.AppDef{Name: "gr", Roles: []spec.Role{r}})
	e.wait(h)
	d := e.open(h, 200, 60, func(o *tui.Options) { o.Runner = statusRanks{e.r} })
	scr := d.waitFor("end of logs")
	for g, want := range map[string]string{"0": "0.5", "1": "1.5", "2": "2.5", "3": "3.5"} {
		re := regexp.MustCompile(`(?m)(?:^|  |▸ )rank ` + g + ` train/(\d) SUCCEEDED exit 0 loss \S* ` + regexp.QuoteMeta(want) + `\b`)
		m := re.FindStringSubmatch(scr)
		if m == nil {
			t.Errorf("rank %s's title lacks loss %s:\n%s", g, want, scr)
			continue
		}
		if node := map[string]string{"0": "1", "1": "1", "2": "0", "3": "0"}[g]; m[1] != node {
			t.Errorf("rank %s is on train/%s, want train/%s", g, m[1], node)
		}
	}
	// The chart's legend names each series by the same rank.
	d.keys("i", "p")
	d.contains("● rank 0 0.5", "● rank 1 1.5", "● rank 2 2.5", "● rank 3 3.5")
}
