// Package watch watches the workers of a torchrun node from where the node runs (a
// Slurm step, a Docker container), so that the root cause can tell which worker wrote
// which unprefixed traceback (ranks.NodeReport.Workers): a Python worker that raised
// begins to end (its threads go) before the peers that fail of it, and may exit after
// them.
//
// The sampler is POSIX shell (Funcs), run by Slurm's replica wrapper and, on
// local_docker, by a wrapper of the container's command (Wrap, Sampler): it finds the
// node's agent (the process whose children have GROUP_RANK in their environment) and
// its workers (the agent's children with RANK), samples their thread counts, and
// appends to a file a line "UNIX_MS PID RANK THREADS" for each worker whose count
// changed, 0 once it is gone. One sample's changes share one stamp, later than the sample before: what one
// sample saw has no order. Parse reads the file back.
package watch

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
)

// MaxFile bounds what is read of a watch file: a line per change of a worker's thread
// count, a few KB for a run.
const MaxFile = 4 << 20

// Funcs are the sampler's shell functions. They use the variables w (the files' path
// without their suffix: "$w.watch", "$w.rank"), q (the group rank last recorded), a
// (the agent's pid), ws (the workers watched, "PID:RANK:THREADS" words), h (the
// changes of the last sample, the same words) and l (the last stamp):
//
//   - C PID sets cs to PID's children (read by the shell: no process is started).
//   - e PID NAME prints the number NAME is set to in PID's environment.
//   - g PID finds the agent among PID's descendants, sets a, and records the workers'
//     group rank in "$w.rank" when it changed; false when none was found.
//   - k adds the agent's children with RANK in their environment to ws.
//   - u samples ws: the workers whose thread count changed go to h, those gone leave
//     ws.
//   - z sets T to a new stamp, in ms, later than the last one.
//   - o appends h's changes to "$w.watch", stamped T.
//
// They need tr, sed and a date that prints %3N.
const Funcs = `C() { cs=; for f in /proc/$1/task/*/children; do x=; [ -r "$f" ] && read -r x 2>/dev/null <"$f"; cs="$cs $x"; done; }
e() { { tr '\0' '\n' <"/proc/$1/environ"; } 2>/dev/null | sed -n "s/^$2=\([0-9]*\)$/\1/p"; }
g() { C "$1"; for c in $cs; do v=$(e "$c" GROUP_RANK); if [ -n "$v" ]; then a=$1; [ "$v" = "$q" ] || { echo "$v" >"$w.rank"; q=$v; }; return 0; fi; g "$c" && return 0; done; return 1; }
k() { C "$a"; for c in $cs; do case " $ws " in *" $c:"*) continue;; esac; v=$(e "$c" RANK); [ -z "$v" ] || ws="$ws $c:$v:-1"; done; }
u() { o=; for x in $ws; do y=${x#*:}; z=${y#*:}; y=${y%%:*}; x=${x%%:*}; set -- /proc/$x/task/*; j=$#; [ -e "$1" ] || j=0; [ "$j" = "$z" ] || h="$h $x:$y:$j"; [ "$j" = 0 ] || o="$o $x:$y:$j"; done; ws=$o; }
z() { T=$(date +%s%3N); [ "$T" -gt "$l" ] || T=$((l+1)); l=$T; }
o() { for x in $h; do y=${x#*:}; echo "$T ${x%%:*} ${y%%:*} ${y#*:}"; done >>"$w.watch"; }
`

// Rotate is how many lines the Docker sampler writes to "$w.watch" before it moves
// the file to "$w.watch.1" (replacing the one before) and starts a new one: a node
// whose workers start and end threads all along (a thread pool that churns) writes a
// line per sample, and the files stay under 2*Rotate lines (about 2 MB) for as long as
// it runs. Parse reads the moved file, then the current one.
const Rotate = 30000

// Sampler is the script of the sampler that Wrap starts in a Docker container whose
// command is a torchrun node, before the node's command: it writes "DIR/workers.watch"
// (and .rank), sampling the workers every 100 ms. It looks for the agent below the
// process its first argument names (the node's command; the container's first
// process when none is named) at every sample for its first 100 samples, so that the
// workers of an agent that starts them at once and that fail in their first second
// are seen, then every 0.5 s until found (a container's agent is its command's
// torchrun, for as long as it runs; a rendezvous may hold its workers back for
// minutes); once found, the agent's new workers at every sample for 10 samples (the
// agent starts its workers one by one), then every 0.5 s (torchrun restarts them in
// place). It runs until the container's processes end (the kernel ends them with its
// first process), or the process it looks below has ended. It exits at once where date cannot print milliseconds (a stamp
// that is not one would order nothing).
func Sampler(dir string) string {
	return `w=` + shellQuote(dir+"/workers") + `; r=${1:-1}; q=; a=; ws=; l=0; i=0; b=0; n=0
case $(date +%s%3N) in *[!0-9]*|'') exit 0;; esac
` + Funcs + pause + `while :; do h=; [ -z "$ws" ] || u
if [ -n "$h" ]; then z; o; set -- $h; n=$((n+$#)); if [ "$n" -ge ` + strconv.Itoa(Rotate) + ` ]; then mv -f "$w.watch" "$w.watch.1"; n=0; fi; fi
if [ -z "$a" ]; then if [ "$i" -lt 100 ] || [ $((i % 5)) = 0 ]; then g "$r" && { k; b=$i; }; fi
elif [ $((i - b)) -le 10 ] || [ $((i % 5)) = 0 ]; then k; fi
[ -e "/proc/$r" ] || exit 0; i=$((i+1)); P; done`
}

