package components

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/spec"
)

// Nodes is a parsed -j value, [[MIN:]MAX x]NPROC: how many nodes (replicas) a
// distributed job has and how many processes each runs.
type Nodes struct {
	// Min and Max bound the number of nodes (equal unless elastic).
	Min, Max int
	// NProcPerNode is the number of processes per node.
	NProcPerNode int
	// Rep is torchrun's --nnodes value: "MIN:MAX" for an elastic job, else the node
	// count as written ("1" when -j gives only NPROC).
	Rep string
}

// ParseNNodes reads dist.ddp's -j value the way TorchX's parse_nnodes does:
//
//	2:4x8  min 2, max 4 nodes, 8 processes each; torchrun gets --nnodes 2:4
//	2x8    2 nodes, 8 processes each
//	4      1 node, 4 processes
//
// Anything else is an error in TorchX's words. Beyond TorchX, it rejects a job with no
// node or no process and a minimum above the maximum.
func ParseNNodes(j string) (Nodes, error) {
	bad := fmt.Errorf("invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: %s", shown(j))
	nodes, nproc, hasX := strings.Cut(j, "x")
	if !hasX {
		nodes, nproc = "", j
	}
	lo, hi, elastic := strings.Cut(nodes, ":")
	if !isDigits(nproc) || hasX && !isDigits(lo) || elastic && !isDigits(hi) {
		return Nodes{}, bad
	}
	var n Nodes
	var err error
	if n.NProcPerNode, err = atoiJ(j, nproc); err != nil {
		return Nodes{}, err
	}
	switch {
	case !hasX:
		n.Min, n.Max, n.Rep = 1, 1, "1"
	case elastic:
		if n.Min, err = atoiJ(j, lo); err != nil {
			return Nodes{}, err
		}
		if n.Max, err = atoiJ(j, hi); err != nil {
			return Nodes{}, err
		}
		n.Rep = nodes
	default:
		if n.Min, err = atoiJ(j, lo); err != nil {
			return Nodes{}, err
		}
		n.Max, n.Rep = n.Min, lo
	}
	if n.Max < 1 {
		return Nodes{}, fmt.Errorf("invalid -j %s: a job needs at least 1 node", j)
	}
	if n.NProcPerNode < 1 {
		return Nodes{}, fmt.Errorf("invalid -j %s: a node needs at least 1 process", j)
	}
	if n.Min > n.Max {
		return Nodes{}, fmt.Errorf("invalid -j %s: the minimum number of nodes (%d) exceeds the maximum (%d)", j, n.Min, n.Max)
	}
	// Refused here, at once, rather than by the launch (nodes) or never (processes,
	// which torchrun would try to start on one machine).
	if n.Max > spec.MaxReplicas {
		return Nodes{}, fmt.Errorf("invalid -j %s: %w (got %d)", j, spec.ErrTooManyReplicas, n.Max)
	}
	if n.NProcPerNode > spec.MaxReplicas {
		return Nodes{}, fmt.Errorf("invalid -j %s: a node runs at most %d processes, as an app has at most %d replicas (got %d)", j, spec.MaxReplicas, spec.MaxReplicas, n.NProcPerNode)
	}
	return n, nil
}

