package slurm

import "strings"

// Slurm's client commands read their defaults from the environment (sbatch(1), "INPUT
// ENVIRONMENT VARIABLES": SBATCH_ACCOUNT, SBATCH_PARTITION, SBATCH_QOS...; squeue(1)'s
// SQUEUE_*; SLURM_CONF and a few SLURM_* that every command reads). Sites tell users
// to set them, and TorchX's slurm scheduler passes its whole environment on: so does
// wick. What it drops is what Slurm itself sets inside a job (sbatch(1), srun(1) and
// salloc(1), "OUTPUT ENVIRONMENT VARIABLES": SLURM_JOB_ID, SLURM_NTASKS,
// SLURM_CPUS_PER_TASK, SBATCH_MEM_BIND...) when wick runs inside one: sbatch's
// --export=ALL would carry them into the new job, where srun would take the outer
// job's task counts and bindings for its own.
//
// Sources: SchedMD/slurm 284c3b95, doc/man/man1/{sbatch,srun,salloc,squeue,sacct,
// scontrol,scancel}.1.

// slurmInputVars are the SLURM_* variables that the commands wick runs (sbatch,
// squeue, scontrol, sacct, scancel) read as input: kept inside a job too.
var slurmInputVars = map[string]bool{
	"SLURM_CONF": true, "SLURM_CLUSTERS": true, "SLURM_DEBUG_FLAGS": true,
	"SLURM_EXIT_ERROR": true, "SLURM_HINT": true, "SLURM_STEP_KILLED_MSG_NODE_ID": true,
	"SLURM_UMASK": true, "SLURM_BITSTR_LEN": true, "SLURM_JSON": true, "SLURM_YAML": true,
	"SLURM_TIME_FORMAT": true, "SLURM_CONF_OUT": true, "SLURM_TOPO_LEN": true,
}

// sbatchJobVars are the SBATCH_* variables that sbatch(1) sets in a job's environment
// (its "OUTPUT ENVIRONMENT VARIABLES"): inside a job they are Slurm's, not the user's.
var sbatchJobVars = map[string]bool{
	"SBATCH_MEM_BIND": true, "SBATCH_MEM_BIND_LIST": true, "SBATCH_MEM_BIND_PREFER": true,
	"SBATCH_MEM_BIND_TYPE": true, "SBATCH_MEM_BIND_VERBOSE": true,
}

// commandEnv is the environment of a Slurm command run with env: env as it is, except
//
//   - inside a job (SLURM_JOB_ID or SLURM_JOBID set), the SLURM_* variables Slurm set
//     there (every SLURM_* but slurmInputVars) and sbatchJobVars;
//   - SLURM_TIME_FORMAT, which wick sets to "standard" (Slurm's default), because it
//     reads the times scontrol and sacct print;
//   - SCANCEL_INTERACTIVE (scancel -i), which would make scancel ask on its stdin
//     before each cancel: wick's cancel is the user's answer already.
func commandEnv(env []string) []string {
	inJob := false
	for _, kv := range env {
		if strings.HasPrefix(kv, "SLURM_JOB_ID=") || strings.HasPrefix(kv, "SLURM_JOBID=") {
			inJob = true
		}
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "SLURM_TIME_FORMAT" || k == "SCANCEL_INTERACTIVE":
			continue
		case inJob && strings.HasPrefix(k, "SLURM_") && !slurmInputVars[k]:
			continue
		case inJob && sbatchJobVars[k]:
			continue
		}
		out = append(out, kv)
	}
	return append(out, "SLURM_TIME_FORMAT=standard")
}

// outageMessages are Slurm's messages for a controller that does not answer
// now (down, restarting, busy, failing over, rate limiting): an outage, in which wick
// shows each app's last known state, not an error. Each is Slurm's own text, from
// SchedMD/slurm 284c3b95, src/common/slurm_errno.c, as the commands print it after
// "error: " (slurm_strerror):
var outageMessages = []string{
	"Unable to contact slurm controller",                        // :186-198, SLURMCTLD_COMMUNICATIONS_{CONNECTION,SEND,RECEIVE,SHUTDOWN}_ERROR
	"Rate limit exceeded, please retry later",                   // :206, SLURMCTLD_COMMUNICATIONS_HARD_DROP
	"Slurm backup controller in standby mode",                   // :333, ESLURM_IN_STANDBY_MODE
	"Controller is in standby mode, try a different controller", // :747, ESLURM_IN_STANDBY_USE_BACKUP
	"Socket timed out on send/recv operation",                   // :1152, SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT
	"Zero Bytes were transmitted or received",                   // :1156, SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT (slurmctld busy or restarting)
	"Communication connection failure",                          // :84, SLURM_COMMUNICATIONS_CONNECTION_ERROR
	"Message send failure",                                      // :88, SLURM_COMMUNICATIONS_SEND_ERROR
	"Message receive failure",                                   // :92, SLURM_COMMUNICATIONS_RECEIVE_ERROR
	"Connection timed out establishing",                         // :164, SLURM_COMMUNICATIONS_CONNECT_TIMEOUT
	"Connection timed out writing",                              // :168, SLURM_COMMUNICATIONS_WRITE_TIMEOUT
	"Connection timed out reading",                              // :172, SLURM_COMMUNICATIONS_READ_TIMEOUT
}

// controllerDown reports whether a command's stderr says the controller is not
// answering now (outageMessages).
func controllerDown(msg string) bool {
	for _, m := range outageMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
