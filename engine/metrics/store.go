package metrics

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/wick-dev/wick/engine/sched"
)

// Memory bounds of a Store. A point is 24 bytes, so a series holds at most 96 KiB and a
// store at most 48 MiB, whatever the logs say; ten metrics of eight ranks take 7.5 MiB.
const (
	// MaxPoints is the most points a series keeps. When it is full, neighbouring
	// points are averaged in pairs and later points are averaged in groups of the
	// same size, so the series keeps covering the whole run at a coarser grain. A
	// chart draws at most one point per cell, and terminals are narrower than this.
	MaxPoints = 4096
	// MaxSeries is the most series (metric x rank) a store keeps; values of further
	// series are counted in Dropped.
	MaxSeries = 512
	// MaxAlarms is the most alarms a store keeps. Each kind is raised once per metric
	// and rank anyway.
	MaxAlarms = 64
	// divergenceRows is how many recent steps wait for every rank's value before they
	// are compared with the ranks that reported.
	divergenceRows = 64
)

// Rank names where a series comes from: a replica of a role and, for torchrun's
// workers, the local rank of its `[N]:` prefix (-1 when lines have none).
type Rank struct {
	Role    string `json:"role"`
	Replica int    `json:"replica"`
	Local   int    `json:"local"`
}

// String is role/replica, with :local for torchrun's workers.
func (r Rank) String() string {
	s := r.Role + "/" + strconv.Itoa(r.Replica)
	if r.Local >= 0 {
		s += ":" + strconv.Itoa(r.Local)
	}
	return s
}

func compareRanks(a, b Rank) int {
	return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.Replica, b.Replica), cmp.Compare(a.Local, b.Local))
}

// Point is one value of a series: at a step (-1 when no step was named yet) and the time
// its line was read (unix nanoseconds).
type Point struct {
	Step  int64
	Time  int64
	Value float64
}

// At returns the point's time.
func (p Point) At() time.Time { return time.Unix(0, p.Time) }

// Series is the values of one metric on one rank: exact statistics over every value,
// and the points themselves downsampled to at most MaxPoints.
type Series struct {
	Name string
	Rank Rank
	// Unit is the unit its line wrote against the first value (ms, GiB, %), or "".
	Unit string
	// Count is the number of values seen; First and Last the first and last of them.
	Count       int64
	First, Last Point
	// Min and Max are over the finite values (NaN when there were none).
	Min, Max float64
	// Best is the point with the lowest value for losses and the highest otherwise
	// (see LowerIsBetter), over finite values.
	Best Point

	firstSeq, lastSeq int64 // the store's order of arrival, to order values read at one time
	// preamble is whether every value came before its rank's training started (a
	// configuration printed once, a model's repr): context, not a series (IsSetting).
	preamble      bool
	epochly       bool  // created by an epoch's summary (see addParsed)
	finite        int64 // values that were finite
	lowerIsBetter bool
	prev          float64 // the value before Last, when hasPrev
	hasPrev       bool
	div           *divergence // checked for divergence: the metric's, else nil
	noPoints      bool        // statistics only (see NewAlarmStore)
	countsNaN     bool        // countsNaN(Name), asked once and not for every point

	points []Point
	stride int   // values averaged into each point after downsampling
	acc    Point // the group being averaged: sum in Value
	accN   int
	// maxPoints is the most points it keeps: MaxPoints, or a power-of-two fraction
	// of it under a store's point budget (Store.SetPointBudget).
	maxPoints int
}

func newSeries(name string, r Rank) *Series {
	return &Series{Name: name, Rank: r, Min: math.NaN(), Max: math.NaN(), stride: 1, Best: Point{Value: math.NaN()}, lowerIsBetter: LowerIsBetter(name), countsNaN: countsNaN(name), maxPoints: MaxPoints}
}