func atoiJ(j, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n > 1<<20 {
		return 0, fmt.Errorf("invalid -j %s: %s is too large", shown(j), s)
	}
	return n, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// RunName is dist.ddp's --name, {experiment}/{run}.
type RunName struct {
	Experiment string // TORCHX_TRACKING_EXPERIMENT_NAME
	Run        string // the app name and TORCHX_TRACKING_RUN_NAME
}

// DefaultExperiment is the experiment name when --name gives none.
const DefaultExperiment = "default-experiment"

// ParseRunName reads --name as TorchX's StructuredNameArgument does: "exp/run",
// "exp/" (run from the script or module), "/run" or "run"; the experiment defaults to
// default-experiment, and an empty run name is the script's file stem or the last
// dotted part of the module.
func ParseRunName(name, script, module string) RunName {
	var rn RunName
	i := strings.IndexByte(name, '/')
	switch {
	case i < 0:
		rn.Run = name
	case i < len(name)-1:
		rn.Run = name[i+1:]
	}
	if i > 0 {
		rn.Experiment = name[:i]
	}
	if rn.Run == "" {
		rn.Run = roleName(script, module)
	}
	if rn.Experiment == "" {
		rn.Experiment = DefaultExperiment
	}
	return rn
}

// roleName is TorchX's get_role_name: the script's file stem, or the module's last
// dotted part.
func roleName(script, module string) string {
	if script != "" {
		return pathStem(script)
	}
	if i := strings.LastIndexByte(module, '.'); i >= 0 {
		return module[i+1:]
	}
	return module
}

// pathStem is Python's pathlib stem: the last path element without its last suffix
// (a leading dot, as in ".bashrc", is not a suffix).
func pathStem(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.LastIndexByte(p, '.'); i > 0 && i < len(p)-1 {
		return p[:i]
	}
	return p
}

// debugEnv are the variables dist.ddp --debug sets, as in TorchX.
func debugEnv() map[string]string {
	return map[string]string{
		"CUDA_LAUNCH_BLOCKING":       "1",
		"NCCL_DESYNC_DEBUG":          "1",
		"TORCH_DISTRIBUTED_DEBUG":    "DETAIL",
		"TORCH_SHOW_CPP_STACKTRACES": "1",
	}
}

// ddpOptions are dist.ddp's arguments.
type ddpOptions struct {
	scriptArgs         []string
	script, module     string
	image, name, h     string
	cpu, gpu, memMB    int
	j                  string
	env, metadata      map[string]string
	maxRetries         int
	rdzvPort           int
	rdzvBackend        string
	rdzvConf           string
	hasRdzvConf, debug bool
	mounts             []string
	tee                int
	// args resolves h (Args.Named).
	args Args
}

// ddp builds dist.ddp's AppDef exactly as TorchX does: one role running
//
//	bash -c "torchrun --rdzv_backend B [--rdzv_conf C] --rdzv_endpoint EP --rdzv_id '${app_id}'
//	         --nnodes N --nproc_per_node P --tee T --role '' [--node_rank '${replica_id}']
//	         (SCRIPT | -m MODULE) ARGS..."
//
// with every word shell-quoted but the endpoint, which is localhost:0 for one node
// (torchelastic picks a free port) and $${${rank0_env}:=localhost}:PORT otherwise:
// after macro substitution ${TORCHX_RANK0_HOST:=localhost}:PORT, which bash expands.
func ddp(o ddpOptions) (*spec.AppDef, error) {
	if (o.script == "") == (o.module == "") {
		return nil, errors.New("exactly one of --script and -m must be specified")
	}
	n, err := ParseNNodes(o.j)
	if err != nil {
		return nil, err
	}
	endpoint := "localhost:0"
	if n.Max > 1 {
		endpoint = "$${${" + spec.MacroRank0Env + "}:=localhost}:" + strconv.Itoa(o.rdzvPort)
	}
	rn := ParseRunName(o.name, o.script, o.module)

	env := maps.Clone(o.env)
	if env == nil {
		env = map[string]string{}
	}
	env["TORCHX_TRACKING_EXPERIMENT_NAME"] = rn.Experiment
	env["TORCHX_TRACKING_RUN_NAME"] = rn.Run
	if _, ok := env["LOGLEVEL"]; !ok {
		env["LOGLEVEL"] = logLevel()
	}
	if o.debug {
		maps.Copy(env, debugEnv())
	}

	q := ShellQuote
	cmd := []string{"torchrun", "--rdzv_backend", q(o.rdzvBackend)}
	if o.hasRdzvConf {
		cmd = append(cmd, "--rdzv_conf", q(o.rdzvConf))
	}
	cmd = append(cmd,
		"--rdzv_endpoint", endpoint,
		"--rdzv_id", q("${"+spec.MacroAppID+"}"),
		"--nnodes", q(n.Rep),
		"--nproc_per_node", strconv.Itoa(n.NProcPerNode),
		"--tee", q(strconv.Itoa(o.tee)),
		"--role", q(""),
	)
	if o.rdzvBackend == "static" {
		cmd = append(cmd, "--node_rank", q("${"+spec.MacroReplicaID+"}"))
	}
	if o.script != "" {
		cmd = append(cmd, q(o.script))
	} else {
		cmd = append(cmd, "-m", q(o.module))
	}
	for _, a := range o.scriptArgs {
		cmd = append(cmd, q(a))
	}

	res, err := o.args.resource(o.cpu, o.gpu, o.memMB, o.h)
	if err != nil {
		return nil, err
	}
	var mounts []spec.Mount
	if len(o.mounts) > 0 {
		if mounts, err = spec.ParseMounts(strings.Join(o.mounts, ",")); err != nil {
			return nil, fmt.Errorf("--mounts: %w", err)
		}
	}
	r := spec.NewRole(roleName(o.script, o.module), o.image, "bash", "-c", strings.Join(cmd, " "))
	r.MinReplicas = n.Min
	r.NumReplicas = n.Max
	r.Resource = res
	r.Env = env
	r.PortMap = map[string]int{"c10d": o.rdzvPort}
	r.MaxRetries = o.maxRetries
	r.Mounts = mounts
	a := app(rn.Run, r)
	if len(o.metadata) > 0 {
		a.Metadata = maps.Clone(o.metadata)
	}
	return a, nil
}

// distParams are the parameters dist.ddp and dist.spmd share, in TorchX's order.
func distHead(hDefault string) []Param {
	h := hParam(hDefault)
	if hDefault != "" {
		h.Help = "the named resource of the host, e.g. gpu.small; -j N takes nproc_per_node from its GPU count"
	}
	return []Param{
		{Name: "script", Type: String, Optional: true, Help: "script or binary to run within the image"},
		{Name: "m", Type: String, Optional: true, Help: "the python module path to run"},
		imageParam(),
		{Name: "name", Type: String, Default: "/", Help: "job name: {experiment}/{run}, {experiment}/, /{run} or {run}; the run name defaults to the script or module name"},
		h,
	}
}

func distTail() []Param {
	return []Param{
		envParam(),
		{Name: "metadata", Type: Map, Optional: true, Help: "metadata for the scheduler, e.g. KEY1=v1,KEY2=v2"},
		{Name: "max_retries", Type: Int, Default: "0", Help: "the number of scheduler retries allowed"},
	}
}

func ddpComponent() *Component {
	params := distHead("")
	params = append(params,
		Param{Name: "cpu", Type: Int, Default: "2", Help: "number of cpus per replica"},
		Param{Name: "gpu", Type: Int, Default: "0", Help: "number of gpus per replica"},
		Param{Name: "memMB", Type: Int, Default: "1024", Help: "cpu memory in MB per replica"},
		Param{Name: "j", Type: String, Default: "1x2", Help: "[{min_nnodes}:]{nnodes}x{nproc_per_node}, or {nproc_per_node} for one node"},
	)
	params = append(params, distTail()...)
	params = append(params,
		Param{Name: "rdzv_port", Type: Int, Default: "29500", Help: "the port on rank 0's host for the c10d rendezvous store (multi-node only; one node uses a free port). Left at 29500, no two jobs share it: local_cwd, local_dir and slurm use one free on that host (29501-31500), local_docker's containers have ports of their own. A port chosen is used as given: if another program holds it, the app fails at once"},
		Param{Name: "rdzv_backend", Type: String, Default: "c10d", Help: "the rendezvous backend (multi-node only)"},
		Param{Name: "rdzv_conf", Type: String, Optional: true, Help: "more rendezvous configuration, e.g. join_timeout=600,close_timeout=600,timeout=600"},
		mountsParam(),
		Param{Name: "debug", Type: Bool, Default: "false", Help: "set PyTorch's debug variables (CUDA_LAUNCH_BLOCKING, NCCL_DESYNC_DEBUG, ...)"},
		Param{Name: "tee", Type: Int, Default: "3", Help: "tee std streams to console and file: 0 none, 1 stdout, 2 stderr, 3 both"},
	)
	return &Component{
		Name:    "dist.ddp",
		Summary: "Distributed data parallel style application (one role, multi-replica), launched with torchrun.",
		Help: "Each replica (node) runs torchrun, which starts nproc_per_node workers and\n" +
			"rendezvouses with the other nodes at rank 0's host (c10d backend, port --rdzv_port).\n" +
			"On one node torchrun picks a free port. Exactly one of --script and -m is needed.\n" +
			"The named resource -h wins over --cpu, --gpu and --memMB.",
		Params:      params,
		Varargs:     "script_args",
		VarargsHelp: "arguments to the script or module",
		Example:     []string{"-j", "2x4", "--script", "main.py"},
		Build: func(a Args) (*spec.AppDef, error) {
			return ddp(ddpOptions{
				scriptArgs: a.Varargs, script: a.String("script"), module: a.String("m"),
				image: a.String("image"), name: a.String("name"), h: a.String("h"),
				cpu: a.Int("cpu"), gpu: a.Int("gpu"), memMB: a.Int("memMB"), j: a.String("j"),
				env: a.Map("env"), metadata: a.Map("metadata"), maxRetries: a.Int("max_retries"),
				rdzvPort: a.Int("rdzv_port"), rdzvBackend: a.String("rdzv_backend"),
				rdzvConf: a.String("rdzv_conf"), hasRdzvConf: a.Has("rdzv_conf"),
				mounts: a.List("mounts"), debug: a.Bool("debug"), tee: a.Int("tee"), args: a,
			})
		},
	}
}

func spmdComponent() *Component {
	params := distHead("gpu.small")
	params = append(params,
		Param{Name: "j", Type: String, Default: "1x1", Help: "{nnodes}x{nproc_per_node}, or {nnodes} to run one process per GPU of -h"},
	)
	params = append(params, distTail()...)
	params = append(params, mountsParam(),
		Param{Name: "debug", Type: Bool, Default: "false", Help: "set PyTorch's debug variables (CUDA_LAUNCH_BLOCKING, NCCL_DESYNC_DEBUG, ...)"})
	return &Component{
		Name:    "dist.spmd",
		Summary: "Single-process-multiple-data application: n nodes x m processes of one program (dist.ddp on a named host).",
		Help: "-j N runs N nodes with one process per GPU of the host -h (a host without GPUs\n" +
			"needs -j NxM). Multi-node runs need a route between hosts, and the rendezvous port of\n" +
			"rank 0's host open to the others: one free there that wick picks (29501-31500) on\n" +
			"local_cwd, local_dir and slurm, 29500 in local_docker's containers.",
		Params:      params,
		Varargs:     "args",
		VarargsHelp: "arguments to the script or module",
		Example:     []string{"-j", "2", "--script", "main.py"},
		Build: func(a Args) (*spec.AppDef, error) {
			j, err := spmdJ(a, a.String("h"), a.String("j"))
			if err != nil {
				return nil, err
			}
			return ddp(ddpOptions{
				scriptArgs: a.Varargs, script: a.String("script"), module: a.String("m"),
				image: a.String("image"), name: a.String("name"), h: a.String("h"),
				cpu: 2, gpu: 0, memMB: 1024, j: j,
				env: a.Map("env"), metadata: a.Map("metadata"), maxRetries: a.Int("max_retries"),
				rdzvPort: 29500, rdzvBackend: "c10d",
				mounts: a.List("mounts"), debug: a.Bool("debug"), tee: 3, args: a,
			})
		},
	}
}

// spmdJ is TorchX's StructuredJArgument: "N" takes nproc_per_node from the GPU count
// of the named resource h (an error for a host without GPUs), "NxM" keeps M and warns
// when it differs from the GPU count. wick also accepts MIN:MAX for N.
func spmdJ(a Args, h, j string) (string, error) {
	res, err := a.namedResource(h)
	if err != nil {
		return "", fmt.Errorf("-h: %w", err)
	}
	nodes, nproc, hasX := strings.Cut(j, "x")
	lo, hi, elastic := strings.Cut(nodes, ":")
	if !isDigits(lo) || elastic && !isDigits(hi) || hasX && !isDigits(nproc) {
		return "", fmt.Errorf("invalid format for -j, usage example: 2x8 or 2 (nproc_per_node from the GPUs of -h). Given: %s", shown(j))
	}
	if !hasX {
		if res.GPU <= 0 {
			return "", fmt.Errorf("nproc_per_node cannot be inferred from GPU count: %s is not a GPU instance; give -j %sx8 (NNODESxNPROCS_PER_NODE)", h, nodes)
		}
		return nodes + "x" + strconv.Itoa(res.GPU), nil
	}
	if n, err := strconv.Atoi(nproc); err == nil && n != res.GPU {
		a.warnf("-j %s sets nproc_per_node=%s, but a %s host has %d GPUs: this may under-use the host or fail; give -j %s to use one process per GPU",
			j, nproc, h, res.GPU, nodes)
	}
	return j, nil
}
