package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// BenchmarkAttachedEcho times `wick run utils.echo` attached (launch, follow the
// replica's logs to their end, print the final state) beside `wick run --detach` of the
// same component (the launch alone) and `sh -c 'echo hi'` (what the machine can do).
// The three are interleaved in rotating order, so that a busy machine weighs on each
// alike: attached/detached is the figure (the bound: at most 1.4).
func BenchmarkAttachedEcho(b *testing.B) {
	dir := b.TempDir()
	env := append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
	cmds := []struct {
		name string
		argv []string
	}{
		{"sh", []string{"sh", "-c", "echo hi"}},
		{"detached", []string{builtWick, "run", "--detach", "utils.echo", "--msg", "hi"}},
		{"attached", []string{builtWick, "run", "utils.echo", "--msg", "hi"}},
	}
	run := func(b *testing.B, argv []string) time.Duration {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = dir, env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return time.Since(start)
	}
	for _, c := range cmds { // warm the page cache and the state directory
		run(b, c.argv)
	}
	sum := make([]time.Duration, len(cmds))
	n := 0
	b.ResetTimer()
	for b.Loop() {
		for i := range cmds {
			k := (i + n) % len(cmds)
			sum[k] += run(b, cmds[k].argv)
		}
		n++
	}
	for i, c := range cmds {
		b.ReportMetric(float64(sum[i].Microseconds())/1000/float64(n), c.name+"-ms/op")
	}
	b.ReportMetric(float64(sum[2])/float64(sum[1]), "attached/detached")
	b.ReportMetric(testkit.Load(), "load")
}
