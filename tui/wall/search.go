package wall

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/widget"
)

// searchYield is how many lines a search job reads between checks of its context: a
// query replaced by the next keystroke stops within a few hundred microseconds.
const searchYield = 4096

// contextSteps are the lines of context the context key cycles through, around each
// match when only matching lines are shown.
var contextSteps = [...]int{0, 1, 3, 5, 10}

// search is the wall's search across panes: the query being typed and its mode, the
// matches of every pane, the job that finds them off the UI loop, and the current
// match that n/N move.
type search struct {
	input  widget.Input
	typing bool
	query  string
	// prev is the query before the prompt opened: the prompt starts empty (typing
	// starts a new query), and up recalls it.
	prev     string
	regex    bool
	caseSens bool
	// only shows only matching lines, with contextSteps[ctxStep] lines around them.
	only    bool
	ctxStep int

	match *matcher // nil without a query (or with a bad one)
	err   error    // a bad regex
	gen   int      // the job whose results are awaited
	stop  context.CancelFunc

	cur     ref // the current match of n/N
	curKey  key // its order key
	haveCur bool
	// jump is set when enter ended the query before any match was found while the
	// search still ran (the logs on disk take a while): the first matches found are
	// shown when they come, as if enter had been pressed then.
	jump bool

	hits []hits // by pane
}

// hits are one pane's matches.
type hits struct {
	// matches are the matching seqs, in order, among the lines before scanned, and
	// times their times (for the time order of n/N across panes).
	matches, times []int64
	// scanned is the seq up to which the lines that came were searched; -1 while the
	// job searching the ring runs.
	scanned int64
	// disk is set once the lines before the ring (and the long lines in it) have been
	// searched in the logs.
	disk bool
}

// add records a match after the others.
func (h *hits) add(seq, t int64) {
	h.matches = append(h.matches, seq)
	h.times = append(h.times, t)
}

// keyAt is the order key of match i of pane p.
func (h *hits) keyAt(p, i int) key { return key{t: h.times[i], p: p, seq: h.matches[i]} }

// upToDate returns the hits of pane i when its search has seen every line before n,
// so that the lines from n on are matched as they come; else nil.
func (s *search) upToDate(i int, n int64) *hits {
	if s.match == nil || i >= len(s.hits) || s.hits[i].scanned != n {
		return nil
	}
	return &s.hits[i]
}

func newSearch() search {
	in := widget.NewInput("/")
	in.Placeholder = "search all panes (↑ previous query, alt+r regex, alt+c case)"
	return search{input: in}
}

// onlyMatches reports whether only matching lines (and their context) are shown.
func (s *search) onlyMatches() bool { return s.only && s.match != nil }

// context is the number of lines of context around matches.
func (s *search) context() int { return contextSteps[s.ctxStep] }

// matchesOf returns the matches of pane i.
func (s *search) matchesOf(i int) []int64 {
	if i < len(s.hits) {
		return s.hits[i].matches
	}
	return nil
}

// total is the number of matches found, whether the rings are still being searched,
// and whether the logs on disk are.
func (s *search) total() (n int, running, disk bool) {
	for _, h := range s.hits {
		n += len(h.matches)
		running = running || h.scanned < 0
		disk = disk || !h.disk
	}
	return n, running, disk
}

// info describes the search: the query, its mode and the match count.
func (s *search) info(t *themes.Theme) string {
	if s.err != nil {
		return t.Fail.Render("bad regex: " + s.err.Error())
	}
	var flags []string
	if s.regex {
		flags = append(flags, "regex")
	}
	if s.caseSens {
		flags = append(flags, "case")
	}
	if s.only {
		flags = append(flags, fmt.Sprintf("only matches ±%d", s.context()))
	}
	out := ""
	if !s.typing {
		out = t.Match.Render("/"+s.query) + " "
	}
	if s.match != nil {
		n, running, disk := s.total()
		c := plural(n, "match", "matches")
		switch {
		case running:
			c = "searching…"
		case disk:
			c += " · searching the logs…"
		}
		out += t.Muted.Render(c)
	}
	if len(flags) > 0 {
		out += t.Muted.Render(" [" + strings.Join(flags, ", ") + "]")
	}
	return out
}

