package slurm

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
)

// These tests need no Slurm: the batch script's port pick runs in bash here, with
// scontrol and srun stand-ins.

// ddp is the AppDef of dist.ddp with argv, as `wick run dist.ddp ARGV` builds it.
func ddp(t *testing.T, argv ...string) *spec.AppDef {
	t.Helper()
	c, err := components.Find("dist.ddp", components.FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args, err := c.Parse(append(argv, "--script", "train.py"), nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// torchrunScript is the bash -c script of a replica's torchrun, as the dry run shows it.
func torchrunScript(t *testing.T, rep Replica) string {
	t.Helper()
	i := indexOf(rep.Command, "bash")
	if i < 0 || i+2 >= len(rep.Command) {
		t.Fatalf("no bash -c in %q", rep.Command)
	}
	return rep.Command[i+2]
}

// TestRdzvPortPlanned: a multi-node dist.ddp on TorchX's default port rendezvouses on
// the port the batch script picks: every replica's command names it, the script picks
// it once, and the dry run says so. The AppDef keeps TorchX's 29500.
func TestRdzvPortPlanned(t *testing.T) {
	t.Parallel()
	app := ddp(t, "-j", "3x1")
	req, err := plan(t, app, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range req.Replicas {
		if c := torchrunScript(t, rep); !strings.Contains(c, "--rdzv_endpoint ${TORCHX_RANK0_HOST:=localhost}:${WICK_RDZV_PORT} --rdzv_id '${SLURM_JOB_ID}'") || strings.Contains(c, "29500") {
			t.Errorf("replica %d: %s", rep.Replica, c)
		}
	}
	script := strings.Join(req.Script, "\n")
	// The port goes into the single-quoted bash -c word as the batch script's variable.
	if n := strings.Count(script, `${TORCHX_RANK0_HOST:=localhost}:'"$WICK_RDZV_PORT"' --rdzv_id '\'''"$SLURM_JOB_ID"''\'' --nnodes 3`); n != 3 {
		t.Errorf("%d srun components rendezvous on $WICK_RDZV_PORT, want 3:\n%s", n, script)
	}
	if strings.Count(script, "wick_used=") != 1 || strings.Index(script, "export WICK_RDZV_PORT") > strings.Index(script, "\nsrun ") {
		t.Errorf("the port is not picked once before srun:\n%s", script)
	}
	if len(req.Warnings) != 2 || !strings.Contains(req.Warnings[1], "rendezvous port: not TorchX's default 29500") || !strings.Contains(req.Warnings[1], RdzvPortVar) {
		t.Errorf("warnings %q", req.Warnings)
	}
	if !strings.Contains(app.Roles[0].Args[1], "localhost}:29500 ") || app.Roles[0].PortMap["c10d"] != 29500 {
		t.Errorf("the AppDef changed: %q %v", app.Roles[0].Args, app.Roles[0].PortMap)
	}
}

// TestRdzvPortUntouched: roles that do not rendezvous on the default port across nodes
// keep their command lines, and the script picks no port.
func TestRdzvPortUntouched(t *testing.T) {
	t.Parallel()
	byHand := spec.NewRole("trainer", "img", "torchrun", "--rdzv_endpoint", "head:29500", "train.py")
	byHand.NumReplicas = 2 // no port_map: not a c10d port wick knows of
	for name, c := range map[string]struct {
		app  *spec.AppDef
		want string // in replica 0's command line
	}{
		"chosen port": {ddp(t, "-j", "2x1", "--rdzv_port", "29512"), "${TORCHX_RANK0_HOST:=localhost}:29512 "},
		"one node":    {ddp(t, "-j", "1x2"), "--rdzv_endpoint localhost:0 "},
		"no port_map": {&spec.AppDef{Name: "x", Roles: []spec.Role{byHand}}, "head:29500"},
		"no torchrun": {twoRoles(), "--master"},
	} {
		req, err := plan(t, c.app, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(req.Replicas[0].Command, " ")
		script := strings.Join(req.Script, "\n")
		if !strings.Contains(got, c.want) || strings.Contains(got, "WICK_RDZV_PORT") || strings.Contains(script, "WICK_RDZV_PORT") || strings.Contains(strings.Join(req.Warnings, "\n"), "rendezvous port") {
			t.Errorf("%s: command %s\nwarnings %q\nscript:\n%s", name, got, req.Warnings, script)
		}
	}
}

// holdablePort finds a job id whose first rendezvous port this test can listen on,
// and listens there.
func holdablePort(t *testing.T) (jobID int, l net.Listener) {
	t.Helper()
	for id := 4242 + os.Getpid()%1000; id < 4242+3000; id++ {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(rdzvPortAt(id, 0)))
		if err == nil {
			t.Cleanup(func() { l.Close() })
			return id, l
		}
	}
	t.Fatal("no port of 29501-31500 free")
	return 0, nil
}

// rdzvPortAt is the i-th port the script tries for a job.
func rdzvPortAt(jobID, i int) int {
	return rdzvPortFirst + (jobID*rdzvPortSpread+i)%rdzvPortCount
}

// runScript runs a plan's batch script in bash as job jobID, with scontrol and srun
// stand-ins, and returns its output and srun's arguments.
func runScript(t *testing.T, req *Request, jobID int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "srun.args")
	stubs := `scontrol() { case "$1 $2" in "show hostnames") echo node7;; "show node") echo "NodeName=node7 NodeAddr=10.1.2.3 State=IDLE";; esac; }
srun() { printf '%s\0' "$@" >"$WICK_ARGS"; }
`
	cmd := exec.Command("bash", "-c", stubs+`. "$0"`, filepath.Join(dir, "job.sh"))
	if err := os.WriteFile(cmd.Args[3], []byte(strings.Join(req.Script, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "SLURM_JOB_ID="+strconv.Itoa(jobID), "SLURMD_NODENAME=node7", "WICK_ARGS="+argsFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the script: %v\n%s", err, out)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// pickedRe is what the batch log says of the port.
var pickedRe = regexp.MustCompile(`wick: rendezvous port (\d+) \(free on node7 when the job started`)

// TestRdzvPortScript runs the batch script of a 2-node dist.ddp: it picks the job id's
// first port when it is free, the next one when a program listens there, and srun's
// arguments hold the port itself in every component's torchrun command line.
func TestRdzvPortScript(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not on PATH")
	}
	req, err := plan(t, ddp(t, "-j", "2x1"), spec.Cfg{OptJobDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	id, l := holdablePort(t)
	first := rdzvPortAt(id, 0)
	l.Close()
	check := func(what string, want func(int) bool) int {
		out, args := runScript(t, req, id)
		m := pickedRe.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: the batch log does not say the port:\n%s", what, out)
		}
		port, _ := strconv.Atoi(m[1])
		if !want(port) {
			t.Errorf("%s: picked %d (job %d, first port %d)", what, port, id, first)
		}
		endpoint := "--rdzv_endpoint ${TORCHX_RANK0_HOST:=localhost}:" + m[1] + " --rdzv_id '" + strconv.Itoa(id) + "' --nnodes 2 "
		n := 0
		for _, a := range args {
			if strings.HasPrefix(a, "torchrun ") && strings.Contains(a, endpoint) {
				n++
			}
		}
		if n != 2 {
			t.Errorf("%s: %d torchrun command lines rendezvous on %s, want 2: %q", what, n, endpoint, args)
		}
		if !bytes.Contains([]byte(strings.Join(args, " ")), []byte("TORCHX_RANK0_HOST")) || strings.Contains(strings.Join(args, " "), "WICK_RDZV_PORT") {
			t.Errorf("%s: srun's arguments %q", what, args)
		}
		return port
	}
	check("nothing on the port", func(p int) bool { return p == first })

	held, err := net.Listen("tcp", ":"+strconv.Itoa(first))
	if err != nil {
		t.Skipf("port %d was taken meanwhile: %v", first, err)
	}
	defer held.Close()
	check("a listener on the first port", func(p int) bool {
		return p != first && p >= rdzvPortFirst && p < rdzvPortFirst+rdzvPortCount
	})
}

// TestRdzvPortSpread: jobs with near ids start far apart in the range, so that one
// moving past a taken port does not land on its neighbour's first port; every id of
// the count starts at a port of its own.
func TestRdzvPortSpread(t *testing.T) {
	t.Parallel()
	seen := map[int]int{}
	for id := 100; id < 100+rdzvPortCount; id++ {
		p := rdzvPortAt(id, 0)
		if other, ok := seen[p]; ok {
			t.Fatalf("jobs %d and %d both start at %d", other, id, p)
		}
		seen[p] = id
		for k := 1; k <= 20; k++ {
			d := (rdzvPortAt(id+k, 0) - p + rdzvPortCount) % rdzvPortCount
			if d = min(d, rdzvPortCount-d); d < 95 {
				t.Errorf("jobs %d and %d start %d ports apart", id, id+k, d)
			}
		}
	}
}
