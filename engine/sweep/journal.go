package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
)

// A sweep on disk is a snapshot (sweep.json, of generation Gen) and a journal of the
// changes made since (journal): its first line names the generation it follows, each
// other line is one change, numbered from 1, holding the entries that changed, whole
// (and the sweep's own fields when they changed). A change is one append of one line,
// under the sweep's lock: a few hundred bytes, whatever the size of the sweep; the
// whole-file rewrite it replaces cost 1.4 MB and 30-250 ms per change at 10,000 apps.
//
// Compaction folds the journal into a new snapshot of generation Gen+1 (written whole,
// then renamed over sweep.json) and then replaces the journal by an empty one of
// Gen+1 (renamed too). It happens when the journal outgrows its cap (a quarter of the
// snapshot, at least minCompact), when a change is too large to be worth a line (one
// that touches most entries) and when the order of the entries changes (sweep move).
//
// Crash safety (kill -9 at any moment): a change is written before the queue acts on
// it (an app is marked launching before its launch starts), as with the whole file.
// A record cut short (an unterminated or unreadable last line) is a change that never
// happened: readers stop before it, and the next writer truncates it, with a note in
// queue.log. A compaction cut short between its two renames leaves a snapshot newer
// than the journal: the snapshot holds every change, the journal is ignored and
// replaced at the next write. (No fsync: a crash of the machine may lose the last
// changes, as it did before.)
//
// Readers take no lock: they open the journal, read its generation, then read
// sweep.json; when the two differ a compaction came between, and they read again. A
// Store keeps each sweep it has read with the generation and the journal offset it
// read to: reading it again reads the journal's new lines only, and sweep.json only
// after a compaction. The queue's Store so keeps its sweep in memory.

const (
	journalFile = "journal"
	// maxJournal bounds what is read of a journal: writers compact it long before.
	maxJournal = 2 * maxSweepFile
	// maxJournalHeader bounds the first line of a journal.
	maxJournalHeader = 4 << 10
	// minCompact is the least journal size that triggers a compaction; above it a
	// quarter of the snapshot's size does: a new reader then reads at most 1.25 times
	// the snapshot, and a compaction (the sweep marshalled from memory and written:
	// 5 ms at 10,000 apps) comes once every 1,600 changes or so.
	minCompact = 16 << 10
)

// journalHeader is the first line of a journal.
type journalHeader struct {
	Gen   uint64 `json:"gen"`
	Sweep string `json:"sweep"`
}

// record is one change, one line of a journal.
type record struct {
	Seq uint64 `json:"seq"`
	// Header is the sweep's own fields (its Entries left out), when they changed.
	Header *Sweep `json:"sweep,omitempty"`
	// Entries are the entries that changed, whole, known by their Index.
	Entries []Entry `json:"entries,omitempty"`
}

// cached is a sweep as a Store last read or wrote it.
type cached struct {
	s *Sweep
	// seq is the number of the last record applied; off the journal's bytes applied
	// (the end of its last whole record).
	seq uint64
	off int64
	// journal is false when no journal of s.Gen is on disk (none yet, or one a
	// compaction cut short left behind): the next write compacts.
	journal bool
	// snap is the size of sweep.json; pos the place of each entry by its Index.
	snap int64
	pos  map[int]int
	hdr  []byte // headerJSON(s), for finding what a change changed
}

func newCached(s *Sweep, snap int64) *cached {
	c := &cached{s: s, snap: snap, pos: make(map[int]int, len(s.Entries)), hdr: headerJSON(s)}
	for i := range s.Entries {
		c.pos[s.Entries[i].Index] = i
	}
	return c
}

// clone copies s and its entries (not the slices of an entry or of the header, which
// no change edits in place).
func (s *Sweep) clone() *Sweep {
	c := *s
	c.Entries = slices.Clone(s.Entries)
	return &c
}

// headerJSON is the sweep's own fields, to tell whether a change touched them.
func headerJSON(s *Sweep) []byte {
	h := *s
	h.Entries, h.Gen = nil, 0
	b, _ := json.Marshal(&h)
	return b
}

func entryEqual(a, b *Entry) bool {
	return a.Index == b.Index && a.Name == b.Name && a.Handle == b.Handle && a.State == b.State &&
		a.Error == b.Error && a.Wait == b.Wait && a.CancelRequested == b.CancelRequested && a.GPUs == b.GPUs &&
		a.Stopped == b.Stopped && a.LaunchStarted.Equal(b.LaunchStarted) && a.Launched.Equal(b.Launched) &&
		a.Ended.Equal(b.Ended) && slices.Equal(a.Values, b.Values) && slices.Equal(a.Devices, b.Devices)
}

