package metrics

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// formatCase is one line of a framework's file and what it means.
type formatCase struct {
	at   string // file:line
	rank int
	line string
	want string // "" for no value
	// known says why the extractor is known to read the line wrong: the report counts
	// it, and TestFormats fails once it is read right (remove the mark then).
	known string
}

// formatFile is the cases of one framework and what its run shows.
type formatFile struct {
	name   string
	cases  []formatCase
	shown  []string
	chart  string
	xs     map[string][]string // "NAME RANK" -> x of each point
	alarms int                 // -1: not said
	alarm  []string
}

// readFormats reads testdata/formats/*.txt (see its README).
func readFormats(t testing.TB) []formatFile {
	paths, err := filepath.Glob("testdata/formats/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no format files: %v", err)
	}
	var out []formatFile
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ff := formatFile{name: strings.TrimSuffix(filepath.Base(path), ".txt"), xs: map[string][]string{}, alarms: -1}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		rank, n := 0, 0
		for sc.Scan() {
			n++
			l := sc.Text()
			if l == "" || l[0] == '#' {
				continue
			}
			kw, rest, _ := strings.Cut(l, " ")
			at := fmt.Sprintf("%s:%d", path, n)
			switch kw {
			case "rank":
				rank, err = strconv.Atoi(rest)
			case "line":
				var s string
				s, err = strconv.Unquote(rest)
				ff.cases = append(ff.cases, formatCase{at: at, rank: rank, line: s})
			case "want":
				if len(ff.cases) == 0 || ff.cases[len(ff.cases)-1].want != "" {
					err = fmt.Errorf("want without its line")
					break
				}
				ff.cases[len(ff.cases)-1].want = strings.TrimSpace(rest) + "\x00"
			case "known":
				if len(ff.cases) == 0 {
					err = fmt.Errorf("known without its line")
					break
				}
				ff.cases[len(ff.cases)-1].known = rest
			case "shown":
				ff.shown = strings.Fields(rest)
			case "chart":
				ff.chart = rest
			case "x":
				fs := strings.Fields(rest)
				if len(fs) < 2 {
					err = fmt.Errorf("x NAME RANK ...")
					break
				}
				ff.xs[fs[0]+" "+fs[1]] = fs[2:]
			case "alarms":
				ff.alarms, err = strconv.Atoi(rest)
			case "alarm":
				var s string
				s, err = strconv.Unquote(rest)
				ff.alarm = append(ff.alarm, s)
			default:
				err = fmt.Errorf("unknown keyword %q", kw)
			}
			if err != nil {
				t.Fatalf("%s: %v", at, err)
			}
		}
		f.Close()
		for i, c := range ff.cases {
			if c.want == "" {
				t.Fatalf("%s: line without want", c.at)
			}
			ff.cases[i].want = strings.TrimSuffix(c.want, "\x00")
		}
		out = append(out, ff)
	}
	return out
}

// wantOf reads a want: its step and values.
type wantValue struct {
	name string
	v    float64
	unit string
}

func parseWant(t testing.TB, at, want string) (step string, vals []wantValue) {
	for _, f := range strings.Fields(want) {
		name, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("%s: %q is not name=value", at, f)
		}
		if name == "step" {
			step = v
			continue
		}
		num := v
		unit := ""
		if i := strings.IndexFunc(v, func(r rune) bool {
			return !strings.ContainsRune("0123456789.-+e", r)
		}); i >= 0 && !strings.EqualFold(v, "nan") && !strings.EqualFold(v, "inf") && v != "-inf" {
			num, unit = v[:i], v[i:]
		}
		x, err := strconv.ParseFloat(num, 64)
		if err != nil {
			t.Fatalf("%s: value %q: %v", at, v, err)
		}
		vals = append(vals, wantValue{name, x, unit})
	}
	return step, vals
}

// sameValue compares a value read with the one written by hand: the same float64 (NaN
// equal to NaN).
func sameValue(a, b float64) bool {
	return a == b || math.IsNaN(a) && math.IsNaN(b)
}

// checkCase says what went wrong with the i-th line of a file, "" when nothing: the
// line is read by st, the Store fed the file's lines before it (a summary line's
// values are in the context of the lines before it).
func checkCase(t testing.TB, st *Store, i int, c formatCase) (valueErr, stepErr string) {
	p := st.Add(sched.Line{Time: t0.Add(time.Duration(i) * time.Second), Role: "trainer", Replica: c.rank, Text: c.line})
	step, want := parseWant(t, c.at, c.want)
	switch {
	case step == "" && p.HasStep && p.Step != NoStep:
		stepErr = fmt.Sprintf("step %d, want none", p.Step)
	case step == "nostep" && !(p.HasStep && p.Step == NoStep):
		stepErr = fmt.Sprintf("step %d %v, want NoStep", p.Step, p.HasStep)
	case step != "" && step != "nostep" && (!p.HasStep || strconv.FormatInt(p.Step, 10) != step):
		stepErr = fmt.Sprintf("step %d %v, want %s", p.Step, p.HasStep, step)
	}
	var got []string
	ok := len(p.Samples) == len(want)
	for i, s := range p.Samples {
		got = append(got, s.Name+"="+FormatValue(s.Value)+s.Unit)
		if i < len(want) && (s.Name != want[i].name || !sameValue(s.Value, want[i].v) || s.Unit != want[i].unit) {
			ok = false
		}
	}
	if !ok {
		valueErr = fmt.Sprintf("values %s", strings.Join(got, " "))
	}
	return valueErr, stepErr
}

