package slurm

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
)

// maxWorkersFile bounds what is read of a replica's .watch file: a line per change
// of a worker's thread count, a few KB for a run.
const maxWorkersFile = 4 << 20

// workersFile is the file where the wrapper of the replica whose exit file is exit
// records its workers' thread counts (see wrapper).
func workersFile(exit string) string { return strings.TrimSuffix(exit, ".exit") + ".watch" }

// watchWorkers tells node n what the wrapper of the replica whose exit file is exit
// saw of its workers (its .watch file, "UNIX_MS PID RANK THREADS" lines, 0 once
// gone): each worker's global rank, when its thread count began to fall for good
// while it ran and when it last fell, and when it was gone, each with the sample
// before it. The wrapper stamps a sample's changes to the workers and to the log
// files' sizes (.times) with one time, so the samples are the stamps of both files.
func watchWorkers(n *ranks.NodeReport, exit string) {
	b, err := readBounded(workersFile(exit), maxWorkersFile)
	if err != nil || len(b) == 0 {
		return
	}
	type change struct {
		t             time.Time
		pid, rank, th int
	}
	var changes []change
	var stamps []time.Time
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		ms, err1 := strconv.ParseInt(f[0], 10, 64)
		pid, err2 := strconv.Atoi(f[1])
		rank, err3 := strconv.Atoi(f[2])
		th, err4 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || pid <= 0 || rank < 0 || th < 0 {
			continue
		}
		t := time.UnixMilli(ms)
		changes = append(changes, change{t, pid, rank, th})
		stamps = append(stamps, t)
	}
	if len(changes) == 0 {
		return
	}
	if tb, err := readBounded(timesFile(exit), maxTimes); err == nil {
		for _, s := range parseTimes(tb, sched.Stdout) {
			stamps = append(stamps, s.Time)
		}
	}
	slices.SortFunc(stamps, func(a, b time.Time) int { return a.Compare(b) })
	stamps = slices.CompactFunc(stamps, func(a, b time.Time) bool { return a.Equal(b) })
	// prev is the sample before the one at t (zero when none is known).
	prev := func(t time.Time) time.Time {
		i, _ := slices.BinarySearchFunc(stamps, t, func(a, b time.Time) int { return a.Compare(b) })
		if i == 0 {
			return time.Time{}
		}
		return stamps[i-1]
	}
	workers := map[int]ranks.Watched{}
	last := map[int]int{}
	for _, c := range changes {
		w := workers[c.pid]
		w.Rank = c.rank
		before, seen := last[c.pid]
		last[c.pid] = c.th
		switch {
		case c.th == 0:
			w.GonePrev, w.Gone = prev(c.t), c.t
		case !seen:
		case c.th > before:
			w.DownPrev, w.Down, w.Settled = time.Time{}, time.Time{}, time.Time{}
		case c.th < before:
			if w.Down.IsZero() {
				w.DownPrev, w.Down = prev(c.t), c.t
			}
			w.Settled = c.t
		}
		workers[c.pid] = w
	}
	n.Workers = workers
}
