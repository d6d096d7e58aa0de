package slurm

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/ranks/watch"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// JobIDVar stands for the job id in the paths of a Request: sbatch assigns the id, and
// the batch script expands the variable.
const JobIDVar = "${SLURM_JOB_ID}"

// Request is what Schedule submits: the sbatch command, given the script on its
// standard input. DryRun returns it; its fields are in the order they are printed.
type Request struct {
	// AppID is a placeholder: the app id is the job id sbatch prints.
	AppID   string `json:"app_id"`
	Session string `json:"session"`
	// Cmd is the sbatch command line; the script is its standard input.
	Cmd []string `json:"cmd"`
	// JobDir is where the job runs and writes its logs.
	JobDir string `json:"job_dir"`
	// BatchLog is the batch script's own output (srun's messages, Slurm's notices).
	BatchLog   string    `json:"batch_log"`
	MaxRetries int       `json:"max_retries"`
	Replicas   []Replica `json:"replicas"`
	// Script is the batch script, line by line.
	Script   []string `json:"script"`
	Warnings []string `json:"warnings,omitempty"`

	app *spec.AppDef
	cfg spec.Cfg
	// rdzvPort is set when a role's rendezvous port is picked when the job starts
	// (rdzvport.go).
	rdzvPort bool
	// chosenPorts are the rendezvous ports the user chose that the script checks on
	// rank 0's node before srun (rdzvport.go).
	chosenPorts []int
}

// Replica is one component of the heterogeneous job.
type Replica struct {
	Role     string `json:"role"`
	Replica  int    `json:"replica"`
	HetGroup int    `json:"het_group"`
	JobName  string `json:"job_name"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	// ExitFile receives the replica's exit status when it ends.
	ExitFile string `json:"exit_file"`
	// Command is the srun command of the component, as the script runs it.
	Command []string `json:"command"`
}

// JobName is the name of the component of a wick job that runs replica k of role.
func JobName(session, app, role string, k int) string {
	return JobNamePrefix + session + ":" + app + ":" + role + ":" + strconv.Itoa(k)
}

// parseJobName reads a name made by JobName.
func parseJobName(name string) (session, app, role string, k int, ok bool) {
	rest, found := strings.CutPrefix(name, JobNamePrefix)
	if !found {
		return "", "", "", 0, false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 4 {
		return "", "", "", 0, false
	}
	k, err := strconv.Atoi(parts[3])
	if err != nil || k < 0 {
		return "", "", "", 0, false
	}
	return parts[0], parts[1], parts[2], k, true
}

// replicaFile is the path of a replica's file (ext "out", "err" or "exit") for a job
// id, or for JobIDVar in a plan.
func replicaFile(dir, jobID, role string, k int, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("slurm-%s-%s-%d.%s", jobID, role, k, ext))
}

// timesFile is the sizes-over-time index of the replica whose exit file is exit.
func timesFile(exit string) string { return strings.TrimSuffix(exit, ".exit") + ".times" }

// errorFile is the TORCHELASTIC_ERROR_FILE of the replica whose exit file is exit.
func errorFile(exit string) string { return strings.TrimSuffix(exit, ".exit") + ".error.json" }

// batchLog is the batch script's output file.
func batchLog(dir, jobID string) string { return filepath.Join(dir, "slurm-"+jobID+".out") }

// timeRe matches sbatch's time formats.
var timeRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\d+|\d+:\d+|\d+:\d+:\d+|\d+-\d+|\d+-\d+:\d+|\d+-\d+:\d+:\d+)$`)
})

// mailTypes are the events sbatch --mail-type knows.
var mailTypes = []string{"NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT",
	"TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS"}

// DryRun plans the job: the sbatch command and script. It needs no Slurm.
func (s *Scheduler) DryRun(ctx context.Context, sub sched.Submission) (any, error) {
	return s.plan(sub)
}

// checkWord rejects values that would change the meaning of an #SBATCH line.
func checkWord(key, v string) error {
	if strings.ContainsAny(v, " \t\r\n'\"\\#") {
		return fmt.Errorf("%w %s=%q: no spaces, quotes, '\\' or '#'", spec.ErrInvalidRunOpt, key, v)
	}
	return nil
}

