package testkit

import (
	"bytes"
	"context"
	"errors"
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

// errSlurmOff is slurmConf's answer under WICK_TEST_SLURM=0.
var errSlurmOff = errors.New("WICK_TEST_SLURM=0: the Slurm tests are turned off")

// slurmConf is the test cluster's slurm.conf: WICK_TEST_SLURM_CONF, else the one
// `make slurm-up` wrote (with its mark); or why there is none.
func slurmConf() (string, error) {
	if os.Getenv("WICK_TEST_SLURM") == "0" {
		return "", errSlurmOff
	}
	conf := os.Getenv("WICK_TEST_SLURM_CONF")
	if conf == "" {
		b, err := os.ReadFile(upConf)
		if err != nil || !bytes.HasPrefix(b, []byte(upMark)) {
			return "", errors.New("there is no test Slurm cluster: `make slurm-up` starts one (or name its slurm.conf in WICK_TEST_SLURM_CONF; WICK_TEST_SLURM=0 turns these tests off)")
		}
		return upConf, nil
	}
	if _, err := os.Stat(conf); err != nil {
		return "", fmt.Errorf("WICK_TEST_SLURM_CONF: %w", err)
	}
	return conf, nil
}

// UseSlurm points the Slurm commands of the whole test binary (and of the wick
// processes its tests start, which inherit its environment) at the test cluster, never
// at whatever cluster answers: it sets SLURM_CONF to the test cluster's slurm.conf
// (see NeedSlurm) once, for the process. A package with Slurm tests calls it from
// TestMain, before m.Run: set there, and not by t.Setenv in each test (which forbids
// t.Parallel), it lets the Slurm tests, which mostly wait on the cluster, run in
// parallel. Without a test cluster it sets nothing, and NeedSlurm says why.
func UseSlurm() {
	if conf, err := slurmConf(); err == nil {
		_ = os.Setenv("SLURM_CONF", conf)
	}
}

// NeedSlurm makes sure t's Slurm commands (and the wick processes t starts) go to the
// test cluster, as UseSlurm (called by the package's TestMain) set them to:
//   - WICK_TEST_SLURM=0: t is skipped, with a message, CI or not;
//   - WICK_TEST_SLURM_CONF names the cluster's slurm.conf; by default, the one
//     `make slurm-up` wrote (/etc/slurm/slurm.conf, with its mark);
//   - that cluster's controller must answer `scontrol ping`.
//
// Without its cluster t skips, or fails under CI=true. A package whose TestMain did not
// call UseSlurm fails here: its tests would submit to the cluster SLURM_CONF happens to
// name. t may be parallel.
func NeedSlurm(t testing.TB) {
	t.Helper()
	conf, err := slurmConf()
	if errors.Is(err, errSlurmOff) {
		t.Skip(err.Error())
	}
	if err != nil {
		Missing(t, err.Error())
		return
	}
	if got := os.Getenv("SLURM_CONF"); got != conf {
		t.Fatalf("SLURM_CONF is %q, not the test cluster's %s: the package's TestMain must call testkit.UseSlurm", got, conf)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Scale(20*time.Second))
	defer cancel()
	out, err := exec.CommandContext(ctx, "scontrol", "ping").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(" is UP")) {
		Missing(t, fmt.Sprintf("the test Slurm cluster (%s) does not answer `scontrol ping` (`make slurm-up` starts it): %v %s", conf, err, bytes.TrimSpace(out)))
	}
}
