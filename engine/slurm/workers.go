package slurm

import (
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/ranks/watch"
	"github.com/wick-dev/wick/engine/sched"
)

// workersFile is the file where the wrapper of the replica whose exit file is exit
// records its workers' thread counts (see wrapper).
func workersFile(exit string) string { return strings.TrimSuffix(exit, ".exit") + ".watch" }

// watchWorkers tells node n what the wrapper of the replica whose exit file is exit
// saw of its workers (its .watch file, see watch.Parse). The wrapper stamps a sample's
// changes to the workers and to the log files' sizes (.times) with one time, so the
// samples are the stamps of both files. n's Failures are read first: the file is read
// knowing when the node's first traceback began.
func watchWorkers(n *ranks.NodeReport, exit string) {
	b, err := readBounded(workersFile(exit), watch.MaxFile)
	if err != nil || len(b) == 0 {
		return
	}
	var samples []time.Time
	if tb, err := readBounded(timesFile(exit), maxTimes); err == nil {
		for _, s := range parseTimes(tb, sched.Stdout) {
			samples = append(samples, s.Time)
		}
	}
	if w := watch.Parse(b, samples, n.Failures.FirstBegan()); w != nil {
		n.Workers = w
	}
}