// LowerIsBetter reports whether a metric improves downwards: losses, errors,
// perplexity, times.
func LowerIsBetter(name string) bool {
	for _, w := range []string{"loss", "err", "ppl", "perplexity", "time", "latency", "wer", "cer", "xent", "nll"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

func (s *Series) add(p Point, seq int64) {
	if s.Count == 0 {
		s.First, s.firstSeq = p, seq
	} else {
		s.prev, s.hasPrev = s.Last.Value, true
	}
	s.Count++
	s.Last, s.lastSeq = p, seq
	if !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0) {
		s.finite++
		if math.IsNaN(s.Min) || p.Value < s.Min {
			s.Min = p.Value
		}
		if math.IsNaN(s.Max) || p.Value > s.Max {
			s.Max = p.Value
		}
		lower := s.lowerIsBetter
		if math.IsNaN(s.Best.Value) || lower && p.Value < s.Best.Value || !lower && p.Value > s.Best.Value {
			s.Best = p
		}
	}
	if s.noPoints {
		return
	}
	if s.stride == 1 {
		s.push(p)
		return
	}
	s.accN++
	s.acc.Value = meanStep(s.acc.Value, p.Value, s.accN)
	s.acc.Step, s.acc.Time = p.Step, p.Time
	if s.accN == s.stride {
		s.push(s.acc)
		s.acc, s.accN = Point{}, 0
	}
}

// meanStep is the mean of n values from the mean m of the first n-1 and the n-th
// value v, without forming their sum: a sum of large finite values overflows to Inf,
// and a chart must never draw a finite series as Inf.
func meanStep(m, v float64, n int) float64 {
	if n == 1 {
		return v
	}
	r := m + (v/float64(n) - m/float64(n))
	if math.IsInf(r, 0) && !math.IsInf(m, 0) && !math.IsInf(v, 0) {
		return max(min(m, v), min(max(m, v), r)) // rounding at the edge of the range
	}
	return r
}

// push appends a point, halving the points (pairs averaged) when they are full.
func (s *Series) push(p Point) {
	if len(s.points) >= s.maxPoints {
		s.halve()
	}
	s.points = append(s.points, p)
}

// halve averages the points in pairs and doubles the stride. An odd point left at
// the end (a group of stride values) becomes the start of the group being averaged,
// with the values already in it.
func (s *Series) halve() {
	n := len(s.points)
	for i := 0; i < n/2; i++ {
		a, b := s.points[2*i], s.points[2*i+1]
		s.points[i] = Point{Step: b.Step, Time: b.Time, Value: meanStep(a.Value, b.Value, 2)}
	}
	if n%2 == 1 {
		odd := s.points[n-1]
		all := s.stride + s.accN
		v := odd.Value
		if s.accN > 0 {
			// The mean of the two groups weighted by their sizes, without their sum.
			v = odd.Value*(float64(s.stride)/float64(all)) + s.acc.Value*(float64(s.accN)/float64(all))
			odd.Step, odd.Time = s.acc.Step, s.acc.Time
		}
		s.acc, s.accN = Point{Step: odd.Step, Time: odd.Time, Value: v}, all
	}
	s.points = s.points[:n/2]
	s.stride *= 2
}

// shrink keeps at most limit points (a power-of-two fraction of MaxPoints), halving
// them as often as it takes, in a slice of its own size: the memory is given back.
func (s *Series) shrink(limit int) {
	s.maxPoints = limit
	if len(s.points) <= limit {
		return
	}
	for len(s.points) > limit {
		s.halve()
	}
	s.points = append(make([]Point, 0, limit), s.points...)
}

// Points returns the kept points in order, the last value included even when it is
// still being averaged into a group. The slice is the series' own: read it before the
// next Add.
func (s *Series) Points() []Point {
	if s.accN == 0 {
		return s.points
	}
	return append(s.points[:len(s.points):len(s.points)], s.Last)
}

// AlarmKind says what an alarm is about.
type AlarmKind string

// The alarms.
const (
	AlarmNaN      AlarmKind = "nan"
	AlarmInf      AlarmKind = "inf"
	AlarmDiverged AlarmKind = "diverged"
	// AlarmDisagree is two ranks, with no third to say which is off, whose values at
	// one step differ by more than the set factor.
	AlarmDisagree AlarmKind = "disagree"
)

// Alarm is something wrong seen in the numbers: a NaN or Inf value, or a rank whose
// value departs from the median of the other ranks' by more than the set factor.
type Alarm struct {
	Kind   AlarmKind
	Metric string
	Rank   Rank
	// Step is where it happened (-1: no step named); Time when its line was read.
	Step  int64
	Time  time.Time
	Value float64
	// Others is the median of the other ranks' values (for AlarmDiverged), or the
	// other rank's value (for AlarmDisagree).
	Others float64
	// Peer is the other rank of AlarmDisagree, and of an AlarmDiverged between two
	// ranks (the one that kept to its history); Own is then how far the alarm's rank
	// went from its own last value (a factor).
	Peer Rank
	Own  float64
}

// MarshalJSON writes the alarm with its rank as role/replica[:local], a null step when
// there is none, non-finite values as strings, and its message.
func (a Alarm) MarshalJSON() ([]byte, error) {
	b := []byte(`{"kind":`)
	b = strconv.AppendQuote(b, string(a.Kind))
	b = append(b, `,"metric":`...)
	b = AppendJSONString(b, a.Metric)
	b = append(b, `,"rank":`...)
	b = AppendJSONString(b, a.Rank.String())
	b = append(b, `,"step":`...)
	if a.Step >= 0 {
		b = strconv.AppendInt(b, a.Step, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"time":"`...)
	b = a.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","value":`...)
	b = AppendJSONValue(b, a.Value)
	if a.Kind == AlarmDiverged || a.Kind == AlarmDisagree {
		b = append(b, `,"others":`...)
		b = AppendJSONValue(b, a.Others)
	}
	if a.Kind == AlarmDisagree || a.Peer.Role != "" {
		b = append(b, `,"peer":`...)
		b = AppendJSONString(b, a.Peer.String())
	}
	b = append(b, `,"message":`...)
	b = AppendJSONString(b, a.String())
	return append(b, '}'), nil
}

// String says what happened, where, in one line.
func (a Alarm) String() string { return a.DescribeWith(Rank.String) }

// Describe is String with the alarm's rank named as the caller names it ("rank 3").
func (a Alarm) Describe(rank string) string {
	return a.DescribeWith(func(r Rank) string {
		if r == a.Rank {
			return rank
		}
		return r.String()
	})
}

// DescribeWith is String with every rank named by name.
func (a Alarm) DescribeWith(name func(Rank) string) string {
	rank := name(a.Rank)
	at := "at " + a.Time.Local().Format(time.TimeOnly)
	if a.Step >= 0 {
		at = "at step " + strconv.FormatInt(a.Step, 10)
	}
	switch a.Kind {
	case AlarmDiverged:
		if a.Peer.Role != "" {
			return fmt.Sprintf("%s on %s is %s, %.3gx its own last value, while %s's is %s %s", a.Metric, rank, FormatValue(a.Value), a.Own, name(a.Peer), FormatValue(a.Others), at)
		}
		return fmt.Sprintf("%s on %s is %s, the other ranks' %s (%.3gx) %s", a.Metric, rank, FormatValue(a.Value), FormatValue(a.Others), ratio(a.Value, a.Others), at)
	case AlarmDisagree:
		return fmt.Sprintf("%s on %s and %s disagree: %s and %s (%.3gx) %s", a.Metric, rank, name(a.Peer), FormatValue(a.Value), FormatValue(a.Others), ratio(a.Value, a.Others), at)
	default:
		return fmt.Sprintf("%s on %s is %s %s", a.Metric, rank, FormatValue(a.Value), at)
	}
}

func ratio(a, b float64) float64 { return max(a/b, b/a) }

// FormatValue writes a value as tables and CSV show it: the shortest decimal that reads
// back the same, NaN, inf or -inf.
func FormatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// AppendValue appends a value as FormatValue writes it.
func AppendValue(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, FormatValue(v)...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// AppendJSONValue appends a value as JSON: a number, or the string "NaN", "inf" or
// "-inf" (JSON has no such numbers; pandas and float() read these strings back).
func AppendJSONValue(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.AppendQuote(b, FormatValue(v))
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// AppendJSONString appends s as a JSON string.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			j, err := json.Marshal(s)
			if err != nil { // invalid UTF-8 is replaced, so this does not happen
				return append(b, `""`...)
			}
			return append(b, j...)
		}
	}
	return strconv.AppendQuote(b, s)
}

// Store keeps the series of an app's lines, in bounded memory, and raises alarms. It
// is not safe for concurrent use: one goroutine feeds it and reads it (the UI loop, or
// a command).
type Store struct {
	ext     *Extractor
	parsed  Parsed
	frame   Parsed               // an earlier drawing of a line, as AddParsed adds it
	ranks   map[Rank]*rankSeries // series by rank, then name
	nseries int
	// The rank of the last line and its series: lines come in runs of one rank.
	lastRank   Rank
	lastSeries *rankSeries
	byName     map[string][]*Series
	names      []string // in order of first appearance
	streams    map[Rank]*stream
	// The rank of the last line that asked StepOf, and its stream.
	streamRank Rank
	lastStream *stream
	alarms     []Alarm
	raised     map[alarmKey]bool
	div        map[string]*divergence
	dropped    int64
	seq        int64 // values added
	noPoints   bool  // see NewAlarmStore
	// budget is the most points all series keep together (0: no bound but
	// MaxPoints a series), and seriesPoints what each keeps under it.
	budget, seriesPoints int
	scratch              []float64 // for compare
}

type alarmKey struct {
	kind   AlarmKind
	metric string
	rank   Rank
}

// NewStore returns an empty store extracting with cfg.
func NewStore(cfg Config) *Store {
	return &Store{
		ext:     NewExtractor(cfg),
		ranks:   map[Rank]*rankSeries{},
		byName:  map[string][]*Series{},
		streams: map[Rank]*stream{},
		raised:  map[alarmKey]bool{},
		div:     map[string]*divergence{},
	}
}

// NewAlarmStore returns a store that keeps each series' statistics and the alarms, not
// its points: what reading an app's alarms needs, in a few hundred bytes per series
// rather than up to MaxPoints points.
func NewAlarmStore(cfg Config) *Store {
	s := NewStore(cfg)
	s.noPoints = true
	return s
}

// MinSeriesPoints is the least a series keeps under a store's point budget: two
// points a column of the widest chart.
const MinSeriesPoints = 512

// SetPointBudget bounds the points all series keep together to about n: each series
// keeps MaxPoints, or the largest power-of-two fraction of it that fits n over the
// series the store has (at least MinSeriesPoints), averaging its points in pairs as
// it goes down, so that a chart keeps the whole run's shape at a coarser grain. Its
// statistics (Count, Min, Max, Best, Last), and the alarms, still see every value.
// What a wall of many replicas keeps: 512 series of 4,096 points are 48 MiB.
func (s *Store) SetPointBudget(n int) {
	s.budget = n
	s.fitBudget()
}

// fitBudget lowers the points each series keeps when the series outgrow the budget.
func (s *Store) fitBudget() {
	if s.budget <= 0 {
		return
	}
	limit := MaxPoints
	for limit > MinSeriesPoints && s.nseries*limit > s.budget {
		limit /= 2
	}
	if s.seriesPoints != 0 && limit >= s.seriesPoints {
		return
	}
	s.seriesPoints = limit
	for _, list := range s.byName {
		for _, ser := range list {
			ser.shrink(limit)
		}
	}
}

// Extractor returns the store's extractor.
func (s *Store) Extractor() *Extractor { return s.ext }

// Add reads one log line and adds its values; it returns the line's parsed values (valid
// until the next Add). Pending lines (a progress bar still being drawn) are skipped:
// the line that ends them carries the final values.
func (s *Store) Add(l sched.Line) *Parsed {
	p := &s.parsed
	if l.Pending {
		p.Reset()
		return p
	}
	s.ext.Extract(l.Text, p)
	s.AddLine(Rank{Role: l.Role, Replica: l.Replica, Local: p.Local}, l.Time, p)
	return p
}

// AddLine adds what a line of rank r read at t says, already extracted into p, as Add
// does: its values (AddParsed), and what a line without values tells the lines after
// it (it ends a record of indented lines; Keras' `Epoch 1/2` names the epoch of the
// bar under it).
func (s *Store) AddLine(r Rank, t time.Time, p *Parsed) {
	if p.Rule {
		s.tableRule(r)
	}
	if len(p.Samples) == 0 && !p.HasStep && (!p.Indented || p.EpochOnly) {
		st := s.stream(r)
		st.record = false // a line out of the record ends it
		st.headCtx = ""
		if p.CtxHead {
			st.headCtx, st.headIndented = p.ctx, p.CtxOfIndented
		}
		if p.EpochOnly {
			st.headEpoch = p.Epoch // Keras' `Epoch 1/2` before its bar
		}
		if p.Blank {
			st.headEpoch = -1 // DeepCTR's `test AUC 0.6133` after the epochs: no epoch's
		}
		return
	}
	s.AddParsed(r, t, p)
}

// Telling reports whether an extracted line tells a Store anything (AddLine): a value,
// a step, a line of a record or an epoch, a blank line (it ends an epoch's head). A
// reader that batches lines may leave the others out.
func (p *Parsed) Telling() bool {
	return len(p.Samples) > 0 || p.HasStep || p.Indented || p.EpochOnly || p.CtxHead || p.Rule || p.Blank
}

// StepOf returns the step a parsed line's values are at on rank r: the step it names,
// else the last step the rank named, else -1. It also records a named step.
// A line with NoStep prints a counter of its own: it takes no other line's step.
func (s *Store) StepOf(r Rank, p *Parsed) int64 {
	st := s.stream(r)
	if st.recordStep(p) {
		return st.step
	}
	st.headBarStep(p)
	st.barStep(p)
	st.counterStep(p)
	st.epochStep(p)
	st.restartStep(p)
	st.headEpochOf(p)
	st.evalStep(p)
	if p.HasStep {
		return st.namedStep(p)
	}
	if st.stepped {
		return st.step
	}
	return -1
}

// recordStep follows the records of indented lines on the stream: it reports whether p
// is a line of a record whose head named the step (Composer's `[epoch=1][batch=10/100]:`),
// and then gives p that step; otherwise it notes whether p heads a record.
func (st *stream) recordStep(p *Parsed) bool {
	switch {
	case p.Indented && st.record && st.deeper(p) && st.stepped && !p.HasStep && !p.tableHead:
		p.Step, p.HasStep = st.step, true
		return true
	case p.Indented && st.record && st.deeper(p):
	default:
		// A header names the step of the record under it; so does a line that names
		// its training step, for the indented lines right under it (Caffe's `Iteration 100 (...),
		// loss = 0.21` then `    Train net output #0: loss = 0.21`). A head may be
		// indented itself, when it names a step and no value: its lines are deeper
		// (Coqui's `   --> TIME: ... -- GLOBAL_STEP: 25` over `     | > loss: 3.78`).
		st.record = p.Header || p.HasStep && p.Step >= 0 && (!p.Indented || len(p.Samples) == 0) && (p.ctx == "" || p.CtxHead && len(p.Samples) == 0)
		st.recordIndent = p.Indent
	}
	return false
}

// deeper reports whether an indented line is under the record's head: any, under a
// head that is not indented (a table's rows are indented by their shape, not their
// spaces); deeper than the head, under one that is.
func (st *stream) deeper(p *Parsed) bool {
	return st.recordIndent == 0 || p.Indent > st.recordIndent
}

// headBarStep gives a bar under a line that named only an epoch (Keras' `Epoch 1/2`)
// that epoch, unless the bar went on past a new epoch's line rather than restarting:
// then its position is the run's step (kohya's sd-scripts).
func (st *stream) headBarStep(p *Parsed) {
	if !p.BarStep || p.EpochSteps != 0 || p.BarTotal <= 0 || st.headEpoch < 0 || p.BarTotal >= maxEpochCount {
		return
	}
	if st.headBarTotal == p.BarTotal && st.headBarEpoch != st.headEpoch && p.Bar > st.headBar {
		st.runBar = true // the bar went on at the new epoch: its position is the run's step
	}
	if p.Bar != st.headBar || st.headBarEpoch != st.headEpoch {
		st.headBar, st.headBarTotal, st.headBarEpoch = p.Bar, p.BarTotal, st.headEpoch
	}
	if !st.runBar {
		p.Epoch, p.EpochSteps = st.headEpoch, p.BarTotal // the epoch of the line above the bar
	}
}

// barStep counts the steps of a bar that names no epoch (`ITERATION - loss: 0.21: 1%|
// 10/938`): each of its restarts is an epoch.
func (st *stream) barStep(p *Parsed) {
	if !p.BarStep || p.EpochSteps != 0 || p.BarTotal <= 0 {
		return
	}
	if st.barTotal == p.BarTotal && p.Bar < st.bar {
		st.barRuns++
	}
	st.bar, st.barTotal = p.Bar, p.BarTotal
	if st.barRuns > 0 && st.barRuns < maxEpochCount && p.BarTotal < maxEpochCount {
		p.Step = st.barRuns*p.BarTotal + p.Bar
	}
	p.BarStep = false // counted: asked again, the step is p.Step
}

// epochStep makes the epoch the step of a line that names no step in a run that counts
// nothing finer than epochs.
func (st *stream) epochStep(p *Parsed) {
	if st.finer || p.HasStep {
		return
	}
	if p.EpochOnly {
		// A run that counts nothing finer than epochs: the epoch is the step.
		p.Step, p.HasStep = p.Epoch, true
		return
	}
	if st.headEpoch >= 0 && len(p.Samples) > 0 {
		// ... and the lines under a line that names only the epoch are that epoch's
		// (nnU-Net's `Epoch 3`, then `train_loss -0.51`, `val_loss -0.58`).
		p.Step, p.HasStep, p.Epoch, p.EpochOnly = st.headEpoch, true, st.headEpoch, true
	}
}

// restartStep counts over the epochs a step within an epoch whose total the line does
// not print (RetinaNet's `Epoch: 1 | Iteration: 0`): an epoch's steps are learned when
// the counter restarts at the next epoch (the last step of the first epoch, plus one);
// a counter that does not restart is the run's, as written.
func (st *stream) restartStep(p *Parsed) {
	if !p.HasStep || !p.epochOpen || p.Epoch < 0 || p.EpochSteps != 0 {
		return
	}
	if p.ctx != "" || p.Step < 0 {
		return
	}
	switch {
	case st.rEpoch < 0:
		st.rEpoch, st.rBase, st.rMax = p.Epoch, p.Epoch, p.Step
	case p.Epoch == st.rEpoch:
		st.rMax = max(st.rMax, p.Step)
	case p.Epoch == st.rEpoch+1 && p.Step <= st.rMax:
		if st.rSize == 0 && st.rEpoch == st.rBase {
			st.rSize = st.rMax + 1
		}
		st.rEpoch, st.rMax = p.Epoch, p.Step
	default:
		st.rEpoch, st.rMax = p.Epoch, p.Step
	}
	if st.rSize > 0 && p.Epoch > st.rBase && p.Epoch-st.rBase < maxEpochCount && st.rSize < maxEpochCount {
		p.Step += (p.Epoch - st.rBase) * st.rSize
	}
}

// headEpochOf gives a step counted within an epoch that the line does not name the
// epoch of the line above that named only it (the quickstart's `Epoch 2` over `loss:
// 2.16  [   64/60000]`): the step is counted over the epochs.
func (st *stream) headEpochOf(p *Parsed) {
	if p.HasStep && p.Epoch < 0 && p.EpochSteps > 0 && st.headEpoch >= 0 && p.ctx == "" {
		p.Epoch = st.headEpoch
	}
}

// namedStep records the step p names (counted over the epochs it names, see
// overEpochs) as the stream's and returns it; a negative step is no step (-1).
func (st *stream) namedStep(p *Parsed) int64 {
	if p.Step < 0 {
		return -1
	}
	if p.ctx == "" && p.Epoch >= 0 && p.EpochSteps > 0 {
		st.epochSteps = p.EpochSteps // training's steps per epoch (see evalStep)
	}
	st.step, st.stepped = st.overEpochs(p), true
	if p.Epoch >= 0 && p.EpochSteps > 0 {
		// Counted over the epochs the line names: the line's step is the run's
		// (and asked again, it is p.Step).
		p.Step, p.EpochSteps = st.step, 0
	}
	if !p.EpochOnly {
		st.finer = true
	}
	return st.step
}

// evalStep gives an evaluation's line that counts its batches within the epoch it
// names (mmengine's `Epoch(val) [1][ 50/100]`, mmcv's `Epoch(val) [1][625]`) the
// training step it is at: an eval counter never is the step. The evaluation of epoch E
// follows its training: it is at the step that ends E, (E - base + 1) × training's
// steps per epoch, once training lines named them; else at the last step named.
func (st *stream) evalStep(p *Parsed) {
	if p.ctx != "" && p.HasStep && p.Step >= 0 && p.Epoch < 0 && p.EpochSteps > 0 && !p.EpochOnly {
		// An evaluation's counter in an epoch it does not name (timm's and imagenet's
		// `Test: [  0/48]`): the evaluation is at the latest training step, its counter
		// never replaces it.
		p.EpochSteps = 0
		if st.stepped {
			p.Step = st.step
		} else {
			p.HasStep = false
		}
		return
	}
	if p.ctx == "" || !p.HasStep || p.Step < 0 || p.Epoch < 0 || p.EpochOnly {
		return
	}
	if p.EpochSteps > 0 && p.EpochSteps == st.epochSteps {
		return // the training's own counter (DLRM's `Testing at - 2048/4096 of epoch 0,`)
	}
	p.EpochSteps = 0
	switch {
	case st.epochSteps > 0 && st.epoch >= 0 && p.Epoch >= st.base && p.Epoch-st.base < maxEpochCount:
		p.Step = (p.Epoch - st.base + 1) * st.epochSteps
	case st.stepped:
		p.Step = st.step
	default:
		p.HasStep = false // no training step yet: the values are at none
	}
}

// counterStep makes the number in brackets before a line's values (Parsed.Counter) its
// step while it rises line after line on the stream: XGBoost's `[0]`, `[1]`, CLU's
// `[100]`, `[200]`. A count that does not rise (`[3]` after `[5]`) stays no step.
func (st *stream) counterStep(p *Parsed) {
	if !p.HasCounter {
		return
	}
	// A counter that rises, or stays (InsightFace's verification lines `[lfw][2000]XNorm`,
	// `[lfw][2000]Accuracy-Flip`, ... at one step), or names the training step, is the step.
	if p.Step == NoStep && (!st.counted || p.Counter >= st.counter || st.stepped && p.Counter == st.step) {
		p.Step = p.Counter
	}
	st.counter, st.counted = p.Counter, true
}

// stream is what a rank's lines said that the lines after them use.
type stream struct {
	step    int64 // the last step named, when stepped
	stepped bool
	// ctx is the context of the last line with values (see Parsed.Summary).
	ctx string
	// epoch is the last epoch a line named (-1: none yet), base the first one: epochs
	// are counted from 0, or from 1 when the first the stream names is 1 (mmengine,
	// mnist).
	epoch, base int64
	// finer is whether a line named a step finer than the epoch: a line that names
	// only an epoch then sums it up. record is whether the last line was a record's
	// head (Parsed.Header): the indented lines under it are at its step.
	finer, record bool
	// recordIndent is the indentation of the record's head: its lines are deeper.
	recordIndent int
	// rEpoch, rBase and rMax are the epoch, the first epoch and the highest step
	// within the epoch of the lines whose epoch's total is not printed; rSize the
	// steps of an epoch, once the counter restarted (see restartStep).
	rEpoch, rBase, rMax, rSize int64
	// training is whether a line named a step or a loss: what came before is the
	// preamble of the run (Series.preamble).
	training bool
	// bar and barTotal are the last position and total of a bar that names no epoch,
	// barRuns how many times it restarted.
	bar, barTotal, barRuns int64
	// counter is the last number in brackets a line began its values with
	// (Parsed.Counter), when counted.
	counter int64
	counted bool
	// epochSteps is how many steps an epoch of training counts, as its lines say
	// (Parsed.EpochSteps of a line with no context), 0 until one does.
	epochSteps int64
	// headCtx is the context the line before named for the values under it
	// (Parsed.CtxHead), "" when none.
	headCtx string
	// headIndented is whether headCtx is that of the indented lines under the head only.
	headIndented bool
	// headEpoch is the epoch of the last line that named only an epoch, and no value
	// (Keras' `Epoch 1/2`), -1 when none.
	headEpoch int64
	// headBar and headBarTotal are the last position and total of a bar under such a
	// line; runBar is whether a bar went on past a new epoch's line rather than
	// restarting: it counts the run's steps, not the epoch's (kohya's sd-scripts).
	headBar, headBarTotal int64
	headBarEpoch          int64
	runBar                bool
	// table is whether the stream is within a table's record (between its rules of
	// dashes), tableStep whether the record named its step; pending are its rows held
	// until it does (a record whose step row comes last: Baselines').
	table, tableStep bool
	pending          []pendingRow
}

// maxPendingRows bounds the rows of a table's record held until the record names its
// step: a record is a few dozen rows.
const maxPendingRows = 256

// pendingRow is a row of a table's record held until the record names its step.
type pendingRow struct {
	t       time.Time
	info    LineInfo
	samples []Sample
}

// tableRule follows the rules of dashes around a table's records (Baselines' and SB3's
// dumps of key | value rows): the first opens a record, the next closes it, adding the
// rows held at the step they would have had when the record named none.
func (s *Store) tableRule(r Rank) {
	st := s.stream(r)
	if st.table {
		s.flushTable(r, -1)
		st.table = false
		return
	}
	st.table, st.tableStep = true, false
}

// flushTable adds the rows of the record held so far, at step when it is one.
func (s *Store) flushTable(r Rank, step int64) {
	st := s.stream(r)
	rows := st.pending
	st.pending = nil
	for _, row := range rows {
		s.frame.Samples = append(s.frame.Samples[:0], row.samples...)
		s.frame.LineInfo = row.info
		if step >= 0 {
			s.frame.Step, s.frame.HasStep = step, true
		}
		s.addParsed(r, row.t, &s.frame)
	}
}

// overEpochs returns the step of p counted over epochs when p counts it within one
// (Parsed.EpochSteps): (epoch - base) × steps per epoch + step, so that a series' x
// never goes back at a new epoch. A line that names no epoch (imagenet's `Test: [
// 1/196]`, between training epochs) is in the stream's last.
func (st *stream) overEpochs(p *Parsed) int64 {
	if p.EpochSteps <= 0 {
		return p.Step
	}
	e := p.Epoch
	switch {
	case e >= 0 && st.epoch < 0:
		st.epoch, st.base = e, 0
		if e == 1 {
			st.base = 1
		}
	case e >= 0:
		st.epoch = e
	default:
		e = st.epoch
	}
	if e-st.base <= 0 {
		return p.Step
	}
	return (e-st.base)*p.EpochSteps + p.Step
}

// stream returns rank r's stream.
func (s *Store) stream(r Rank) *stream {
	if s.lastStream == nil || s.streamRank != r {
		// Lines come in runs of one rank: its stream is looked up once a run.
		st := s.streams[r]
		if st == nil {
			st = &stream{epoch: -1, headEpoch: -1, headBar: -1, headBarEpoch: -1, rEpoch: -1}
			s.streams[r] = st
		}
		s.streamRank, s.lastStream = r, st
	}
	return s.lastStream
}

// AddParsed adds values already extracted from a line of rank r read at t: its earlier
// drawings' (a progress bar's, see Parsed.Drawings), then its own.
func (s *Store) AddParsed(r Rank, t time.Time, p *Parsed) {
	if st := s.stream(r); st.table && p.KVRow && len(p.frames) == 0 {
		switch {
		case p.HasStep && p.Step >= 0:
			// The row that names the record's step (Baselines' misc/total_timesteps,
			// printed last): the rows before it are at that step.
			st.tableStep = true
			s.flushTable(r, p.Step)
		case !st.tableStep && len(p.Samples) > 0 && len(st.pending) < maxPendingRows:
			st.pending = append(st.pending, pendingRow{t: t, info: p.LineInfo, samples: append([]Sample(nil), p.Samples...)})
			return
		}
	}
	if len(p.frames) > 0 {
		p.Drawings(func(info LineInfo, samples []Sample) {
			if info.ctx != "" && !info.HasStep && !p.HasStep {
				return // an evaluation's bar counts its own batches: its last drawing is its point
			}
			s.frame.Samples = append(s.frame.Samples[:0], samples...)
			s.frame.LineInfo = info
			s.addParsed(r, t, &s.frame)
		})
	}
	s.addParsed(r, t, p)
}

// addParsed adds the values of one drawing of a line.
func (s *Store) addParsed(r Rank, t time.Time, p *Parsed) {
	summary := p.EpochOnly && !p.HasStep && s.stream(r).finer
	if summary {
		s.nameEpochSummary(r, p)
	}
	step := s.StepOf(r, p)
	s.placeInContext(r, p)
	ns := t.UnixNano()
	st := s.stream(r)
	if !st.training && (step >= 0 || p.HasStep || hasLoss(p.Samples)) {
		st.training = true
	}
	for _, smp := range p.Samples {
		ser := s.seriesOf(r, smp, st.training, summary)
		if ser == nil {
			continue
		}
		pt := Point{Step: step, Time: ns, Value: smp.Value}
		s.seq++
		ser.add(pt, s.seq)
		s.check(ser, smp, r, pt, t)
	}
}

// nameEpochSummary names the values of an epoch's summary in a run that counts steps
// (flair's `EPOCH 1 done: loss 0.9121`): those that would join a per-step series are
// epoch/NAME (one qualified by its own words, train/loss, is apart already).
func (s *Store) nameEpochSummary(r Rank, p *Parsed) {
	for i := range p.Samples {
		switch n := p.Samples[i].Name; {
		case !strings.Contains(n, "/"):
			p.Samples[i].Name = p.prefixed("epoch", n)
		case strings.HasPrefix(n, "train/") && s.perStep(r, n):
			// SpeechBrain's `train loss: 2.34` after its bar's train_loss: not one
			// more point of the per-step series.
			p.Samples[i].Name = p.prefixed("epoch", n[len("train/"):])
		}
	}
}

// placeInContext gives p's values the context that rank r's stream holds for them (a
// head before them, or the values a summary sums up), and keeps in the stream the
// context p sets for the lines after it.
func (s *Store) placeInContext(r Rank, p *Parsed) {
	st := s.stream(r)
	if st.headCtx != "" {
		// The values under a line that named their context (`valid result:`), and the
		// indented lines under a head that names it (BasicSR's `Validation Set5` then
		// `\t # psnr: 29.88`, `\t # ssim: 0.85`).
		if p.ctx == "" && !p.Summary && len(p.Samples) > 0 && (p.Indented || !st.headIndented) {
			s.ext.inContext(p, st.headCtx)
		}
		if !p.Indented || !st.headIndented {
			st.headCtx = ""
		}
	}
	if p.CtxHead && len(p.Samples) == 0 {
		// A head that names a step and a context (DLRM's `Testing at - 2048/4096 of
		// epoch 0,` before ` accuracy 77.841 %`).
		st.headCtx, st.headIndented = p.ctx, p.CtxOfIndented
	}
	if p.Summary {
		// imagenet's ` * Acc@1 76.130` after its `Test: [..]` lines: the summary of
		// what the stream printed last, in its context.
		if st.ctx != "" {
			s.ext.inContext(p, st.ctx)
		} else if st.finer && p.averaged {
			// DETR's `Averaged stats: lr: 0.000100  loss: 2.0120 (2.4413) ...` after an
			// epoch's training lines: the epoch's summary, no point of the per-step series.
			for i := range p.Samples {
				if n := p.Samples[i].Name; !strings.Contains(n, "/") {
					p.Samples[i].Name = p.prefixed("epoch", n)
				}
			}
		}
	} else if len(p.Samples) > 0 {
		st.ctx = p.ctx
	}
}

// seriesOf returns rank r's series of smp's name, made when it is new (a preamble's
// when the stream is not training yet, epochly when it holds an epoch's summary); nil
// when it is new and the store holds MaxSeries already (it counts one more dropped).
func (s *Store) seriesOf(r Rank, smp Sample, training, summary bool) *Series {
	if s.lastSeries == nil || s.lastRank != r {
		s.lastRank, s.lastSeries = r, s.ranks[r]
		if s.lastSeries == nil {
			s.lastSeries = &rankSeries{m: map[string]*Series{}}
			s.ranks[r] = s.lastSeries
		}
	}
	ser := s.lastSeries.get(smp.Name)
	if ser == nil {
		if s.nseries >= MaxSeries {
			s.dropped++
			return nil
		}
		ser = s.newSeries(smp, r)
		ser.preamble = !training
		ser.epochly = summary
	} else if training {
		ser.preamble = false
	}
	return ser
}

// check raises the alarm a point pt of ser read at t calls for: NaN (or a
// NaN counter above zero), Inf, or a watched series' divergence.
func (s *Store) check(ser *Series, smp Sample, r Rank, pt Point, t time.Time) {
	switch {
	case math.IsNaN(smp.Value), smp.Value > 0 && ser.countsNaN:
		s.raise(Alarm{Kind: AlarmNaN, Metric: smp.Name, Rank: r, Step: pt.Step, Time: t, Value: smp.Value})
	case math.IsInf(smp.Value, 0):
		s.raise(Alarm{Kind: AlarmInf, Metric: smp.Name, Rank: r, Step: pt.Step, Time: t, Value: smp.Value})
	default:
		if ser.div != nil {
			s.watch(ser.div, smp.Name, r, pt, t)
		}
	}
}

// perStep reports whether rank r has a series of name that lines with steps made (not
// an epoch's summary).
func (s *Store) perStep(r Rank, name string) bool {
	rs := s.ranks[r]
	if rs == nil {
		return false
	}
	ser := rs.get(name)
	return ser != nil && !ser.epochly
}

// newSeries adds the series of smp's name on rank r.
func (s *Store) newSeries(smp Sample, r Rank) *Series {
	ser := newSeries(smp.Name, r)
	ser.Unit = smp.Unit
	ser.noPoints = s.noPoints
	s.lastSeries.m[smp.Name] = ser
	s.nseries++
	if len(s.byName[smp.Name]) == 0 {
		s.names = append(s.names, smp.Name)
	}
	list := append(s.byName[smp.Name], ser)
	slices.SortFunc(list, func(a, b *Series) int { return compareRanks(a.Rank, b.Rank) })
	s.byName[smp.Name] = list
	if s.budget > 0 {
		ser.maxPoints = max(s.seriesPoints, MinSeriesPoints)
		s.fitBudget()
	}
	if s.ext.cfg.Watched(smp.Name) {
		d := s.div[smp.Name]
		if d == nil {
			d = &divergence{}
			s.div[smp.Name] = d
		}
		d.ranks = len(list)
		ser.div = d
	}
	return ser
}

// rankSeries are the series of one rank by name, with the last few found by the
// address of their name: the names of Samples are interned, so a name read again is
// the same string, found without hashing it.
type rankSeries struct {
	m   map[string]*Series
	hot [hotSeries]struct {
		name string
		s    *Series
	}
}

// hotSeries is how many series of a rank are found by their name's address: more
// than the metrics of most runs, in 1.5 KiB a rank.
const (
	hotSeriesBits = 6
	hotSeries     = 1 << hotSeriesBits
)

func (rs *rankSeries) get(name string) *Series {
	a := uint64(uintptr(unsafe.Pointer(unsafe.StringData(name))))
	h := &rs.hot[(a*0x9e3779b97f4a7c15)>>(64-hotSeriesBits)]
	if unsafe.StringData(h.name) == unsafe.StringData(name) && len(h.name) == len(name) && h.s != nil {
		return h.s
	}
	ser := rs.m[name]
	if ser != nil {
		h.name, h.s = name, ser
	}
	return ser
}

// hasLoss reports whether one of samples is a loss.
func hasLoss(samples []Sample) bool {
	for _, smp := range samples {
		if strings.Contains(smp.Name, "loss") {
			return true
		}
	}
	return false
}

// countsNaN reports whether a metric counts NaN values (Megatron prints `number of nan
// iterations: 1` where the loss was NaN, and no loss).
func countsNaN(name string) bool {
	return strings.Contains(name, "nan_iterations") || strings.Contains(name, "nan_count") || strings.Contains(name, "num_nan")
}

func (s *Store) raise(a Alarm) {
	k := alarmKey{a.Kind, a.Metric, a.Rank}
	if s.raised[k] || len(s.alarms) >= MaxAlarms {
		return
	}
	s.raised[k] = true
	s.alarms = append(s.alarms, a)
}

// Names lists the metrics seen, in order of first appearance, settings left out (see
// Settings): what the headline, the tables and the chart show.
func (s *Store) Names() []string {
	out := make([]string, 0, len(s.names))
	for _, n := range s.names {
		if !s.IsSetting(n) && !IsSystem(n) {
			out = append(out, n)
		}
	}
	return append(out, s.SystemNames()...)
}

// SystemNames lists the metrics of the system group, settings left out, in order of
// first appearance: memory, throughput and time (see IsSystem). Names lists them after
// the training metrics; views show them apart.
func (s *Store) SystemNames() []string {
	var out []string
	for _, n := range s.names {
		if !s.IsSetting(n) && IsSystem(n) {
			out = append(out, n)
		}
	}
	return out
}

// IsSystem reports whether a metric is the system's rather than training's: a memory
// (gpu_mem, max_mem, peak_memory_active), a throughput (it/s, tok/s, samples/sec,
// img/s, fps, tflops, mfu) or a time (iter_time, data_time, ms/batch, dur, runtime).
// A loss never is.
func IsSystem(name string) bool {
	if strings.Contains(name, "loss") {
		return false
	}
	if i := strings.IndexByte(name, '/'); i >= 0 {
		switch name[:i] {
		case "val", "test", "eval", "train", "epoch":
			name = name[i+1:]
		}
	}
	switch name {
	case "data", "dur", "eta", "time", "fps", "mfu", "throughput", "elapsed", "tps", "wps", "ups", "wall", "sps", "seconds", "secs", "speed", "took":
		return true
	}
	if strings.HasSuffix(name, "/s") || strings.Contains(name, "/s_") || strings.Contains(name, "/s/") || strings.HasPrefix(name, "s/") || strings.HasPrefix(name, "sec/") {
		return true // tok/s, samples/s_per_gpu, tflop/s/device, HiFi-GAN's s/b, StyleGAN's sec/tick (a time per batch, per tick)
	}
	for _, w := range [...]string{"mem", "cache", "alloc", "reserved", "/sec", "per_sec", "persec",
		"per_second", "s/it", "fps", "flops", "throughput", "ms/", "_dt", "latency", "runtime", "elapsed"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return strings.Contains(name, "time") && !strings.Contains(name, "timestep")
}

// AllNames lists every name seen, settings included, in order of first appearance.
func (s *Store) AllNames() []string { return s.names }

// Settings lists the names whose value has been the same on every line, on every rank,
// over at least two lines (a batch size, Lightning's v_num, a constant lr): listed
// apart, not charted by default. Losses, rates, memory and measures written with a
// unit (GiB, ms) are never settings: a loss stuck at one value, or memory that holds
// steady, is news.
func (s *Store) Settings() []string {
	var out []string
	for _, n := range s.names {
		if s.IsSetting(n) {
			out = append(out, n)
		}
	}
	return out
}

// IsSetting reports whether the metric name has kept one value (see Settings).
func (s *Store) IsSetting(name string) bool {
	list := s.byName[name]
	if len(list) == 0 || strings.HasSuffix(name, "loss") || strings.Contains(name, "mem") {
		return false
	}
	// A rate is a measure even when it holds steady: it/s, tok/s, samples_per_second.
	if strings.Contains(name, "/s") || strings.Contains(name, "s/it") || strings.Contains(name, "per_sec") {
		return false
	}
	if base, ok := strings.CutPrefix(name, "epoch/"); ok && len(s.byName[base]) > 0 {
		// An epoch's summary of a setting, at the setting's value (ESPnet's clip=100 and
		// loss_scale=1, flair's constant lr): the same setting.
		b := s.byName[base][0]
		return s.IsSetting(base) && list[0].Min == b.Min && list[0].Max == b.Min
	}
	preamble := true
	for _, ser := range list {
		preamble = preamble && ser.preamble && s.streams[ser.Rank] != nil && s.streams[ser.Rank].training
	}
	if preamble {
		return true // printed once before training: Composer's config, a model's repr
	}
	var n int64
	v := list[0].Min
	for _, ser := range list {
		if ser.Unit != "" || math.IsNaN(ser.Min) || ser.Min != ser.Max || ser.Min != v || ser.Count != ser.finite {
			return false
		}
		n += ser.Count
	}
	return n >= 2
}

// Headline is the metric a chart or a summary shows first: the training loss (loss, or
// a name ending in loss without a context, or train/loss), else the first metric.
func Headline(s *Store) string { return HeadlineOf(s.Names()) }

// HeadlineOf is Headline over a list of metric names (several stores', say).
func HeadlineOf(names []string) string {
	names = slices.DeleteFunc(slices.Clone(names), IsSystem)
	if slices.Contains(names, "loss") {
		return "loss"
	}
	for _, n := range names {
		if strings.HasSuffix(n, "loss") && !strings.Contains(n, "/") {
			return n
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "train/") && strings.HasSuffix(n, "loss") {
			return n
		}
	}
	for _, n := range names {
		if strings.Contains(n, "loss") {
			return n
		}
	}
	for _, w := range [...]string{"xent", "cross-entropy", "cross_entropy", "ce", "nll", "ppl", "perplexity"} {
		if slices.Contains(names, w) {
			return w // OpenNMT's xent, MXNet's cross-entropy: the losses of names without the word
		}
	}
	for _, n := range names {
		if w := n[strings.LastIndexByte(n, '/')+1:]; !strings.HasPrefix(n, "test/") && !strings.HasPrefix(n, "val/") && !strings.HasPrefix(n, "eval/") &&
			(strings.HasPrefix(w, "rew") || strings.HasPrefix(w, "eprew") || strings.Contains(w, "return")) {
			return n // reinforcement learning's headline: the episodes' reward (Tianshou's rew, Baselines' eprewmean)
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	return ""
}

// Series returns the series of a metric, one per rank, in rank order.
func (s *Store) Series(name string) []*Series { return s.byName[name] }

// Notices says what the store's reading gave up on (a user pattern too slow to run on
// every line), once each.
func (s *Store) Notices() []string { return s.parsed.Notices() }

// Alarms returns the alarms raised, in order.
func (s *Store) Alarms() []Alarm { return s.alarms }

// AlarmsOf returns the alarms of one replica of a role (any local rank).
func (s *Store) AlarmsOf(role string, replica int) []Alarm {
	var out []Alarm
	for _, a := range s.alarms {
		if a.Rank.Role == role && a.Rank.Replica == replica {
			out = append(out, a)
		}
	}
	return out
}

// Dropped counts the values not kept because the store held MaxSeries series.
func (s *Store) Dropped() int64 { return s.dropped }

// Summary is one metric over all its ranks: what `wick metrics` tabulates.
type Summary struct {
	Name string `json:"name"`
	// Unit is the unit of its values, Setting whether it kept one value (see Settings).
	Unit    string `json:"unit,omitempty"`
	Setting bool   `json:"setting,omitempty"`
	Ranks   int    `json:"ranks"`
	Count   int64  `json:"count"`
	// First and Last are the first and last values read (any rank).
	First, Last Point
	Min, Max    float64
}

// Summaries returns a summary per metric, in order of first appearance.
func (s *Store) Summaries() []Summary {
	out := make([]Summary, 0, len(s.names))
	for _, n := range s.names {
		sum := Summary{Name: n, Setting: s.IsSetting(n), Min: math.NaN(), Max: math.NaN()}
		var firstSeq, lastSeq int64
		for i, ser := range s.byName[n] {
			if sum.Unit == "" {
				sum.Unit = ser.Unit
			}
			sum.Ranks++
			sum.Count += ser.Count
			if i == 0 || ser.firstSeq < firstSeq {
				sum.First, firstSeq = ser.First, ser.firstSeq
			}
			if i == 0 || ser.lastSeq > lastSeq {
				sum.Last, lastSeq = ser.Last, ser.lastSeq
			}
			if !math.IsNaN(ser.Min) && (math.IsNaN(sum.Min) || ser.Min < sum.Min) {
				sum.Min = ser.Min
			}
			if !math.IsNaN(ser.Max) && (math.IsNaN(sum.Max) || ser.Max > sum.Max) {
				sum.Max = ser.Max
			}
		}
		out = append(out, sum)
	}
	return out
}

// divergence holds a watched metric's recent values by step, until every rank has
// reported the step (or the step is old), then compares the ranks.
type divergence struct {
	rows  []divRow
	ranks int // the series of the metric: a step is compared once they all have it
}

type divRow struct {
	step int64
	t    time.Time
	vals []rankVal
}

type rankVal struct {
	rank Rank
	v    float64
}

// watch compares p, the value of a watched series of rank r, with the other ranks'
// at its step, once they have all reported it.
func (s *Store) watch(d *divergence, name string, r Rank, p Point, t time.Time) {
	ranks := d.ranks
	if ranks < 2 {
		return
	}
	if p.Step < 0 {
		// Like with like: a value without a step has no value of another rank at the
		// same point to be compared with (another rank's last value may be from
		// another step, or another kind of line).
		return
	}
	i := len(d.rows) - 1 // the step is most likely the latest
	for i >= 0 && d.rows[i].step != p.Step {
		i--
	}
	if i < 0 {
		if len(d.rows) >= divergenceRows {
			// The oldest step will not be completed (a rank died or lags): compare
			// the ranks that reported it.
			s.compare(name, d.rows[0].vals, d.rows[0].step, d.rows[0].t)
			d.rows = slices.Delete(d.rows, 0, 1)
		}
		d.rows = append(d.rows, divRow{step: p.Step, t: t})
		i = len(d.rows) - 1
	}
	row := &d.rows[i]
	row.vals = setVal(row.vals, r, p.Value)
	if len(row.vals) >= ranks {
		s.compare(name, row.vals, row.step, t)
		d.rows = slices.Delete(d.rows, i, i+1)
	}
}

func setVal(vals []rankVal, r Rank, v float64) []rankVal {
	for i := range vals {
		if vals[i].rank == r {
			vals[i].v = v
			return vals
		}
	}
	return append(vals, rankVal{r, v})
}

// compare raises AlarmDiverged for each rank whose value is more than the factor away
// from the median of the others', on the bad side: above it for a metric where lower
// is better (a loss), below it for one where higher is better (an accuracy), so the
// healthy ranks are never named. Only positive values are compared (a ratio means
// nothing across zero). Two ranks have no majority: when they differ by more than the
// factor, AlarmDisagree names both.
func (s *Store) compare(name string, vals []rankVal, step int64, t time.Time) {
	if len(vals) < 2 {
		return
	}
	f := s.ext.cfg.Divergence
	lower := LowerIsBetter(name)
	worse := func(v, than float64) bool { return lower && v > than || !lower && v < than }
	if len(vals) == 2 {
		a, b := vals[0], vals[1]
		if !(a.v > 0 && b.v > 0) || ratio(a.v, b.v) <= f {
			return
		}
		if worse(b.v, a.v) {
			a, b = b, a
		}
		// The one that left its own history is the one that departed: rank 1's loss
		// x5 while rank 0's kept falling.
		da, db := s.departure(name, a, worse), s.departure(name, b, worse)
		switch {
		case da > f && db <= f:
			s.raise(Alarm{Kind: AlarmDiverged, Metric: name, Rank: a.rank, Peer: b.rank, Step: step, Time: t, Value: a.v, Others: b.v, Own: da})
			return
		case db > f && da <= f:
			s.raise(Alarm{Kind: AlarmDiverged, Metric: name, Rank: b.rank, Peer: a.rank, Step: step, Time: t, Value: b.v, Others: a.v, Own: db})
			return
		}
		if s.raised[alarmKey{AlarmDiverged, name, a.rank}] || s.raised[alarmKey{AlarmDiverged, name, b.rank}] {
			return // the one that departed is named already
		}
		if compareRanks(a.rank, b.rank) > 0 {
			a, b = b, a // named in rank order: neither is known to be the bad one
		}
		s.raise(Alarm{Kind: AlarmDisagree, Metric: name, Rank: a.rank, Peer: b.rank, Step: step, Time: t, Value: a.v, Others: b.v})
		return
	}
	others := s.scratch[:0]
	defer func() { s.scratch = others[:0] }()
	for i, rv := range vals {
		if !(rv.v > 0) {
			continue
		}
		others = others[:0]
		for j, o := range vals {
			if j != i && o.v > 0 {
				others = append(others, o.v)
			}
		}
		if len(others) < 2 {
			continue
		}
		m := median(others)
		if ratio(rv.v, m) <= f || !worse(rv.v, m) {
			continue
		}
		s.raise(Alarm{Kind: AlarmDiverged, Metric: name, Rank: rv.rank, Step: step, Time: t, Value: rv.v, Others: m})
	}
}

// departure is how far a rank's value went from its own last value on the bad side (a
// factor, 1 when it did not get worse or has no history).
func (s *Store) departure(name string, rv rankVal, worse func(v, than float64) bool) float64 {
	rs := s.ranks[rv.rank]
	if rs == nil {
		return 1
	}
	ser := rs.m[name]
	if ser == nil || !ser.hasPrev || !(ser.prev > 0) || !worse(rv.v, ser.prev) {
		return 1
	}
	return ratio(rv.v, ser.prev)
}

func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
