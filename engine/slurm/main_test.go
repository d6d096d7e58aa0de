package slurm

import (
	"os"
	"testing"

	"github.com/wick-dev/wick/internal/testkit"
)

// TestMain points the package's Slurm commands at the test cluster once (SLURM_CONF,
// testkit.UseSlurm), so that the cluster tests, which mostly wait on the cluster, may
// run in parallel.
func TestMain(m *testing.M) {
	testkit.UseSlurm()
	os.Exit(m.Run())
}
