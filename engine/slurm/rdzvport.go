package slurm

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/spec"
)

// Two dist.ddp jobs whose first nodes share a host, each with TorchX's default
// --rdzv_port 29500, would share one c10d store there: the second job's head node
// fails to bind the port, connects to the first job's store, trains under its own
// rendezvous id until the first job ends, and then dies of a store error (or its
// rendezvous waits on a store that never answers). The local schedulers give such a
// role a free port when they plan it (engine/local/rdzvport.go); on Slurm the head node
// is known only when the job starts, so the batch script, which runs there (the first
// node of component 0, rank 0's host), picks a port free on it then and hands it to
// every node's torchrun in the srun command line (and in WICK_RDZV_PORT, which srun
// exports to the tasks).
//
// Only a multi-node torchrun role that kept the default port and names it in its
// --rdzv_endpoint gets one; a port the user chose is kept, and checked before srun
// (chosenPorts below). The AppDef stays TorchX's: only the srun command lines of the
// request carry the port. All such roles of a job share the one port, as they shared
// 29500: TORCHX_RANK0_HOST is one host for the whole job.

// The script tries the ports of ranks.RdzvPortFirst and on, as the local schedulers
// do. The first one tried is the job id's, spread over the range: jobs starting at once
// each see every port free, and with near ids (sbatch numbers jobs submitted together
// in a row, a heterogeneous job taking one id per component) a job whose first port is
// taken would otherwise move on to its neighbour's first port. The spread,
// rdzvPortSpread times the id, is prime to the count (ids that differ by less than
// the count start apart) and of those the one that keeps ids 1 to 20 apart furthest
// apart: at least 95 ports (997, say, puts ids 2 apart 6 ports apart).
const rdzvPortSpread = 381

// RdzvPortVar stands for the rendezvous port the batch script picks, in the replicas'
// command lines of a plan (as the dry run shows them).
const RdzvPortVar = "${WICK_RDZV_PORT}"

// portMark stands for the picked port while a replica's words are planned; the script
// turns it into "$WICK_RDZV_PORT". No argument can hold a NUL byte.
const portMark = "\x00rdzv_port\x00"

// rdzvPortLines are the lines of the batch script that pick the rendezvous port, on the
// node it runs on, and say it in the batch log.
//
// A port is taken when a socket there has it as its local port in /proc/net/tcp or
// tcp6: listening, connected, or closing (TIME_WAIT, which could refuse a bind), of
// any program. That needs nothing on the node but sed and tr (the script already
// uses sed); bash's /dev/tcp would see listeners only, and only those it can reach,
// and a Python bind test would need a python3 on the node that the job's may not be.
// A socket that is bound but not listening is not in /proc/net/tcp and so not seen:
// c10d's store binds and listens at once, and so do the other servers a port in
// this range is for. Nor is a port another job picks in the seconds before its store
// binds (the spread start keeps two jobs apart). When the port is taken after all
// (or every port is, or /proc cannot be read and the job id's port is used), the
// nodes say so on their stderr and the root cause reads "rendezvous port N is in use"
// (ranks.RootCause).
func rdzvPortLines() []string {
	first, n, spread := strconv.Itoa(ranks.RdzvPortFirst), strconv.Itoa(ranks.RdzvPortCount), strconv.Itoa(rdzvPortSpread)
	return []string{
		"# The rendezvous port of the torchrun roles that kept TorchX's default 29500: one",
		"# free on this node (rank 0's) now, so that jobs whose first nodes share a host do",
		"# not share one c10d store. Tried in " + first + "-" + strconv.Itoa(ranks.RdzvPortFirst+ranks.RdzvPortCount-1) + " from the job id's; taken: the local",
		"# port of a socket in /proc/net/tcp* (listening, connected or closing).",
		`wick_used=" $(sed -n 's/^ *[0-9]*: [0-9A-F]*:\([0-9A-F]*\) .*/\1/p' /proc/net/tcp /proc/net/tcp6 2>/dev/null | tr '\n' ' ')"`,
		"WICK_RDZV_PORT=$((" + first + " + SLURM_JOB_ID * " + spread + " % " + n + "))",
		"for ((wick_i = 0; wick_i < " + n + "; wick_i++)); do",
		"    wick_p=$((" + first + " + (SLURM_JOB_ID * " + spread + " + wick_i) % " + n + "))",
		`    printf -v wick_h '%04X' "$wick_p"`,
		`    case $wick_used in *" $wick_h "*) ;; *) WICK_RDZV_PORT=$wick_p; break ;; esac`,
		"done",
		"export WICK_RDZV_PORT",
		`echo "wick: rendezvous port $WICK_RDZV_PORT (free on ${SLURMD_NODENAME:-$(hostname)} when the job started; its torchrun roles kept the default 29500)"`,
	}
}