// begin starts typing a new query in an empty field; the current one stays in force
// (enter on the untouched field keeps it, n/N then walk it) and up recalls it.
func (s *search) begin() {
	s.typing = true
	if s.query != "" {
		s.prev = s.query
	}
	s.input.SetValue("")
	s.input.Focus()
}

// cancel stops typing and drops the query.
func (s *search) cancel() {
	s.typing = false
	s.input.Blur()
	s.query = ""
}

// typed handles a key of the search field; it reports whether the query changed.
func (m *Model) searchTyped(msg tea.Msg) tea.Cmd {
	s := &m.find
	if k, ok := msg.(tea.KeyPressMsg); ok && k.Keystroke() == "enter" {
		s.typing = false
		s.input.Blur()
		if s.match != nil && !s.haveCur {
			cmd := m.nextMatch(false)
			_, running, disk := s.total()
			s.jump = !s.haveCur && (running || disk)
			return cmd
		}
		return nil
	}
	if s.input.Update(msg) {
		s.query = s.input.Value()
		s.haveCur = false
		return m.research()
	}
	return nil
}

// searchAction answers the search actions; while the field is typed in, esc
// cancels the search and up recalls the last query.
func (m *Model) searchAction(action common.ActionName) (tea.Cmd, bool) {
	s := &m.find
	switch {
	case s.typing && action == common.ActBack:
		s.cancel()
		return m.research(), true
	case s.typing && action == common.ActUp:
		return m.recall(), true
	case action == ActSearch:
		s.begin()
	case action == ActNextMatch, action == ActPrevMatch:
		return m.nextMatch(action == ActNextMatch), true
	case action == ActRegex:
		s.regex = !s.regex
		return m.research(), true
	case action == ActCase:
		s.caseSens = !s.caseSens
		return m.research(), true
	case action == ActOnlyMatches:
		s.only = !s.only
		if s.only && s.match == nil {
			return common.Notify("search first (/): only matching lines are shown then"), true
		}
	case action == ActContext:
		s.ctxStep = (s.ctxStep + 1) % len(contextSteps)
	default:
		return nil, false
	}
	return nil, true
}

// recall puts the previous query back in the search field (up, while typing).
func (m *Model) recall() tea.Cmd {
	s := &m.find
	if s.prev == "" {
		return nil
	}
	s.input.SetValue(s.prev)
	if s.query == s.prev {
		return nil
	}
	s.query = s.prev
	s.haveCur = false
	return m.research()
}

// research starts the search of every pane for the current query: the rings first,
// then the lines only the logs hold.
func (m *Model) research() tea.Cmd {
	s := &m.find
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	s.gen++
	s.err = nil
	s.haveCur, s.jump = false, false
	s.hits = make([]hits, len(m.panes))
	if s.query == "" {
		s.match = nil
		return nil
	}
	mt, err := newMatcher(s.query, s.regex, s.caseSens)
	if err != nil {
		s.match, s.err = nil, err
		return nil
	}
	s.match = mt
	job := searchJob{id: m.ID(), gen: s.gen, m: mt, b: m.Ctx.Backend, h: m.h, cores: m.Ctx.Cores, panes: make([]searchPane, len(m.panes))}
	for i, p := range m.panes {
		job.panes[i] = searchPane{role: p.role, k: p.k, filter: p.filter(), snap: p.ring.snapshot(p.ring.first)}
		s.hits[i].scanned = -1 // until the job answers
	}
	ctx, cancel := context.WithCancel(m.Ctx.Ctx)
	s.stop = cancel
	return job.rings(ctx)
}

