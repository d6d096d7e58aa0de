package testkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// upConf is where scripts/slurm/up.sh (`make slurm-up`) writes the test cluster's
// config, and upMark the line it writes first, by which the tests know it is theirs.
const (
	upConf = "/etc/slurm/slurm.conf"
	upMark = "# written by wick scripts/slurm/up.sh"
)

// NeedSlurm points t's Slurm commands (and the wick processes t starts, which inherit
// its environment) at the test cluster, never at whatever cluster answers:
//   - WICK_TEST_SLURM=0: t is skipped, with a message, CI or not;
//   - WICK_TEST_SLURM_CONF names the cluster's slurm.conf; by default, the one
//     `make slurm-up` wrote (/etc/slurm/slurm.conf, with its mark);
//   - that cluster's controller must answer `scontrol ping`.
//
// Without its cluster t skips, or fails under CI=true. It sets SLURM_CONF for t, so t
// must not be parallel.
func NeedSlurm(t testing.TB) {
	t.Helper()
	if os.Getenv("WICK_TEST_SLURM") == "0" {
		t.Skip("WICK_TEST_SLURM=0: the Slurm tests are turned off")
	}
	conf := os.Getenv("WICK_TEST_SLURM_CONF")
	if conf == "" {
		b, err := os.ReadFile(upConf)
		if err != nil || !bytes.HasPrefix(b, []byte(upMark)) {
			Missing(t, "there is no test Slurm cluster: `make slurm-up` starts one (or name its slurm.conf in WICK_TEST_SLURM_CONF; WICK_TEST_SLURM=0 turns these tests off)")
			return
		}
		conf = upConf
	}
	if _, err := os.Stat(conf); err != nil {
		Missing(t, "WICK_TEST_SLURM_CONF: "+err.Error())
		return
	}
	t.Setenv("SLURM_CONF", conf)
	ctx, cancel := context.WithTimeout(context.Background(), Scale(20*time.Second))
	defer cancel()
	out, err := exec.CommandContext(ctx, "scontrol", "ping").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(" is UP")) {
		Missing(t, fmt.Sprintf("the test Slurm cluster (%s) does not answer `scontrol ping` (`make slurm-up` starts it): %v %s", conf, err, bytes.TrimSpace(out)))
	}
}