// formatStore feeds a file's lines to a Store, a second apart, replica by its rank.
func formatStore(ff formatFile) *Store {
	st := NewStore(DefaultConfig())
	for i, c := range ff.cases {
		st.Add(sched.Line{Time: t0.Add(time.Duration(i) * time.Second), Role: "trainer", Replica: c.rank, Text: c.line})
	}
	return st
}

// xsOf renders the x of each point of a series: its step or -.
func xsOf(st *Store, name string, rank int) []string {
	for _, s := range st.Series(name) {
		if s.Rank.Replica != rank {
			continue
		}
		var xs []string
		for _, p := range s.Points() {
			if p.Step < 0 {
				xs = append(xs, "-")
			} else {
				xs = append(xs, strconv.FormatInt(p.Step, 10))
			}
		}
		return xs
	}
	return nil
}

// TestFormats checks every line of every framework's file against what it means, and
// what a Store fed the whole file shows: the metrics (no setting among them), the
// chart's metric, the x of the points, and the alarms.
func TestFormats(t *testing.T) {
	for _, ff := range readFormats(t) {
		t.Run(ff.name, func(t *testing.T) {
			cs := NewStore(DefaultConfig())
			for i, c := range ff.cases {
				v, s := checkCase(t, cs, i, c)
				switch {
				case c.known != "" && v == "" && s == "":
					t.Errorf("%s: %q is read right now: remove its known mark (%s)", c.at, c.line, c.known)
				case c.known == "" && (v != "" || s != ""):
					t.Errorf("%s: %q\n  %s %s\n  want %s", c.at, c.line, v, s, c.want)
				}
			}
			st := formatStore(ff)
			if ff.shown != nil && !slices.Equal(st.Names(), ff.shown) {
				t.Errorf("shown %v\n  want %v (settings %v)", st.Names(), ff.shown, st.Settings())
			}
			if ff.chart != "" {
				if got := Headline(st); got != ff.chart {
					t.Errorf("chart shows %q first, want %q", got, ff.chart)
				}
			}
			for k, want := range ff.xs {
				name, rank, _ := strings.Cut(k, " ")
				r, _ := strconv.Atoi(rank)
				if got := xsOf(st, name, r); !slices.Equal(got, want) {
					t.Errorf("x of %s on %s: %v, want %v", name, rank, got, want)
				}
			}
			if ff.alarms >= 0 && len(st.Alarms()) != ff.alarms {
				t.Errorf("%d alarms, want %d:\n%s", len(st.Alarms()), ff.alarms, alarms(st))
			}
			for _, a := range ff.alarm {
				if !strings.Contains(alarms(st), a) {
					t.Errorf("no alarm %q among:\n%s", a, alarms(st))
				}
			}
		})
	}
}

// TestFormatsReport prints the accuracy table of the corpus, per framework: the README's
// metrics section shows it (make metrics-report).
func TestFormatsReport(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %6s %7s %6s %9s %6s %6s\n", "FRAMEWORK", "LINES", "VALUES", "STEPS", "SETTINGS", "FALSE", "NAN")
	fmt.Fprintf(&b, "%-18s %6s %7s %6s %9s %6s %6s\n", "", "", "right", "right", "as metric", "alarm", "alarmed")
	var tl, tv, ts, tset, tfa, tnan, tnanWant int
	for _, ff := range readFormats(t) {
		lines, valsOK, stepsOK := 0, 0, 0
		nanWant := 0
		cs := NewStore(DefaultConfig())
		for i, c := range ff.cases {
			lines++
			v, s := checkCase(t, cs, i, c)
			if v == "" {
				valsOK++
			}
			if s == "" {
				stepsOK++
			}
			if strings.Contains(c.want, "=NaN") || strings.Contains(c.want, "=inf") || strings.Contains(c.want, "=-inf") {
				nanWant++
			}
		}
		st := formatStore(ff)
		settings := 0
		for _, n := range st.Names() {
			if ff.shown != nil && !slices.Contains(ff.shown, n) {
				settings++
			}
		}
		falseAlarms, nanAlarms := 0, 0
		for _, a := range st.Alarms() {
			if a.Kind == AlarmNaN || a.Kind == AlarmInf {
				nanAlarms++
			} else {
				falseAlarms++
			}
		}
		fmt.Fprintf(&b, "%-18s %6d %3d/%-3d %2d/%-3d %9d %6d %3d/%-2d\n", ff.name, lines, valsOK, lines, stepsOK, lines, settings, falseAlarms, min(nanAlarms, nanWant), nanWant)
		tl, tv, ts, tset, tfa, tnan, tnanWant = tl+lines, tv+valsOK, ts+stepsOK, tset+settings, tfa+falseAlarms, tnan+min(nanAlarms, nanWant), tnanWant+nanWant
	}
	fmt.Fprintf(&b, "%-18s %6d %3d/%-3d %2d/%-3d %9d %6d %3d/%-2d\n", "all", tl, tv, tl, ts, tl, tset, tfa, tnan, tnanWant)
	if os.Getenv("WICK_METRICS_REPORT") != "" {
		fmt.Print(b.String()) // make metrics-report
		return
	}
	t.Logf("accuracy on testdata/formats (lines whose values, steps are right; settings shown as metrics; alarms):\n%s", b.String())
}