// apply makes the change of rec to c's sweep.
func (c *cached) apply(rec *record) error {
	for i := range rec.Entries {
		p, ok := c.pos[rec.Entries[i].Index]
		if !ok {
			return fmt.Errorf("change %d: no entry %d", rec.Seq, rec.Entries[i].Index)
		}
		c.s.Entries[p] = rec.Entries[i]
	}
	if rec.Header != nil {
		h := *rec.Header
		h.Entries, h.Gen = c.s.Entries, c.s.Gen
		*c.s = h
		c.hdr = headerJSON(c.s)
	}
	c.seq = rec.Seq
	return nil
}

// openJournal opens dir's journal for reading (or, under the lock, appending),
// refusing a symbolic link or anything but a regular file.
func openJournal(dir string, write bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if write {
		flags = os.O_WRONLY | os.O_APPEND
	}
	path := filepath.Join(dir, journalFile)
	f, err := os.OpenFile(path, flags|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s: a symbolic link, not a regular file", path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readHeader reads the first line of a journal: its generation, and where its
// records start.
func readHeader(f *os.File) (gen uint64, start int64, err error) {
	buf := make([]byte, maxJournalHeader)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	nl := bytes.IndexByte(buf[:n], '\n')
	var h journalHeader
	if nl < 0 {
		return 0, 0, errors.New("journal: no header line")
	}
	if err := json.Unmarshal(buf[:nl], &h); err != nil {
		return 0, 0, fmt.Errorf("journal: bad header line: %w", err)
	}
	return h.Gen, int64(nl + 1), nil
}

// errCorrupt is wrapped when a sweep's files contradict each other or cannot be read
// back (not a write cut short, which is ignored).
var errCorrupt = errors.New("corrupt")

// refresh brings the sweep of dir in the cache up to date with the disk and returns
// it. locked says the caller holds the sweep's lock: a record cut short at the end of
// the journal is then truncated (no writer can be writing it). Callers hold st.mu.
func (st *Store) refresh(dir string, locked bool) (*cached, error) {
	id := filepath.Base(dir)
	for attempt := 0; ; attempt++ {
		c, retry, err := st.refreshOnce(dir, locked, attempt == 2)
		if errors.Is(err, ErrNoSweep) {
			delete(st.cache, id)
			return nil, err // it names the sweep
		}
		if err != nil {
			delete(st.cache, id)
			return nil, fmt.Errorf("sweep %s: %w", id, err)
		}
		if !retry {
			st.cache[id] = c
			return c, nil
		}
	}
}

// refreshOnce is one try of refresh; retry says that a compaction came between the
// reading of the journal and of the snapshot. last accepts a journal older than the
// snapshot: a compaction cut short.
func (st *Store) refreshOnce(dir string, locked, last bool) (c *cached, retry bool, err error) {
	if err := checkDir(dir); err != nil {
		return nil, false, err
	}
	j, err := openJournal(dir, false)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	var gen uint64
	var start int64
	if j != nil {
		defer j.Close()
		if gen, start, err = readHeader(j); err != nil {
			return nil, false, fmt.Errorf("%w: %w", errCorrupt, err)
		}
		if c := st.cache[filepath.Base(dir)]; c != nil && c.journal && c.s.Gen == gen {
			return c, false, st.catchUp(dir, c, j, locked)
		}
	}
	c, err = loadSnapshot(dir)
	if err != nil {
		return nil, false, err
	}
	switch {
	case j == nil: // made before journals, or being created
		return c, false, nil
	case c.s.Gen == gen:
		c.journal, c.off = true, start
		return c, false, st.catchUp(dir, c, j, locked)
	case !last:
		return nil, true, nil
	case c.s.Gen > gen:
		return c, false, nil // the snapshot holds every change of the journal
	}
	return nil, false, fmt.Errorf("%w: journal of generation %d, %s of generation %d", errCorrupt, gen, sweepFile, c.s.Gen)
}

// catchUp applies the records of journal j that c has not seen.
func (st *Store) catchUp(dir string, c *cached, j *os.File, locked bool) error {
	fi, err := j.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	switch {
	case size > maxJournal:
		return fmt.Errorf("journal: %w (%d bytes, the limit is %d)", safefs.ErrTooLarge, size, maxJournal)
	case size < c.off:
		return fmt.Errorf("%w: journal: %d bytes, shorter than the %d read", errCorrupt, size, c.off)
	case size == c.off:
		return nil
	}
	buf := make([]byte, size-c.off)
	n, err := j.ReadAt(buf, c.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	buf = buf[:n]
	for len(buf) > 0 {
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 { // unterminated: being written, or cut short
			return st.tornTail(dir, c, locked, len(buf), "an unterminated record")
		}
		var rec record
		if err := json.Unmarshal(buf[:nl], &rec); err != nil {
			if nl+1 == len(buf) {
				return st.tornTail(dir, c, locked, len(buf), "an unreadable last record")
			}
			return fmt.Errorf("%w: journal: the record at byte %d: %w", errCorrupt, c.off, err)
		}
		if rec.Seq != c.seq+1 {
			return fmt.Errorf("%w: journal: change %d at byte %d follows change %d", errCorrupt, rec.Seq, c.off, c.seq)
		}
		if err := c.apply(&rec); err != nil {
			return fmt.Errorf("%w: journal: %w", errCorrupt, err)
		}
		c.off += int64(nl + 1)
		buf = buf[nl+1:]
	}
	return nil
}

// tornTail deals with n bytes at the end of the journal that are no whole record. A
// reader leaves them (a writer may be writing them); a writer, which holds the lock,
// knows them to be a write cut short: it truncates them and says so in queue.log.
func (st *Store) tornTail(dir string, c *cached, locked bool, n int, what string) error {
	if !locked {
		return nil
	}
	f, err := openJournal(dir, true) // not a path: no link followed
	if err == nil {
		err = f.Truncate(c.off)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("journal: drop %s: %w", what, err)
	}
	note := fmt.Sprintf("%s journal: dropped %s (%d bytes at byte %d), a write cut short by a crash: that change never happened; the sweep is as of change %d\n",
		time.Now().Format(time.RFC3339Nano), what, n, c.off, c.seq)
	if f, err := safefs.OpenAppend(filepath.Join(dir, QueueLog)); err == nil {
		_, _ = f.WriteString(note)
		f.Close()
	}
	return nil
}

// loadSnapshot reads dir's sweep.json.
func loadSnapshot(dir string) (*cached, error) {
	data, err := safefs.ReadFile(filepath.Join(dir, sweepFile), maxSweepFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoSweep, filepath.Base(dir))
	}
	if err != nil {
		return nil, err
	}
	var s Sweep
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w %s: %w", errCorrupt, sweepFile, err)
	}
	return newCached(&s, int64(len(data))), nil
}

// commit writes what changed from c's sweep to work (a changed clone of it). Callers
// hold the lock and st.mu.
func (st *Store) commit(dir string, c *cached, work *Sweep) error {
	if len(work.Entries) != len(c.s.Entries) {
		return st.compact(dir, work)
	}
	rec := record{Seq: c.seq + 1}
	for i := range work.Entries {
		if work.Entries[i].Index != c.s.Entries[i].Index {
			return st.compact(dir, work) // the order changed
		}
		if !entryEqual(&work.Entries[i], &c.s.Entries[i]) {
			rec.Entries = append(rec.Entries, work.Entries[i])
		}
	}
	if hdr := headerJSON(work); !bytes.Equal(hdr, c.hdr) {
		h := *work
		h.Entries, h.Gen = nil, 0
		rec.Header = &h
	}
	return st.write(dir, c, &rec, func() *Sweep { return work })
}

// write appends rec to the journal and applies it to c, or, when the journal is full
// (or rec too large to be worth a line), compacts: whole makes the sweep with rec
// applied. Callers hold the lock and st.mu.
func (st *Store) write(dir string, c *cached, rec *record, whole func() *Sweep) error {
	if rec.Header == nil && len(rec.Entries) == 0 {
		return nil
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	limit := st.compactLimit(c)
	if !c.journal || c.off+int64(len(line)) > limit || int64(len(line)) > limit/4 {
		return st.compact(dir, whole())
	}
	f, err := openJournal(dir, true)
	if err != nil {
		return fmt.Errorf("sweep %s: journal: %w", filepath.Base(dir), err)
	}
	n, err := f.Write(line)
	if err != nil && n > 0 {
		_ = f.Truncate(c.off) // no half record left behind (a full disk)
	}
	if err == nil {
		// The change survives a crash of the machine, as a snapshot does
		// (safefs.WriteFileAtomic); one that cannot be synced is taken back.
		if err = f.Sync(); err != nil {
			_ = f.Truncate(c.off)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sweep %s: write journal: %w", filepath.Base(dir), err)
	}
	c.off += int64(len(line))
	return c.apply(rec)
}

// compactLimit is the journal size at which c's journal is folded into its snapshot.
func (st *Store) compactLimit(c *cached) int64 {
	if st.compactAt > 0 {
		return st.compactAt
	}
	return min(max(c.snap/4, minCompact), maxJournal/2)
}

// compact writes work whole as the new snapshot, of the next generation, and starts
// its journal afresh. Callers hold the lock and st.mu.
func (st *Store) compact(dir string, work *Sweep) error {
	id := filepath.Base(dir)
	old := st.cache[id]
	if old != nil {
		work.Gen = old.s.Gen
	}
	work.Gen++
	data, err := json.Marshal(work)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := safefs.WriteFileAtomic(dir, sweepFile, data); err != nil {
		return fmt.Errorf("sweep %s: write %s: %w", id, sweepFile, err)
	}
	c := newCached(work, int64(len(data)))
	st.cache[id] = c
	hdr, _ := json.Marshal(journalHeader{Gen: work.Gen, Sweep: id})
	hdr = append(hdr, '\n')
	if err := safefs.WriteFileAtomic(dir, journalFile, hdr); err != nil {
		// The change is in the snapshot; the old journal, older than it, is ignored
		// and the next change tries again.
		return nil
	}
	c.journal, c.off = true, int64(len(hdr))
	return nil
}
