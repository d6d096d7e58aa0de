package slurm

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
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
	return ranks.RdzvPortFirst + (jobID*rdzvPortSpread+i)%ranks.RdzvPortCount
}

// runScript runs a plan's batch script in bash as job jobID, with scontrol and srun
// stand-ins, and returns its output and srun's arguments.
func runScript(t *testing.T, req *Request, jobID int) (string, []string) {
	t.Helper()
	out, args, err := execScript(t, req, jobID)
	if err != nil {
		t.Fatalf("the script: %v\n%s", err, out)
	}
	if args == nil {
		t.Fatalf("the script ran no srun:\n%s", out)
	}
	return out, args
}

// execScript is runScript for a script that may fail: srun's arguments are nil when
// it did not run srun.
func execScript(t *testing.T, req *Request, jobID int) (string, []string, error) {
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
	b, rerr := os.ReadFile(argsFile)
	if errors.Is(rerr, fs.ErrNotExist) {
		return string(out), nil, err
	} else if rerr != nil {
		t.Fatal(rerr)
	}
	return string(out), strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), err
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
		return p != first && p >= ranks.RdzvPortFirst && p < ranks.RdzvPortFirst+ranks.RdzvPortCount
	})
}

// TestRdzvPortSpread: jobs with near ids start far apart in the range, so that one
// moving past a taken port does not land on its neighbour's first port; every id of
// the count starts at a port of its own.
func TestRdzvPortSpread(t *testing.T) {
	t.Parallel()
	seen := map[int]int{}
	for id := 100; id < 100+ranks.RdzvPortCount; id++ {
		p := rdzvPortAt(id, 0)
		if other, ok := seen[p]; ok {
			t.Fatalf("jobs %d and %d both start at %d", other, id, p)
		}
		seen[p] = id
		for k := 1; k <= 20; k++ {
			d := (rdzvPortAt(id+k, 0) - p + ranks.RdzvPortCount) % ranks.RdzvPortCount
			if d = min(d, ranks.RdzvPortCount-d); d < 95 {
				t.Errorf("jobs %d and %d start %d ports apart", id, id+k, d)
			}
		}
	}
}