// wrapName is the wrapper's $0 (its shell names itself so in an error: an image
// whose /bin/sh cannot exec the node's command says "wick-watch: exec: torchrun: not
// found").
const wrapName = "wick-watch"

// Wrap is argv (a torchrun node's command in a Docker container) run by a shell that
// first starts Sampler(dir) in the background, in bash where there is one (see
// pause), else in sh, and then execs argv: argv is the process the container's init
// runs, with its signals, its environment and its exit status, as without the
// wrapper, and the sampler watches from before the agent starts. The sampler is a
// grandchild the shell leaves behind (its parent exits at once), so it is the init's
// child, not one argv's program finds among its own; its input and output are
// /dev/null. It starts on the container's first run only: a container the Engine
// restarts (max_retries) finds "DIR/workers.start" there (its error volume outlives
// its runs), and its new workers, whose pids may be the run before's, are not mixed
// into the file of the run whose tracebacks come first. The shell unsets the
// variables named in unset before the exec: those it sets itself (dash exports PWD,
// bash SHLVL) that the container's environment does not have.
func Wrap(dir string, unset []string, argv []string) []string {
	script := wrapHead(dir)
	if len(unset) > 0 {
		script += "unset " + strings.Join(unset, " ") + "; "
	}
	return append([]string{"/bin/sh", "-c", script + `exec "$@"`, wrapName, Sampler(dir)}, argv...)
}

// wrapHead is the wrapper's script up to its exec.
func wrapHead(dir string) string {
	return `s=$1; shift; set -C
if { true >` + shellQuote(dir+"/workers.start") + `; } 2>/dev/null; then p=$$; (exec </dev/null >/dev/null 2>&1; (if [ -x /bin/bash ]; then exec /bin/bash -c "$s" ` + wrapName + ` "$p"; fi; exec /bin/sh -c "$s" ` + wrapName + ` "$p") &); fi
set +C; `
}

// Unwrap is the command that Wrap(dir, ...) wrapped, and true; argv itself and false
// when argv is no such wrapper.
func Unwrap(dir string, argv []string) ([]string, bool) {
	if len(argv) < 6 || argv[0] != "/bin/sh" || argv[1] != "-c" || argv[3] != wrapName || argv[4] != Sampler(dir) ||
		!strings.HasPrefix(argv[2], wrapHead(dir)) || !strings.HasSuffix(argv[2], `exec "$@"`) {
		return argv, false
	}
	return argv[5:], true
}

// pause is the sampler's wait between samples, P: where bash runs it, a read that
// times out on a pipe that never has data (no process started, where a sleep is one
// every sample), else sleep.
const pause = `if [ -n "$BASH_VERSION" ] && eval 'exec 9<> <(:)' 2>/dev/null; then P() { read -r -t 0.1 -u 9; }; else P() { sleep 0.1; }; fi
`

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Parse reads what a sampler wrote (the lines of its watch files, oldest first) into
// the node's workers by pid: each worker's global rank, when its thread count began
// to fall for good while it ran and when it last fell, when it first fell from first
// on (a fall a later rise undid included; see ranks.Watched.Fell), and when it was
// gone, each with the sample before it. first is when the node's first worker
// traceback began (ranks.Failures.FirstBegan); zero when not known, and then every
// fall counts. samples are the stamps of other samples of the same sampler (Slurm's
// wrapper stamps the log files' sizes with the same times), which make the sample
// before a change known closer; nil when there are none. Nil when the file says
// nothing.
func Parse(b []byte, samples []time.Time, first time.Time) map[int]ranks.Watched {
	var changes []change
	stamps := slices.Clone(samples)
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if c, ok := parseLine(line); ok {
			changes = append(changes, c)
			stamps = append(stamps, c.t)
		}
	}
	if len(changes) == 0 {
		return nil
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
		if seen {
			apply(&w, c, before, first, prev)
		} else if c.th == 0 {
			w.GonePrev, w.Gone = prev(c.t), c.t
		}
		workers[c.pid] = w
	}
	return workers
}

// change is one line of a sampler's file: a worker's thread count at a sample, 0 once
// it is gone.
type change struct {
	t             time.Time
	pid, rank, th int
}

// parseLine reads one line "UNIX_MS PID RANK THREADS"; false when it is not one.
func parseLine(line []byte) (change, bool) {
	f := strings.Fields(string(line))
	if len(f) != 4 {
		return change{}, false
	}
	ms, err1 := strconv.ParseInt(f[0], 10, 64)
	pid, err2 := strconv.Atoi(f[1])
	rank, err3 := strconv.Atoi(f[2])
	th, err4 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || pid <= 0 || rank < 0 || th < 0 {
		return change{}, false
	}
	return change{time.UnixMilli(ms), pid, rank, th}, true
}

// apply tells w of c, a change of its thread count from before. A change seen from
// first on finds the fall in progress then (Down, no rise since), if any, as Fell;
// else Fell is the first fall from then on. A rise forgets the fall in progress
// (Down), not Fell.
func apply(w *ranks.Watched, c change, before int, first time.Time, prev func(time.Time) time.Time) {
	if w.Fell.IsZero() && !c.t.Before(first) && !w.Down.IsZero() {
		w.FellPrev, w.Fell = w.DownPrev, w.Down
	}
	switch {
	case c.th == 0:
		w.GonePrev, w.Gone = prev(c.t), c.t
	case c.th > before:
		w.DownPrev, w.Down, w.Settled = time.Time{}, time.Time{}, time.Time{}
	case c.th < before:
		if w.Down.IsZero() {
			w.DownPrev, w.Down = prev(c.t), c.t
		}
		if w.Fell.IsZero() && !c.t.Before(first) {
			w.FellPrev, w.Fell = w.DownPrev, w.Down
		}
		w.Settled = c.t
	}
}