// checkOpts rejects the run options that the job's sbatch command or script cannot
// hold as they are: control characters, '%' or '\' in job_dir, words that would change
// an #SBATCH line, a malformed time or an unknown mail event.
func (s *Scheduler) checkOpts(cfg spec.Cfg) error {
	// No option may hold a control character: a newline would end the script's line
	// it is written on (a comment line, and a command after it), a tab or NUL would
	// change how sbatch reads it.
	for _, o := range s.RunOpts() {
		if o.Type != spec.OptString || o.Name == alerts.OptOnEnd || o.Name == alerts.OptOnAlarm {
			continue // the commands are run by the watcher, not written in the script
		}
		if v := cfg.String(o.Name); strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return fmt.Errorf("%w %s=%q: no control characters (newlines, tabs...)", spec.ErrInvalidRunOpt, o.Name, v)
		}
	}
	// sbatch and srun expand %j, %N... in the file names made from job_dir, and '\'
	// turns that expansion off: either would put the logs elsewhere than wick reads.
	if d := cfg.String(OptJobDir); strings.ContainsAny(d, `%\`) {
		return fmt.Errorf("%w %s=%q: no '%%' or '\\' (sbatch reads %%j, %%N... in the log file names made from it)", spec.ErrInvalidRunOpt, OptJobDir, d)
	}
	for _, k := range []string{OptPartition, OptConstraint, OptQOS, OptTime} {
		if err := checkWord(k, cfg.String(k)); err != nil {
			return err
		}
	}
	if t := cfg.String(OptTime); t != "" && !timeRe().MatchString(t) && !strings.EqualFold(t, "UNLIMITED") && !strings.EqualFold(t, "INFINITE") {
		return fmt.Errorf("%w %s=%q: want minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes or days-hours:minutes:seconds", spec.ErrInvalidRunOpt, OptTime, t)
	}
	if mt := cfg.String(OptMailType); mt != "" {
		for _, t := range strings.Split(mt, ",") {
			if !contains(mailTypes, strings.ToUpper(strings.TrimSpace(t))) {
				return fmt.Errorf("%w %s: unknown event %q%s; known: %s", spec.ErrInvalidRunOpt, OptMailType, t, spec.DidYouMean(strings.ToUpper(t), mailTypes), strings.Join(mailTypes, ","))
			}
		}
	}
	return nil
}

// plan checks sub's run options and plans its job: the sbatch command, the batch
// script and the replicas.
func (s *Scheduler) plan(sub sched.Submission) (*Request, error) {
	if sub.App == nil {
		return nil, fmt.Errorf("slurm: no app to plan")
	}
	// The Runner has validated the app and the names and resolved the run options
	// (sched.Scheduler.DryRun).
	session := sub.Session // the Runner's (sched.Submission)
	app := sub.App.Clone()
	cfg := sub.Cfg
	if err := s.checkOpts(cfg); err != nil {
		return nil, err
	}
	// job_dir, relative to the launching command's directory, or that directory.
	wd, err := s.workDir()
	if err != nil {
		return nil, fmt.Errorf("slurm: the current directory: %w", err)
	}
	dir := wd
	if d := cfg.String(OptJobDir); d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(wd, d)
		}
		dir = filepath.Clean(d)
	}

	req := &Request{
		AppID:   "<job id: sbatch assigns it>",
		Session: session,
		JobDir:  dir,
		app:     app,
		cfg:     cfg,
	}
	req.BatchLog = batchLog(dir, JobIDVar)
	req.Cmd = []string{"sbatch", "--parsable"}
	for _, k := range []string{OptComment, OptMailUser, OptMailType, OptAccount} {
		if v := cfg.String(k); v != "" {
			req.Cmd = append(req.Cmd, "--"+k+"="+v)
		}
	}
	// On the command line, not in the script: an #SBATCH line cannot hold a path with
	// spaces. The batch script runs in component 0, which is what these apply to.
	req.Cmd = append(req.Cmd, "--chdir="+dir, "--output="+batchLog(dir, "%j"))
	if sub.Workspace != "" {
		req.Warnings = append(req.Warnings, "the workspace is ignored on slurm: the job runs in job_dir ("+dir+")")
	}

	retries := -1
	for _, role := range app.Roles {
		if retries < 0 || role.MaxRetries < retries {
			retries = role.MaxRetries
		}
		if len(role.Mounts) > 0 {
			req.Warnings = append(req.Warnings, fmt.Sprintf("role %q: mounts are ignored on slurm", role.Name))
		}
		if len(role.PortMap) > 0 {
			req.Warnings = append(req.Warnings, fmt.Sprintf("role %q: port_map is informational on slurm (replicas share the nodes' network)", role.Name))
		}
		if ranks.KeepsDefaultRdzvPort(role) {
			req.rdzvPort = true
			req.Warnings = append(req.Warnings, fmt.Sprintf("role %q: rendezvous port: not TorchX's default %d (another job's store may hold it on the same host) but one free on rank 0's node when the job starts, picked by the batch script (%s in the command); the batch log says which", role.Name, ranks.DefaultRdzvPort, RdzvPortVar))
		}
	}
	req.MaxRetries = retries
	req.chosenPorts = chosenPorts(app)

	var groups [][]string
	for _, role := range app.Roles {
		for k := range role.NumReplicas {
			rep, opts := planReplica(req, role, k, len(req.Replicas))
			req.Replicas = append(req.Replicas, rep)
			groups = append(groups, opts)
		}
	}
	req.Script = script(req, groups)
	return req, nil
}

// appIDMark stands for ${app_id} while a replica's words are planned; the script turns
// it into "$SLURM_JOB_ID". No argument can hold a NUL byte.
const appIDMark = "\x00app_id\x00"

// planReplica plans component group of the job: replica k of role.
func planReplica(req *Request, role spec.Role, k, group int) (Replica, []string) {
	cfg := req.cfg
	name := JobName(req.Session, req.app.Name, role.Name, k)
	opts := []string{"--job-name=" + name, "--requeue", "--ntasks-per-node=1"}
	for _, key := range []string{OptPartition, OptTime, OptConstraint, OptQOS} {
		if v := cfg.String(key); v != "" {
			opts = append(opts, "--"+key+"="+v)
		}
	}
	// A negative value (TorchX's NULL_RESOURCE) leaves Slurm's default. GPUs are asked
	// per node, which Slurm 22.05 and 24.11+ (which refuses --gpus-per-task with
	// select/linear) both accept.
	res := role.Resource
	if res.CPU > 0 {
		opts = append(opts, "--cpus-per-task="+strconv.Itoa(res.CPU))
	}
	if res.MemMB > 0 {
		opts = append(opts, "--mem="+strconv.Itoa(res.MemMB))
	}
	if res.GPU > 0 {
		opts = append(opts, "--gpus-per-node="+strconv.Itoa(res.GPU))
	}

	r := spec.Macros{AppID: appIDMark, ReplicaID: strconv.Itoa(k), ImgRoot: role.Image, Rank0Env: spec.Rank0Env}.Apply(role)
	if ranks.KeepsDefaultRdzvPort(role) { // the batch script picks it (rdzvport.go)
		argv := ranks.WithRdzvPort(append([]string{r.Entrypoint}, r.Args...), portMark)
		r.Entrypoint, r.Args = argv[0], argv[1:]
	}
	env := map[string]string{}
	for key, v := range r.Env {
		env[key] = v
	}
	exitFile := replicaFile(req.JobDir, JobIDVar, role.Name, k, "exit")
	env["WICK_APP_ID"] = appIDMark
	env["WICK_ROLE"] = role.Name
	env["WICK_REPLICA_ID"] = strconv.Itoa(k)
	env["WICK_EXIT_FILE"] = strings.ReplaceAll(exitFile, JobIDVar, appIDMark)
	// torchelastic writes a failed worker's error there; status shows its message.
	env["TORCHELASTIC_ERROR_FILE"] = strings.ReplaceAll(errorFile(exitFile), JobIDVar, appIDMark)

	out := replicaFile(req.JobDir, JobIDVar, role.Name, k, "out")
	errf := replicaFile(req.JobDir, JobIDVar, role.Name, k, "err")
	cmd := []string{
		"--output=" + strings.ReplaceAll(out, JobIDVar, appIDMark),
		"--error=" + strings.ReplaceAll(errf, JobIDVar, appIDMark),
		// Retries (requeues) append to the same files instead of truncating them.
		"--open-mode=append",
		// Fail fast: kill the others when one fails, or 60 s after the first ends.
		"--kill-on-bad-exit=1", "--wait=60",
		"/usr/bin/env",
	}
	for _, key := range spec.SortedKeys(env) {
		cmd = append(cmd, key+"="+env[key])
	}
	cmd = append(cmd, "/bin/sh", "-c", wrapper, "wick-replica", r.Entrypoint)
	cmd = append(cmd, r.Args...)

	rep := Replica{
		Role: role.Name, Replica: k, HetGroup: group, JobName: name,
		Stdout: out, Stderr: errf, ExitFile: exitFile,
	}
	for _, w := range cmd {
		rep.Command = append(rep.Command, strings.NewReplacer(appIDMark, JobIDVar, portMark, RdzvPortVar).Replace(w))
	}
	return rep, append(opts, strings.Join(quoteWords(cmd), " "))
}

// wrapper runs a replica's command (its arguments) and records, beside its log files,
// what Slurm does not: its exit status (Slurm keeps one per job) in .exit, and in
// .times when its stdout and stderr grew, "UNIX_MS OUT_SIZE ERR_SIZE" each time a
// sample every 200 ms sees them change, so that every line has a time even when no
// one followed the logs live. The sampler lives in the step, off the replica's output
// path, and ends with it. For a torchrun node it also records in .rank the group rank
// torchrun gave the node's workers (GROUP_RANK in their environment: with c10d's
// rendezvous, node k need not be group rank k, and torchrun says it only at
// LOGLEVEL=INFO), looked for every 200 ms until found, then every 5 s (a restart of
// the workers may change it). It also watches the node's workers with the sampler's
// functions that local_docker runs too (engine/ranks/watch: the agent's children
// with RANK in their environment, looked for with the group rank), sampling every
// 100 ms, and records in .watch "UNIX_MS PID RANK THREADS" each time a worker's thread
// count changes, 0 once it is gone: a Python worker that raised begins to end (its
// threads go) before the peers that fail of it, and may exit after them; the root
// cause reads which worker wrote which unprefixed traceback from that
// (ranks.NodeReport.Workers). A sample looks at the workers first, then at the files'
// sizes, and stamps all it saw changed with one time, later than the sample before:
// what one sample saw has no order (a loaded machine's sampler wakes seldom, and two
// workers may end between two of its samples), and a line written before a worker
// began to end is never stamped after it.
// The sampler ends with the wrapper if the wrapper is killed (a kill -9 skips its
// kill "$s"): with proctrack/linuxproc Slurm does not find it once orphaned, and it
// would sample for ever.
const wrapper = `w="${WICK_EXIT_FILE%.exit}"; p=; q=; a=; ws=; l=0
m() { h=; [ -z "$ws" ] || u; n=$(stat -c %s "$w.out" "$w.err" 2>/dev/null); set -- $n; { [ $# = 2 ] && [ "$n" != "$p" ]; } || set --; [ $# = 2 ] || [ -n "$h" ] || return 0; z; if [ $# = 2 ]; then echo "$T $1 $2" >>"$w.times"; p=$n; fi; [ -z "$h" ] || o; }
` + watch.Funcs + `case "$*" in *torchrun*|*torch.distributed.run*) t=1; d=0.1; r=50;; *) t=; d=0.2; r=25;; esac
(i=0; while kill -0 $$ 2>/dev/null; do m; if [ -n "$t" ] && { [ -z "$q" ] || [ $((i % r)) = 0 ]; }; then g $$ && k; fi; i=$((i+1)); sleep $d; done) & s=$!
"$@"; c=$?
kill "$s" 2>/dev/null; m
echo "$c" >"$WICK_EXIT_FILE"; exit "$c"`

// quoteWords quotes words for bash, with appIDMark turned into "$SLURM_JOB_ID" and
// portMark into "$WICK_RDZV_PORT".
func quoteWords(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		parts := strings.Split(w, appIDMark)
		for j, p := range parts {
			sub := strings.Split(p, portMark)
			for k, q := range sub {
				sub[k] = shellQuote(q)
			}
			parts[j] = strings.Join(sub, `"$WICK_RDZV_PORT"`)
		}
		out[i] = strings.Join(parts, `"$SLURM_JOB_ID"`)
		out[i] = strings.TrimPrefix(strings.TrimSuffix(out[i], "''"), "''")
		if out[i] == "" {
			out[i] = "''"
		}
	}
	return out
}

// shellQuote quotes s for bash when it holds anything but plain characters.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	plain := true
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("@%_+=:,./-", c) >= 0) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// script writes the batch script: one #SBATCH group per replica, then one srun over
// every component, then TorchX's retry: requeue the job while retries remain.
func script(req *Request, groups [][]string) []string {
	var head []string
	for i, g := range groups {
		if i > 0 {
			head = append(head, "#SBATCH hetjob")
		}
		head = append(head, "#SBATCH "+strings.Join(g[:len(g)-1], " "))
	}
	lines := []string{
		"#!/bin/bash",
		"#",
		comment(fmt.Sprintf("Generated by wick %s for app %s (session %s).", spec.Version, req.app.Name, req.Session)),
		comment("Submitted with: " + strings.Join(quoteWords(req.Cmd), " ") + " < this script"),
		"#",
	}
	lines = append(lines, head...)
	lines = append(lines,
		"",
		"export PYTHONUNBUFFERED=1",
		"export SLURM_UNBUFFEREDIO=1",
		"export TORCHX_MAX_RETRIES="+strconv.Itoa(req.MaxRetries),
		"# Rank 0's host: the address of the first node of component 0.",
		`wick_node0=$(scontrol show hostnames "${SLURM_JOB_NODELIST_HET_GROUP_0:-$SLURM_JOB_NODELIST}" | head -n 1)`,
		`wick_addr0=$(scontrol show node -o "$wick_node0" 2>/dev/null | sed -n 's/.* NodeAddr=\([^ ]*\).*/\1/p')`,
		`export TORCHX_RANK0_HOST="${wick_addr0:-$wick_node0}"`,
	)
	if req.rdzvPort {
		lines = append(lines, rdzvPortLines()...)
	}
	lines = append(lines,
		"# A retry starts without the exit statuses and errors of the last attempt.",
		"rm -f "+shellQuote(req.JobDir)+`/slurm-"$SLURM_JOB_ID"-*.exit `+shellQuote(req.JobDir)+`/slurm-"$SLURM_JOB_ID"-*.error.json`,
		"# (The .times files stay: the logs they time are appended to, not replaced.)",
	)
	if len(req.chosenPorts) > 0 {
		// After the removal: the status of a job stopped here has no replica's exit.
		lines = append(lines, portCheckLines(req.chosenPorts)...)
	}
	lines = append(lines, "")
	for i, g := range groups {
		prefix := "srun "
		if i > 0 {
			prefix = "  : "
		}
		line := prefix + g[len(g)-1]
		if i < len(groups)-1 {
			line += ` \`
		}
		lines = append(lines, line)
	}
	lines = append(lines,
		"exitcode=$?",
		"",
		`echo "wick: srun exited with code $exitcode"`,
		`if [ "$exitcode" -ne 0 ] && [ "$TORCHX_MAX_RETRIES" -gt "${SLURM_RESTART_COUNT:-0}" ]; then`,
		`    scontrol requeue "$SLURM_JOB_ID"`,
		"fi",
		`exit "$exitcode"`,
	)
	return lines
}

// comment is a comment line of the script holding text: a control character in it
// (which plan refuses in the run options anyway) is written escaped, so that nothing
// can end the line and run as a command.
func comment(text string) string {
	var b strings.Builder
	b.WriteString("# ")
	for _, r := range text {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
