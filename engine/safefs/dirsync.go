package safefs

import "sync"

// DirSyncer replaces files in one directory as WriteFileAtomic does (temporary
// file, fsync, rename, fsync of the directory), with the directory's fsync done by a
// goroutine of its own: a save returns once its rename is done, and one fsync of the
// directory covers every rename done before it began, however many. A save is
// durable once that fsync returns: Wait (or Flush) says when, and whoever reports or
// acts on a save's durability waits for it first. It is for a file saved often on a
// path that must stay fast (a running app's state): the renames of one transition
// share a single directory fsync, and none waits for it unless it must.
type DirSyncer struct {
	fsys fileSys
	dir  string

	mu   sync.Mutex
	cond *sync.Cond
	// renamed counts the renames done; synced is the count the last fsync of the
	// directory covered (every rename done before it began).
	renamed, synced uint64
	busy            bool // the syncing goroutine runs
	// failed is the last fsync that failed, and the renames it covered: (failFrom,
	// failTo].
	failed           error
	failFrom, failTo uint64
}

// NewDirSyncer returns a DirSyncer of dir.
func NewDirSyncer(dir string) *DirSyncer { return newDirSyncer(osFS{}, dir) }

func newDirSyncer(fsys fileSys, dir string) *DirSyncer {
	s := &DirSyncer{fsys: fsys, dir: dir}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Replace replaces dir/name with data, as WriteFileAtomic does, and returns once it
// is renamed into place (readers and a crash of the process see the old file or the
// new one, whole), with the save's number for Wait. The fsync of the directory that
// makes the rename survive a crash of the machine is started, not waited for.
func (s *DirSyncer) Replace(name string, data []byte) (uint64, error) {
	if err := writeFileAtomic(s.fsys, s.dir, name, data, false); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renamed++
	if !s.busy {
		s.busy = true
		go s.run()
	}
	return s.renamed, nil
}

// run fsyncs the directory until every rename done is covered.
func (s *DirSyncer) run() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.synced < s.renamed {
		from, to := s.synced, s.renamed
		s.mu.Unlock()
		err := s.fsys.SyncDir(s.dir)
		s.mu.Lock()
		if err != nil {
			s.failed, s.failFrom, s.failTo = err, from, to
		}
		s.synced = to
		s.cond.Broadcast()
	}
	s.busy = false
}

// Wait blocks until the save numbered n (Replace's) is durable: the fsync of the
// directory that covers its rename has returned. It returns that fsync's error.
func (s *DirSyncer) Wait(n uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.synced < n {
		s.cond.Wait()
	}
	if s.failed != nil && n > s.failFrom && n <= s.failTo {
		return s.failed
	}
	return nil
}

// Flush waits until every save done so far is durable (Wait of the last one).
func (s *DirSyncer) Flush() error {
	s.mu.Lock()
	n := s.renamed
	s.mu.Unlock()
	return s.Wait(n)
}
