package wall_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// c10dNode stands in for a torchrun node of a 2x2 run whose c10d rendezvous made
// replica 0 group rank 1 (it joined second): its agent prints the rendezvous result
// torchrun 1.13 prints with LOGLEVEL=INFO, then its two workers' lines come teed with
// their "[local_rank]:" prefixes. Global rank r prints the loss r+0.5 then r+0.25,
// except rank 3, whose second loss is NaN, and rank 1, which prints nothing (only
// some ranks log, as many scripts do). It is run as `sh -c c10dNode torchrun
// --nproc_per_node=2 train.py`, so that the wall sees torchrun's arguments.
const c10dNode = `g=$((1 - K)); a=$((2 * g)); b=$((a + 1))
{
echo "INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous'ing worker group"
echo "INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:"
echo "  restart_count=0"
echo "  master_addr=localhost"
echo "  master_port=29500"
echo "  group_rank=$g"
echo "  group_world_size=2"
echo "  local_ranks=[0, 1]"
echo "  role_ranks=[$a, $b]"
echo "  global_ranks=[$a, $b]"
echo "  role_world_sizes=[4, 4]"
echo "  global_world_sizes=[4, 4]"
echo ""
echo "INFO:torch.distributed.elastic.agent.server.api:[] Starting worker group"
} >&2
sleep 0.2
echo "[0]:step 1 loss $a.5"
[ $b = 3 ] && echo "[1]:step 1 loss $b.5"
echo "[0]:step 2 loss $a.25"
[ $b = 3 ] && echo "[1]:step 2 loss nan"
exit 0`

// TestWallMetricsUnderC10d: with c10d's rendezvous a node's group rank is not its
// replica index. Each rank pane shows its own rank's numbers (badge, alarm mark, end
// summary), the pane of a rank that prints nothing is on the node that runs it and
// shows none, and the chart's legend names each series by its global rank.
func TestWallMetricsUnderC10d(t *testing.T) {
	e := newEnv(t)
	r := spec.NewRole("train", spec.None, "sh", "-c", c10dNode, "torchrun", "--nproc_per_node=2", "train.py")
	r.NumReplicas = 2
	r.Env = map[string]string{"K": "${" + spec.MacroReplicaID + "}"}
	h := e.run(&spec.AppDef{Name: "c10d", Roles: []spec.Role{r}})
	e.wait(h)
	d := e.open(h, 200, 60, nil)
	scr := d.waitFor("end of logs", "Summary")
	t.Logf("the wall:\n%s", scr)

	// Pane titles: "rank G train/NODE SUCCEEDED exit 0 [loss SPARK LAST [⚠]]".
	title := func(g string) string {
		m := regexp.MustCompile(`(?m)(?:^|  |▸ )(rank ` + g + ` train/\d SUCCEEDED exit 0(?: loss [▁▂▃▄▅▆▇█!]* ?\S+(?: ⚠)?)?)`).FindStringSubmatch(scr)
		if m == nil {
			t.Fatalf("no title of rank %s:\n%s", g, scr)
		}
		return m[1]
	}
	for g, want := range map[string]*regexp.Regexp{
		"0": regexp.MustCompile(`^rank 0 train/1 SUCCEEDED exit 0 loss [▁▂▃▄▅▆▇█]+ 0\.25$`),
		"1": regexp.MustCompile(`^rank 1 train/1 SUCCEEDED exit 0$`),
		"2": regexp.MustCompile(`^rank 2 train/0 SUCCEEDED exit 0 loss [▁▂▃▄▅▆▇█]+ 2\.25$`),
		"3": regexp.MustCompile(`^rank 3 train/0 SUCCEEDED exit 0 loss [▁▂▃▄▅▆▇█]+! NaN ⚠$`),
	} {
		if got := title(g); !want.MatchString(got) {
			t.Errorf("rank %s's title is %q, want %s", g, got, want)
		}
	}

	// The nodes' panes hold the agents' lines: no numbers of their own.
	for _, k := range []string{"0", "1"} {
		if !regexp.MustCompile(`(?m)  train/` + k + ` node SUCCEEDED exit 0 *(│|$)`).MatchString(scr) {
			t.Errorf("the title of node %s is not bare:\n%s", k, scr)
		}
	}

	// The end summary: each rank's last and best loss, none for rank 1 or the nodes
	// (their lines are the agents', the workers' numbers are in the rank rows).
	rows := map[string]string{}
	for _, l := range strings.Split(scr[strings.Index(scr, "\nSummary "):], "\n") {
		if m := regexp.MustCompile(`^  (rank \d|train/\d) `).FindStringSubmatch(l); m != nil {
			rows[m[1]] = l
		}
	}
	for name, want := range map[string]string{
		"rank 0":  "loss last 0.25 best 0.25 @ step 2",
		"rank 1":  "",
		"rank 2":  "loss last 2.25 best 2.25 @ step 2",
		"rank 3":  "loss last NaN best 3.5 @ step 1",
		"train/0": "",
		"train/1": "",
	} {
		row, ok := rows[name]
		if !ok {
			t.Errorf("no summary row for %s", name)
			continue
		}
		got := ""
		if i := strings.Index(row, "loss "); i >= 0 {
			got = strings.TrimSpace(row[i:strings.Index(row, "last stderr")])
		}
		if got != want {
			t.Errorf("summary of %s: %q, want %q\n%s", name, got, want, row)
		}
	}

	// The chart: a series per rank that printed a loss, named by its global rank.
	d.keys("i", "p")
	d.contains("● rank 0 0.25", "● rank 2 2.25", "● rank 3 NaN")
	d.lacks("● rank 1", "● train/")
}