// searchJob searches every pane off the UI loop: first what the rings held when it
// started (a snapshot each), then, in the logs, the lines before them and the long
// lines they hold cut.
type searchJob struct {
	id  common.ViewID
	gen int
	m   *matcher
	b   common.Backend
	h   spec.Handle
	// cores lends the job's goroutines (one a pane) every processor while it runs.
	cores *common.Cores
	panes []searchPane
}

// searchPane is what a search job reads of one pane.
type searchPane struct {
	role   string
	k      int
	filter *lineFilter // which of the replica's lines are the pane's
	snap   snapshot
	// long are the seqs of the long lines of the snapshot, searched in the logs.
	long []int64
}

// searchMsg is a result of a search job: matching seqs (and their times) of each
// pane, among the lines of its snapshot (disk false: upto is where it ended) or
// among those only the logs hold (disk true).
type searchMsg struct {
	common.ViewID
	gen     int
	disk    bool
	matches [][]int64
	times   [][]int64
	upto    []int64
	done    []bool // by pane: nothing is left to search in the logs
	errs    []error
	// next searches the logs, after the rings.
	next tea.Cmd
}

// rings searches the snapshots, a goroutine per pane, then hands over to the search
// of the logs.
func (j *searchJob) rings(ctx context.Context) tea.Cmd {
	return func() tea.Msg {
		n := len(j.panes)
		res := searchMsg{ViewID: j.id, gen: j.gen, matches: make([][]int64, n), times: make([][]int64, n), upto: make([]int64, n), done: make([]bool, n)}
		release := j.cores.Acquire()
		defer release()
		var wg sync.WaitGroup
		for i := range j.panes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sp := &j.panes[i]
				s := &sp.snap
				res.upto[i] = s.last
				for seq := s.first; seq < s.last; seq++ {
					if (seq-s.first)%searchYield == 0 && ctx.Err() != nil {
						return
					}
					e := s.at(seq)
					switch {
					case e.divider():
					case e.long():
						sp.long = append(sp.long, seq)
					case j.m.match(e.text):
						res.matches[i] = append(res.matches[i], seq)
						res.times[i] = append(res.times[i], e.time)
					}
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return nil
		}
		all := true
		for i, sp := range j.panes {
			res.done[i] = sp.snap.first == 0 && len(sp.long) == 0
			all = all && res.done[i]
		}
		if !all {
			res.next = j.logs(ctx)
		}
		return res
	}
}

// logs searches, in each replica's logs, the lines before its snapshot and the long
// lines in it, one goroutine per replica.
func (j *searchJob) logs(ctx context.Context) tea.Cmd {
	return func() tea.Msg {
		n := len(j.panes)
		res := searchMsg{ViewID: j.id, gen: j.gen, disk: true, matches: make([][]int64, n), times: make([][]int64, n), errs: make([]error, n)}
		release := j.cores.Acquire()
		defer release()
		var wg sync.WaitGroup
		for i := range j.panes {
			sp := &j.panes[i]
			end := sp.snap.first
			if len(sp.long) > 0 {
				end = sp.long[len(sp.long)-1] + 1
			}
			if end == 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				long := sp.long
				res.errs[i] = scanLogs(ctx, j.b, j.h, sp.role, sp.k, sp.filter, func(seq int64, l *sched.Line, div bool) bool {
					if seq >= end {
						return false
					}
					if seq >= sp.snap.first {
						// Only the long lines of the snapshot are left to search.
						for len(long) > 0 && long[0] < seq {
							long = long[1:]
						}
						if len(long) == 0 || long[0] != seq {
							return true
						}
					}
					if div {
						return true
					}
					if e := makeEntry(*l); j.m.matchEntry(&e, l.Text) {
						res.matches[i] = append(res.matches[i], seq)
						res.times[i] = append(res.times[i], e.time)
					}
					return true
				})
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return nil
		}
		return res
	}
}