// A port the user chose is not picked, and so not known free: a program may hold it
// on rank 0's node. c10d's store on that node would then fail to bind it, and every
// node would connect to that program as to its store: one that closes what connects
// ends the job with store errors (the root cause reads "rendezvous port N is in use"
// from the nodes' stderr), but one that accepts and never answers leaves the whole
// job waiting for ever (torch's store client waits on it without a timeout), with
// nothing in any log to say why. So the batch script checks the chosen ports on its
// node before srun, as the local schedulers do before they start an app
// (engine/local/rdzvport.go): a port some program listens on stops the job there,
// with one line in the batch log that the status reads (portRefused), and the app
// fails with "rendezvous port N is in use" (ranks.PortInUse), nothing started.
//
// Only listening sockets count here: a connected or closing socket on the port does
// not keep c10d's store (which binds with SO_REUSEADDR) from listening on it.

// rank0HostRe matches the host of an endpoint that is rank 0's node, where the batch
// script runs: $TORCHX_RANK0_HOST, as dist.ddp writes it or by hand.
var rank0HostRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\$(` + spec.Rank0Env + `|\{` + spec.Rank0Env + `(:?[-=][^}]*)?\})$`)
})

// chosenPorts are the rendezvous ports of an app's c10d torchrun roles whose store
// runs on rank 0's node and whose port the batch script does not pick: the ports it
// checks before srun. Sorted, each once.
func chosenPorts(app *spec.AppDef) []int {
	if app == nil {
		return nil
	}
	var ports []int
	for _, role := range app.Roles {
		if ranks.KeepsDefaultRdzvPort(role) {
			continue // picked free when the job starts
		}
		r := spec.Macros{AppID: "0", ReplicaID: "0", ImgRoot: role.Image, Rank0Env: spec.Rank0Env}.Apply(role)
		argv := append([]string{r.Entrypoint}, r.Args...)
		if !ranks.RunsTorchrun(argv) || ranks.Flag(argv, "rdzv_backend") != "c10d" {
			continue
		}
		ep := ranks.Flag(argv, "rdzv_endpoint")
		k := strings.LastIndexByte(ep, ':')
		if k < 0 || !rank0HostRe().MatchString(ep[:k]) {
			continue
		}
		if p, err := strconv.Atoi(ep[k+1:]); err == nil && p > 0 && p <= 65535 && !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	return ports
}

// portCheckLines are the lines of the batch script that stop the job before srun
// when a program listens on one of ports on its node (rank 0's).
func portCheckLines(ports []int) []string {
	words := make([]string, len(ports))
	for i, p := range ports {
		words[i] = strconv.Itoa(p)
	}
	return []string{
		"# The rendezvous port the user chose (" + strings.Join(words, ", ") + "): c10d's store listens on it on this",
		"# node (rank 0's). A program listening there already would take the nodes'",
		"# connections for the store's (the job would fail, or wait for ever on one that never",
		"# answers): then the job stops here, before anything starts. Listening: state 0A in",
		"# /proc/net/tcp*.",
		`wick_listen=" $(sed -n 's/^ *[0-9]*: [0-9A-F]*:\([0-9A-F]*\) [0-9A-F]*:[0-9A-F]* 0A .*/\1/p' /proc/net/tcp /proc/net/tcp6 2>/dev/null | tr '\n' ' ')"`,
		"for wick_p in " + strings.Join(words, " ") + "; do",
		`    printf -v wick_h '%04X' "$wick_p"`,
		`    case $wick_listen in *" $wick_h "*)`,
		`        echo "wick: rendezvous port $wick_p is in use on ${SLURMD_NODENAME:-$(hostname)}: a program listens on it there; the job stopped before srun"`,
		"        exit 1 ;;",
		"    esac",
		"done",
	}
}

// portRefusedRe matches the batch script's line of a port in use (portCheckLines) and
// its line after srun: whichever comes last says how the last attempt ended.
var portRefusedRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^wick: (?:rendezvous port (\d+) is in use on |srun exited with code )`)
})

// portRefused returns the chosen port that the end of a batch log says was in use,
// when its last attempt stopped there; 0 otherwise.
func portRefused(tail []byte, app *spec.AppDef) int {
	m := portRefusedRe().FindAllSubmatch(tail, -1)
	if len(m) == 0 || m[len(m)-1][1] == nil {
		return 0
	}
	p, err := strconv.Atoi(string(m[len(m)-1][1]))
	if err != nil || !slices.Contains(chosenPorts(app), p) {
		return 0
	}
	return p
}
