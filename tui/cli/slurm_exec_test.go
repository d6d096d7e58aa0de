package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestExecSlurm: wick exec, run from another directory, runs a command on a Slurm
// replica's node within its job (srun --overlap), in the replica's working directory
// and environment (a variable only the replica was given, its own replica id), with
// the command's exit status; with no command, a shell there reads stdin.
func TestExecSlurm(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := newHarness(t)
	r := h.exec("run", "-s", "slurm", "--detach", "utils.sh", "--env", "ONLY_REPLICA=on-the-node", "--num_replicas", "2", "sleep", "300")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", handle) })
	var node string
	testkit.Wait(t, 3*time.Minute, "both replicas running", func() (bool, string) {
		st := h.status(handle)
		n := 0
		for _, rep := range st.Roles[0].Replicas {
			if rep.State == spec.Running {
				n++
			}
			if rep.ID == 1 {
				node = rep.Hostname
			}
		}
		return n == 2, h.exec("status", handle).stdout
	})

	elsewhere := *h
	elsewhere.work = t.TempDir()
	r = elsewhere.exec("exec", handle+"/sh/1", "sh", "-c", `pwd; echo "$ONLY_REPLICA $WICK_REPLICA_ID $SLURMD_NODENAME"; exit 3`)
	if want := h.work + "\non-the-node 1 " + node + "\n"; r.code != 3 || r.stdout != want {
		t.Errorf("exec sh -c: exit %d, stdout %q (want 3, %q), stderr %q", r.code, r.stdout, want, r.stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	cmd := elsewhere.wickCmd(ctx, "exec", handle+"/sh/0")
	cmd.Env = append(cmd.Env, "SHELL=/bin/bash")
	cmd.Stdin = strings.NewReader(`echo "${BASH_VERSION:0:1} $WICK_REPLICA_ID"; pwd` + "\n")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil || out.String() != "5 0\n"+h.work+"\n" {
		t.Errorf("exec a shell: %v %q", err, out.String())
	}
	if r := h.exec("exec", handle+"/sh/2", "true"); r.code != 2 || r.stderr != "wick: "+handle+": no replica sh/2 (sh has 0, 1)\n" {
		t.Errorf("exec in no replica: %d %q", r.code, r.stderr)
	}
}
