package sweep

import (
	"errors"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

// submitLimit matches the reasons Slurm gives for refusing a job at a submit limit:
// job_state_reason_string in Slurm's src/common/slurm_protocol_defs.c names them
// QOSMaxSubmitJobPerUserLimit, QOSMaxSubmitJobPerAccountLimit, QOSGrpSubmitJobsLimit,
// AssocMaxSubmitJobLimit and AssocGrpSubmitJobsLimit, and sbatch prints the reason on
// a line of its own before "Batch job submission failed: Job violates accounting/QOS
// policy (job submit limit, user's size and/or time limits)" (ESLURM_ACCOUNTING_POLICY
// in slurm_errno.c).
var submitLimit = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(QOS|Assoc)(Max|Grp)Submit[A-Za-z]*`)
})

// LimitRefusal says whether a launch failed for a limit that will pass (a submit limit
// of the site, a full disk), rather than for the app itself, and names it: such an app
// stays queued and is tried again.
func LimitRefusal(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.ENOSPC), strings.Contains(msg, "no space left on device"):
		return "no space left on device", true
	case errors.Is(err, syscall.EDQUOT), strings.Contains(msg, "disk quota exceeded"):
		return "disk quota exceeded", true
	}
	if m := submitLimit().FindString(msg); m != "" {
		return "Slurm " + m, true
	}
	if strings.Contains(msg, "job submit limit") {
		return "Slurm's job submit limit", true
	}
	return "", false
}
