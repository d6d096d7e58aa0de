package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// journalSweep creates a sweep of n queued apps in a new WICK_HOME and returns a
// Store on it (as one process would have) and the sweep's directory.
func journalSweep(t *testing.T, n int) (*Store, *Sweep, string) {
	t.Helper()
	store := NewStore(t.TempDir())
	s := &Sweep{ID: NewID(), Created: time.Now(), Component: "demo.train", Scheduler: "local_cwd", Session: "wick",
		Names: []string{"x"}, MaxParallel: 2}
	for i := range n {
		s.Entries = append(s.Entries, Entry{Index: i, Values: []string{fmt.Sprint(i)}, Name: fmt.Sprint("app", i),
			Handle: fmt.Sprintf("local_cwd://wick/app%d", i), State: Queued})
	}
	dir, err := store.Create(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return store, s, dir
}

// other is a Store of the same WICK_HOME, with nothing read yet: another process.
func other(st *Store) *Store { return NewStore(filepath.Dir(st.dir)) }

// launch marks entry k launched, as the queue does.
func launch(t *testing.T, st *Store, id string, k int) {
	t.Helper()
	if err := st.Change(id, func(s *Sweep, edit func(int) *Entry) error {
		e := edit(k)
		e.State, e.Launched = Launched, time.Now()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// statesOf is the state of each entry, by index.
func statesOf(t *testing.T, st *Store, id string) string {
	t.Helper()
	s, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	byIndex := make([]string, len(s.Entries))
	for _, e := range s.Entries {
		byIndex[e.Index] = string(e.State)
	}
	return strings.Join(byIndex, " ")
}

func want(n, launched int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(Queued)
		if i < launched {
			out[i] = string(Launched)
		}
	}
	return strings.Join(out, " ")
}

// TestJournalChangesAreSeenByEveryReader: changes made by one Store are seen by a new
// Store (a new process) and by one that read the sweep before (the UI), across
// compactions and a reorder; the journal stays under its cap.
func TestJournalChangesAreSeenByEveryReader(t *testing.T) {
	store, s, dir := journalSweep(t, 50)
	store.compactAt = 2 << 10
	cachedReader := other(store)
	for k := range 50 {
		launch(t, store, s.ID, k)
		if got := statesOf(t, cachedReader, s.ID); got != want(50, k+1) {
			t.Fatalf("after %d changes the reader that read before sees %s", k+1, got)
		}
		if fi, err := os.Stat(filepath.Join(dir, journalFile)); err != nil || fi.Size() > store.compactAt {
			t.Fatalf("journal: %v, over its cap of %d bytes", err, store.compactAt)
		}
	}
	if got := statesOf(t, other(store), s.ID); got != want(50, 50) {
		t.Fatalf("a new reader sees %s", got)
	}
	fresh, err := other(store).Load(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Gen < 3 {
		t.Errorf("generation %d after 50 changes with a 2 KB cap: no compaction", fresh.Gen)
	}
	// The header (the queue's process) and a reorder, made by yet another Store.
	w2 := other(store)
	if err := w2.Update(s.ID, func(s *Sweep) error { s.Queue.PID = 42; return nil }); err != nil {
		t.Fatal(err)
	}
	store2, s2, _ := journalSweep(t, 4)
	if err := store2.Update(s2.ID, func(s *Sweep) error { return s.Move("local_cwd://wick/app3", 1) }); err != nil {
		t.Fatal(err)
	}
	if got, _ := cachedReader.Load(s.ID); got.Queue.PID != 42 {
		t.Errorf("the queue's pid was not seen: %+v", got.Queue)
	}
	got, _ := other(store2).Load(s2.ID)
	var order []int
	for _, e := range got.Entries {
		order = append(order, e.Index)
	}
	if fmt.Sprint(order) != "[3 0 1 2]" {
		t.Errorf("order after a move: %v", order)
	}
}

// TestJournalTornTailIsIgnored cuts the journal at every byte of its last change (a
// write cut short by a crash): readers see the sweep as before that change, the next
// writer drops the cut record with a note in queue.log and appends after it, and
// nothing else is lost. Damage before the last record is an error, not a guess.
func TestJournalTornTailIsIgnored(t *testing.T) {
	store, s, dir := journalSweep(t, 5)
	for k := range 3 {
		launch(t, store, s.ID, k)
	}
	jpath := filepath.Join(dir, journalFile)
	full, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	for cut := lastStart; cut < len(full); cut++ {
		if err := os.WriteFile(jpath, full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		if got := statesOf(t, other(store), s.ID); got != want(5, 2) {
			t.Fatalf("cut at %d of %d: a reader sees %s", cut, len(full), got)
		}
	}
	// A writer after the crash: the cut record goes, its own change is kept.
	w := other(store)
	launch(t, w, s.ID, 4)
	if got := statesOf(t, other(store), s.ID); got != "launched launched queued queued launched" {
		t.Errorf("after the next change: %s", got)
	}
	log, _ := os.ReadFile(filepath.Join(dir, QueueLog))
	if !strings.Contains(string(log), "journal: dropped an unterminated record") || !strings.Contains(string(log), "a write cut short by a crash") {
		t.Errorf("no note in queue.log:\n%s", log)
	}
	// A whole line of garbage at the end (zeros a crash of the machine left) too.
	data, _ := os.ReadFile(jpath)
	if err := os.WriteFile(jpath, append(data, "\x00\x00\x00\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := statesOf(t, other(store), s.ID); got != "launched launched queued queued launched" {
		t.Errorf("with a garbage last line: %s", got)
	}
	launch(t, other(store), s.ID, 3)
	if log, _ := os.ReadFile(filepath.Join(dir, QueueLog)); !strings.Contains(string(log), "dropped an unreadable last record") {
		t.Errorf("no note of the unreadable record:\n%s", log)
	}
	// Garbage before the last record is not a torn write.
	data, _ = os.ReadFile(jpath)
	lines := bytes.SplitAfter(data, []byte("\n"))
	bad := bytes.Join([][]byte{lines[0], lines[1], []byte("{garbage\n"), bytes.Join(lines[2:], nil)}, nil)
	if err := os.WriteFile(jpath, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := other(store).Load(s.ID); err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), s.ID) {
		t.Errorf("a damaged middle record: %v", err)
	}
}

// TestJournalCompactionCutShort: a compaction killed between its two renames leaves
// a snapshot newer than the journal; the snapshot holds every change, the journal is
// ignored, and the next change starts a journal of the snapshot's generation.
func TestJournalCompactionCutShort(t *testing.T) {
	store, s, dir := journalSweep(t, 5)
	launch(t, store, s.ID, 0)
	oldJournal, err := os.ReadFile(filepath.Join(dir, journalFile))
	if err != nil {
		t.Fatal(err)
	}
	launch(t, store, s.ID, 1)
	store.mu.Lock()
	err = store.compact(dir, store.cache[s.ID].s.clone())
	store.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	// Put back the journal of the generation before: as if the second rename never ran.
	if err := os.WriteFile(filepath.Join(dir, journalFile), oldJournal, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := statesOf(t, other(store), s.ID); got != want(5, 2) {
		t.Fatalf("after a cut compaction: %s", got)
	}
	launch(t, other(store), s.ID, 2)
	if got := statesOf(t, other(store), s.ID); got != want(5, 3) {
		t.Fatalf("after the next change: %s", got)
	}
	if got := statesOf(t, store, s.ID); got != want(5, 3) {
		t.Fatalf("the first Store, which had compacted: %s", got)
	}
}

// TestJournalFilesArePrivateAndNotFollowed: the sweep's files are 0600 in a 0700
// directory, and a symbolic link put in place of the journal is refused, by readers
// and writers, without touching what it points to.
func TestJournalFilesArePrivateAndNotFollowed(t *testing.T) {
	store, s, dir := journalSweep(t, 3)
	store.compactAt = 600
	for k := range 3 {
		launch(t, store, s.ID, k) // a compaction or two on the way
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("sweep directory: %v %v", fi.Mode(), err)
	}
	for _, name := range []string{sweepFile, journalFile, lockFile, plansFile} {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v", name, fi.Mode(), err)
		}
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("theirs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(dir, journalFile)
	if err := os.Remove(jpath); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, jpath); err != nil {
		t.Fatal(err)
	}
	if _, err := other(store).Load(s.ID); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a reader through a symlinked journal: %v", err)
	}
	if err := other(store).Update(s.ID, func(s *Sweep) error { s.Entries[0].Error = "x"; return nil }); err == nil {
		t.Error("a writer wrote through a symlinked journal")
	}
	if data, _ := os.ReadFile(target); string(data) != "theirs\n" {
		t.Errorf("the link's target was changed: %q", data)
	}
	// A sweep directory that is a link to another sweep's: refused too.
	_, s2, dir2 := journalSweep(t, 1)
	link := filepath.Join(filepath.Dir(dir), s2.ID+"x")
	if err := os.Symlink(dir2, link); err != nil {
		t.Fatal(err)
	}
	id := filepath.Base(link)
	if _, err := other(store).Load(id); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symlinked sweep directory read: %v", err)
	}
	if err := other(store).Update(id, func(s *Sweep) error { s.MaxParallel = 9; return nil }); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symlinked sweep directory written: %v", err)
	}
	all, _ := other(store).All()
	for _, sw := range all {
		if sw.ID == id || sw.ID == s2.ID {
			t.Errorf("All lists the sweep behind the link: %s", sw.ID)
		}
	}
}

// TestJournalConcurrentWritersAndReaders: two Stores (two processes) change entries
// at once while readers read: each writer sees the other's changes before writing
// (none is lost), and every state a reader sees is one that was (the apps launched
// in order, never fewer than before).
func TestJournalConcurrentWritersAndReaders(t *testing.T) {
	const n = 200
	store, s, _ := journalSweep(t, n)
	w1, w2 := other(store), other(store)
	w1.compactAt, w2.compactAt = 8<<10, 8<<10
	// w1 launches the even apps in order, w2 the odd ones, each after the other's
	// previous one: together, in order.
	turn := make([]chan struct{}, n+1)
	for i := range turn {
		turn[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for w, st := range []*Store{w1, w2} {
		wg.Go(func() {
			for k := w; k < n; k += 2 {
				if k > 0 {
					<-turn[k]
				}
				launch(t, st, s.ID, k)
				close(turn[k+1])
			}
		})
	}
	done := make(chan struct{})
	var rg sync.WaitGroup
	for _, cachedReader := range []bool{false, true} {
		rg.Go(func() {
			rd := other(store)
			last := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				if !cachedReader {
					rd = other(store)
				}
				got, err := rd.Load(s.ID)
				if err != nil {
					t.Errorf("reader: %v", err)
					return
				}
				m := 0
				for m < n && got.Entries[m].State == Launched {
					m++
				}
				for _, e := range got.Entries[m:] {
					if e.State != Queued {
						t.Errorf("reader saw app %d launched before app %d", e.Index, m)
						return
					}
				}
				if cachedReader && m < last {
					t.Errorf("reader saw %d apps launched, then %d", last, m)
					return
				}
				last = m
			}
		})
	}
	wg.Wait()
	close(done)
	rg.Wait()
	if got := statesOf(t, other(store), s.ID); got != want(n, n) {
		t.Errorf("at the end: %s", got)
	}
}

// TestJournalRecordsAreSmall: a change of one app of a 10,000-app sweep is one line
// of a few hundred bytes, not the sweep.
func TestJournalRecordsAreSmall(t *testing.T) {
	store, s, dir := journalSweep(t, 10_000)
	before, _ := os.Stat(filepath.Join(dir, journalFile))
	launch(t, store, s.ID, 9_999)
	after, _ := os.Stat(filepath.Join(dir, journalFile))
	grew := after.Size() - before.Size()
	if grew <= 0 || grew > 512 {
		t.Errorf("one change grew the journal by %d bytes", grew)
	}
	data, _ := os.ReadFile(filepath.Join(dir, journalFile))
	var rec record
	line := bytes.TrimSpace(data[bytes.IndexByte(data, '\n')+1:])
	if err := json.Unmarshal(line, &rec); err != nil || len(rec.Entries) != 1 || rec.Entries[0].Index != 9_999 {
		t.Errorf("the record: %v %s", err, line)
	}
}

// TestSweepOfAnOlderWick: a sweep written before journals (sweep.json alone, no
// generation) is read as it is, and its first change starts its journal.
func TestSweepOfAnOlderWick(t *testing.T) {
	store, s, dir := journalSweep(t, 3)
	data, err := os.ReadFile(filepath.Join(dir, sweepFile))
	if err != nil {
		t.Fatal(err)
	}
	var old map[string]any
	if err := json.Unmarshal(data, &old); err != nil {
		t.Fatal(err)
	}
	delete(old, "gen")
	old["version"] = 1
	data, _ = json.Marshal(old)
	if err := os.WriteFile(filepath.Join(dir, sweepFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, journalFile)); err != nil {
		t.Fatal(err)
	}
	if got := statesOf(t, other(store), s.ID); got != want(3, 0) {
		t.Fatalf("an older sweep reads as %s", got)
	}
	launch(t, other(store), s.ID, 0)
	launch(t, other(store), s.ID, 1)
	if got := statesOf(t, other(store), s.ID); got != want(3, 2) {
		t.Fatalf("after two changes: %s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, journalFile)); err != nil {
		t.Errorf("no journal after a change: %v", err)
	}
}

// TestPlanReadsOneApp: the plan of one app is read alone (wick status of a queued
// app), from the sweep's plans.jsonl or from the plans.json of an older sweep.
func TestPlanReadsOneApp(t *testing.T) {
	store := NewStore(t.TempDir())
	s := &Sweep{ID: NewID(), Created: time.Now(), Scheduler: "local_cwd", Names: []string{"x"}}
	var plans []Plan
	for i := range 3 {
		id := fmt.Sprint("app", i)
		s.Entries = append(s.Entries, Entry{Index: i, Handle: "local_cwd://wick/" + id, State: Queued})
		plans = append(plans, Plan{Scheduler: "local_cwd", AppID: id, App: &spec.AppDef{Name: id}})
	}
	dir, err := store.Create(s, plans)
	if err != nil {
		t.Fatal(err)
	}
	check := func(how string) {
		t.Helper()
		for i := range 3 {
			p, err := store.Plan(s.ID, i)
			if err != nil || p.AppID != fmt.Sprint("app", i) || p.App.Name != p.AppID {
				t.Errorf("%s: plan %d: %v %+v", how, i, err, p)
			}
		}
		if _, err := store.Plan(s.ID, 3); err == nil || !strings.Contains(err.Error(), "no plan of app 3") {
			t.Errorf("%s: plan 3 of 3: %v", how, err)
		}
		if all, err := store.Plans(s.ID); err != nil || len(all) != 3 || all[2].AppID != "app2" {
			t.Errorf("%s: plans: %v %d", how, err, len(all))
		}
	}
	check("plans.jsonl")
	old, _ := json.Marshal(plans)
	if err := os.WriteFile(filepath.Join(dir, oldPlansFile), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, plansFile)); err != nil {
		t.Fatal(err)
	}
	check("plans.json")
}

// FuzzJournalTail: whatever follows a journal's header (a damaged disk, another
// program), reading the sweep and writing it after never panics, and a read that
// succeeds holds the sweep's apps, each once.
func FuzzJournalTail(f *testing.F) {
	f.Add([]byte(`{"seq":1,"entries":[{"index":1,"state":"launched"}]}` + "\n"))
	f.Add([]byte(`{"seq":1,"sweep":{"id":"x","max_parallel":3}}` + "\n" + `{"seq":2,"entries":[{"index":0}]}`))
	f.Add([]byte(`{"seq":2}` + "\n"))
	f.Add([]byte(`{"seq":1,"entries":[{"index":7}]}` + "\n"))
	f.Add([]byte("\x00\x00\n{"))
	f.Fuzz(func(t *testing.T, tail []byte) {
		store, s, dir := journalSweep(t, 3)
		jpath := filepath.Join(dir, journalFile)
		head, err := os.ReadFile(jpath)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jpath, append(head, tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		check := func() {
			got, err := other(store).Load(s.ID)
			if err != nil {
				return
			}
			seen := map[int]bool{}
			for _, e := range got.Entries {
				if seen[e.Index] || e.Index < 0 || e.Index > 2 {
					t.Fatalf("entries %+v", got.Entries)
				}
				seen[e.Index] = true
			}
			if len(seen) != 3 {
				t.Fatalf("entries %+v", got.Entries)
			}
		}
		check()
		_ = other(store).Change(s.ID, func(s *Sweep, edit func(int) *Entry) error {
			edit(2).Error = "x"
			return nil
		})
		check()
	})
}
