// Package sweep is wick's grid of runs on one machine: a sweep is a group of apps, one
// per point of the cartesian product of the values given to `wick run --sweep`, with a
// local queue that runs at most K of them at once (and gives each its own GPUs when
// the machine has some).
//
// A sweep lives on disk, under $WICK_HOME/sweeps/<id>/:
//
//	sweep.json   the sweep: its names, its apps (values, handle, state in the queue), as
//	             of its last compaction (its generation, Gen)
//	journal      the changes since: one line per change, appended (see journal.go)
//	plans.jsonl  what each app is launched from (AppDef, run options), a line each
//	lock         flock'ed around every change (the queue, cancel, delete)
//	queue.log    the queue process's own messages, and the journal's notes
//
// The queue is a detached process (wick re-executed as `wick __sweep DIR`, in its own
// session, as the per-app supervisor is), so a sweep goes on after its launcher is
// gone (kill -9 included). It launches each app through the Runner, like `wick run
// --detach` would, and waits for apps to end to start the next. Apps it has launched
// are ordinary apps of their scheduler; the sweep only remembers their handles. Apps
// not launched yet are listed by the Runner from the sweep, as QUEUED.
package sweep

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// MaxApps bounds a grid: beyond it a typo (a value list pasted twice) is likelier than
// a plan, and every app is a process and a directory.
const MaxApps = 10_000

// Param is one swept name and its values, as `--sweep NAME=V1,V2` gives them.
type Param struct {
	Name   string
	Values []string
}

// ErrBadSweep is wrapped by every error about --sweep's input.
var ErrBadSweep = errors.New("bad --sweep")

// nameRE is a swept name: a component parameter or a script flag (--lr, --batch-size).
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`) })

// ParseParam reads one --sweep value: NAME=V1,V2,..., where a value may be a range of
// numbers A..B[:STEP] (1..4 is 1,2,3,4; 0.1..0.3:0.1 is 0.1,0.2,0.3). A leading "--"
// on NAME is dropped, so --sweep --lr=... reads as lr.
func ParseParam(s string) (Param, error) {
	name, vals, ok := strings.Cut(s, "=")
	name = strings.TrimLeft(strings.TrimSpace(name), "-")
	if !ok || name == "" {
		return Param{}, fmt.Errorf("%w %q: want NAME=V1,V2,... (e.g. --sweep lr=0.1,0.01)", ErrBadSweep, cut(s))
	}
	if !nameRE().MatchString(name) {
		return Param{}, fmt.Errorf("%w %q: %q is not a parameter name", ErrBadSweep, cut(s), cut(name))
	}
	p := Param{Name: name}
	seen := map[string]bool{}
	for _, item := range strings.Split(vals, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return Param{}, fmt.Errorf("%w %s: empty value in %q (want NAME=V1,V2,...)", ErrBadSweep, name, cut(vals))
		}
		vs, err := expandRange(item)
		if err != nil {
			return Param{}, fmt.Errorf("%w %s: %v", ErrBadSweep, name, err)
		}
		for _, v := range vs {
			if seen[v] {
				return Param{}, fmt.Errorf("%w %s: value %q is given twice", ErrBadSweep, name, cut(v))
			}
			seen[v] = true
			p.Values = append(p.Values, v)
		}
		if len(p.Values) > MaxApps {
			return Param{}, fmt.Errorf("%w %s: more than %d values", ErrBadSweep, name, MaxApps)
		}
	}
	return p, nil
}

// rangeRE is a range of numbers: A..B, or A..B:STEP (a step is needed for decimals).
var rangeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(-?[0-9]+(?:\.[0-9]+)?)\.\.(-?[0-9]+(?:\.[0-9]+)?)(?::([0-9]+(?:\.[0-9]+)?))?$`)
})

// expandRange reads one item of a value list: a range A..B[:STEP] gives every number
// from A to B (B included when the steps land on it), STEP apart (1 for integers),
// written with as many decimals as A and STEP have; anything else is itself.
func expandRange(item string) ([]string, error) {
	m := rangeRE().FindStringSubmatch(item)
	if m == nil {
		return []string{item}, nil
	}
	decimals := func(s string) int {
		if i := strings.IndexByte(s, '.'); i >= 0 {
			return len(s) - i - 1
		}
		return 0
	}
	step := m[3]
	if step == "" {
		if decimals(m[1]) > 0 || decimals(m[2]) > 0 {
			return nil, fmt.Errorf("range %q: a range of decimals needs a step (A..B:STEP, e.g. 0.1..0.5:0.1)", cut(item))
		}
		step = "1"
	}
	a, _ := strconv.ParseFloat(m[1], 64)
	b, _ := strconv.ParseFloat(m[2], 64)
	d, _ := strconv.ParseFloat(step, 64)
	switch {
	case d <= 0:
		return nil, fmt.Errorf("range %q: the step must be above 0", cut(item))
	case a > b:
		return nil, fmt.Errorf("range %q: %s is above %s", cut(item), m[1], m[2])
	}
	n := math.Floor((b-a)/d+1e-9) + 1
	if n > MaxApps {
		return nil, fmt.Errorf("range %q has more than %d values", cut(item), MaxApps)
	}
	prec := max(decimals(m[1]), decimals(step))
	out := make([]string, 0, int(n))
	for i := range int(n) {
		out = append(out, strconv.FormatFloat(a+float64(i)*d, 'f', prec, 64))
	}
	return out, nil
}

// ParseParams reads every --sweep value and checks the grid: no name twice, at most
// MaxApps points.
func ParseParams(specs []string) ([]Param, error) {
	var ps []Param
	seen := map[string]bool{}
	n := 1
	for _, s := range specs {
		p, err := ParseParam(s)
		if err != nil {
			return nil, err
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("%w: %s is swept twice (give all its values in one --sweep %s=V1,V2,...)", ErrBadSweep, p.Name, p.Name)
		}
		seen[p.Name] = true
		n *= len(p.Values)
		if n > MaxApps {
			return nil, fmt.Errorf("%w: the grid has more than %d apps (%s)", ErrBadSweep, MaxApps, sizes(append(ps, p)))
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func sizes(ps []Param) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s: %d", p.Name, len(p.Values))
	}
	return strings.Join(parts, " x ")
}

// Grid returns every point of the cartesian product of ps, the last name varying
// fastest: each point holds one value per param, in ps's order.
func Grid(ps []Param) [][]string {
	if len(ps) == 0 {
		return nil
	}
	n := 1
	for _, p := range ps {
		n *= len(p.Values)
	}
	out := make([][]string, n)
	for i := range out {
		pt := make([]string, len(ps))
		k := i
		for j := len(ps) - 1; j >= 0; j-- {
			vs := ps[j].Values
			pt[j] = vs[k%len(vs)]
			k /= len(vs)
		}
		out[i] = pt
	}
	return out
}

// AppName is the name of the app of one point: the component's app name followed by
// each name and value (demo-train-rate10-steps50), made safe for an app name.
func AppName(base string, ps []Param, point []string) string {
	var b strings.Builder
	b.WriteString(base)
	for i, p := range ps {
		b.WriteByte('-')
		b.WriteString(safe(p.Name))
		b.WriteString(safe(point[i]))
	}
	s := b.String()
	if len(s) > maxAppName {
		s = s[:maxAppName]
	}
	return s
}

// maxAppName keeps a sweep app's name under spec's 128-byte limit.
const maxAppName = 100

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_':
			return r
		}
		return '_'
	}, s)
}

func cut(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