// TestChosenPorts: the ports the batch script checks are those the user chose for a
// c10d store on rank 0's node; a picked port, one node's free port, another host's
// port and another backend's are not checked.
func TestChosenPorts(t *testing.T) {
	t.Parallel()
	byHand := func(endpoint string, extra ...string) *spec.AppDef {
		r := spec.NewRole("trainer", "img", "bash", "-c", strings.Join(append([]string{"torchrun --rdzv_backend c10d --rdzv_endpoint", endpoint}, extra...), " ")+" train.py")
		r.NumReplicas = 2
		return &spec.AppDef{Name: "x", Roles: []spec.Role{r}}
	}
	static := ddp(t, "-j", "2x1", "--rdzv_port", "29512", "--rdzv_backend", "static")
	for name, c := range map[string]struct {
		app  *spec.AppDef
		want []int
	}{
		"chosen":          {ddp(t, "-j", "2x1", "--rdzv_port", "29512"), []int{29512}},
		"three nodes":     {ddp(t, "-j", "3x2", "--rdzv_port", "40001"), []int{40001}},
		"default: picked": {ddp(t, "-j", "2x1"), nil},
		"one node":        {ddp(t, "-j", "1x2", "--rdzv_port", "29512"), nil},
		"static backend":  {static, nil},
		"by hand":         {byHand("$TORCHX_RANK0_HOST:29600"), []int{29600}},
		"braced":          {byHand("${TORCHX_RANK0_HOST}:29601"), []int{29601}},
		"other host":      {byHand("head-node:29602"), nil},
		"no port":         {byHand("${TORCHX_RANK0_HOST:=localhost}"), nil},
		"not torchrun":    {twoRoles(), nil},
	} {
		if got := chosenPorts(c.app); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// TestPortCheckScript runs the batch script of a 2-node dist.ddp on a port the user
// chose: with nothing on it, srun runs with the port as given; with a listener that
// accepts and never answers, the script says so in one line, exits non-zero and runs
// no srun. The status reads that line.
func TestPortCheckScript(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not on PATH")
	}
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // accepts nothing itself: the kernel completes connections, which wait
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	app := ddp(t, "-j", "2x1", "--rdzv_port", port)
	req, err := plan(t, app, spec.Cfg{OptJobDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out, args, err := execScript(t, req, 4242)
	want := "wick: rendezvous port " + port + " is in use on node7: a program listens on it there; the job stopped before srun\n"
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || out != want || args != nil {
		t.Errorf("a listener on %s: %v, srun %q, output:\n%s", port, err, args, out)
	}
	if got := portRefused([]byte("wick: srun exited with code 1\n"+out), app); strconv.Itoa(got) != port {
		t.Errorf("the status reads port %d from %q", got, out)
	}
	if got := portRefused([]byte(out+"wick: srun exited with code 0\n"), app); got != 0 {
		t.Errorf("a later attempt that ran srun: port %d", got)
	}
	if got := portRefused([]byte(out), ddp(t, "-j", "2x1", "--rdzv_port", "29512")); got != 0 {
		t.Errorf("another app's port: %d", got)
	}

	l.Close()
	out, args, err = execScript(t, req, 4242)
	if err != nil || strings.Contains(out, "in use") || !strings.Contains(strings.Join(args, " "), "${TORCHX_RANK0_HOST:=localhost}:"+port+" ") {
		t.Errorf("nothing on %s: %v, srun %q, output:\n%s", port, err, args, out)
	}
}

// holdPort listens on a free port with a program that accepts every connection and
// never answers nor closes it (torch's store client would wait on it for ever), until
// the test ends. It returns the port.
func holdPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestClusterChosenPortHeld: a 2-node dist.ddp whose chosen rendezvous port a program
// holds on rank 0's node (one that accepts and never answers, on which the job waited
// until cancelled) fails before srun starts anything, with the local schedulers'
// cause, "rendezvous port N is in use", from Slurm's answer and, once Slurm has
// forgotten the job, from its batch log.
func TestClusterChosenPortHeld(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	port := holdPort(t) // the nodes are this machine
	id := h.submit(ddp(t, "-j", "2x1", "--cpu", "1", "--memMB", "64", "--rdzv_port", port), nil)
	want := ranks.PortInUse(mustAtoi(t, port))
	check := func(what string, st *spec.AppStatus) {
		t.Helper()
		if st.State != spec.Failed || st.Msg != want || spec.ErrorMessage(st.StructuredError) != want {
			t.Errorf("%s: %s %q %q, want FAILED: %s", what, st.State, st.Msg, st.StructuredError, want)
		}
		for _, rs := range st.Roles {
			for _, r := range rs.Replicas {
				if r.State != spec.Cancelled || r.StructuredError != "not started: "+want || r.ExitCode != nil || !r.Started.IsZero() {
					t.Errorf("%s: replica %s/%d %s %q (exit %v), want CANCELLED, not started", what, r.Role, r.ID, r.State, r.StructuredError, r.ExitCode)
				}
			}
		}
	}
	check("Slurm's answer", h.wait(id))
	rec, err := h.s.loadRecord(id)
	if err != nil || rec == nil {
		t.Fatal(err, rec)
	}
	b, err := os.ReadFile(rec.BatchLog)
	if err != nil || !strings.Contains(string(b), "wick: rendezvous port "+port+" is in use on ") || strings.Contains(string(b), "srun exited") {
		t.Errorf("the batch log: %v\n%s", err, b)
	}
	for _, r := range rec.Replicas {
		if _, err := os.Stat(r.Stderr); err == nil {
			t.Errorf("replica %s/%d started: %s exists", r.Role, r.Replica, r.Stderr)
		}
	}

	h.ghost(id, "990000021")
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(testTimeout))
	defer cancel()
	d, err := h.s.Describe(ctx, "990000021")
	if err != nil {
		t.Fatal(err)
	}
	check("forgotten by Slurm", &d.Status)
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