// searched takes a search job's matches: those of the rings, after which the lines
// that came since are searched as they come, then those of the logs.
func (m *Model) searched(msg searchMsg) tea.Cmd {
	s := &m.find
	if msg.gen != s.gen || s.match == nil {
		return nil
	}
	for i := range m.panes {
		if i >= len(msg.matches) {
			break
		}
		h := &s.hits[i]
		if msg.disk {
			h.matches, h.times = mergeHits(msg.matches[i], msg.times[i], h.matches, h.times)
			h.disk = true
			if err := msg.errs[i]; err != nil {
				s.err = fmt.Errorf("%s: %w", m.panes[i].name(), err)
			}
			continue
		}
		h.matches, h.times = msg.matches[i], msg.times[i]
		h.scanned = msg.upto[i]
		h.disk = msg.done[i]
		m.matchNew(i, h.scanned)
	}
	if !s.jump {
		return msg.next
	}
	var show tea.Cmd
	if !s.haveCur {
		show = m.nextMatch(false)
	}
	_, running, disk := s.total()
	s.jump = !s.haveCur && (running || disk)
	return tea.Batch(msg.next, show)
}

// mergeHits merges two sorted lists of matches (seqs and times), dropping duplicates.
func mergeHits(as, at, bs, bt []int64) (seqs, times []int64) {
	seqs, times = make([]int64, 0, len(as)+len(bs)), make([]int64, 0, len(as)+len(bs))
	i, j := 0, 0
	for i < len(as) || j < len(bs) {
		switch {
		case j == len(bs) || i < len(as) && as[i] < bs[j]:
			seqs, times = append(seqs, as[i]), append(times, at[i])
			i++
		case i == len(as) || bs[j] < as[i]:
			seqs, times = append(seqs, bs[j]), append(times, bt[j])
			j++
		default:
			seqs, times = append(seqs, as[i]), append(times, at[i])
			i++
			j++
		}
	}
	return seqs, times
}

// matchNew searches the lines the ring of pane i got from seq from on, when the
// search is up to date until there.
func (m *Model) matchNew(i int, from int64) {
	p := m.panes[i]
	h := m.find.upToDate(i, from)
	if h == nil {
		return
	}
	for seq := max(from, p.ring.first); seq < p.ring.n; seq++ {
		// A long line that came meanwhile is matched on the text kept.
		if e := p.ring.at(seq); !e.divider() && m.find.match.match(e.text) {
			h.add(seq, e.time)
		}
	}
	h.scanned = p.ring.n
}

// nextMatch moves to the next (or previous) match in time order across the visible
// panes, wrapping around, and shows it, reading it back from the logs if need be.
func (m *Model) nextMatch(forward bool) tea.Cmd {
	s := &m.find
	if s.match == nil {
		return nil
	}
	cur := key{t: -1 << 62}
	if !forward {
		cur = key{t: 1 << 62}
	}
	if s.haveCur {
		cur = s.curKey
	}
	best, found := key{}, false
	pick := func(wrap bool) {
		for _, pi := range m.visible() {
			h := &s.hits[pi]
			if len(h.matches) == 0 {
				continue
			}
			var i int
			switch {
			case wrap && forward:
				i = 0
			case wrap:
				i = len(h.matches) - 1
			case forward:
				// The first match after cur (keys grow with seq within a pane).
				i = sort.Search(len(h.matches), func(x int) bool { return cur.less(h.keyAt(pi, x)) })
			default:
				i = sort.Search(len(h.matches), func(x int) bool { return !h.keyAt(pi, x).less(cur) }) - 1
			}
			if i < 0 || i >= len(h.matches) {
				continue
			}
			kk := h.keyAt(pi, i)
			if !found || forward && kk.less(best) || !forward && best.less(kk) {
				best, found = kk, true
			}
		}
	}
	pick(false)
	if !found {
		pick(true)
	}
	if !found {
		return nil
	}
	s.cur, s.curKey, s.haveCur = ref{best.p, best.seq}, best, true
	return m.show(s.cur, s.curKey.t)
}
