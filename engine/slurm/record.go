package slurm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// maxRecord bounds a record file: an AppDef, a script and a status are a few KB, a
// large app a few hundred.
const maxRecord = 16 << 20

// record is what wick keeps of a job it submitted, under StateDir/slurm/jobs/JOBID.json.
type record struct {
	// Ended says Last is the job's end and slurmctld no longer holds the job: it said
	// so (or holds another job under its id) once the job had ended. A purged job
	// cannot be requeued, so nothing can change that status any more, and status
	// answers from Last without asking Slurm (a job slurmctld still holds may be
	// requeued, even once it has completed, so it is asked every time). It is the
	// record's first field, always written, so that a reader learns it from the
	// file's first key (endedRecord) without decoding the rest.
	Ended     bool              `json:"ended"`
	JobID     string            `json:"job_id"`
	Session   string            `json:"session"`
	App       *spec.AppDef      `json:"app"`
	Cfg       map[string]string `json:"cfg,omitempty"`
	JobDir    string            `json:"job_dir"`
	BatchLog  string            `json:"batch_log"`
	Replicas  []Replica         `json:"replicas"`
	Script    []string          `json:"script"`
	Submitted time.Time         `json:"submitted"`
	// Last is the last status seen from Slurm, for when Slurm has forgotten the job.
	Last *spec.AppStatus `json:"last,omitempty"`
	// Seen is when Last was seen.
	Seen time.Time `json:"seen,omitzero"`
}

// ended reports whether the record holds the job's last status for good (Ended).
func (r *record) ended() bool {
	return r != nil && r.Ended && r.Last != nil && r.Last.State.Terminal()
}

// validJobID accepts Slurm job ids: digits only, so an id can never name another path.
func validJobID(id string) error {
	if id == "" || len(id) > 20 {
		return fmt.Errorf("%w: %q is not a Slurm job id", sched.ErrNotFound, id)
	}
	for _, c := range []byte(id) {
		if c < '0' || c > '9' {
			return fmt.Errorf("%w: %q is not a Slurm job id (want digits)", sched.ErrNotFound, id)
		}
	}
	return nil
}

func (s *Scheduler) jobsDir() string { return filepath.Join(s.cfg.StateDir, "slurm", "jobs") }

func (s *Scheduler) recordPath(jobID string) string {
	return filepath.Join(s.jobsDir(), jobID+".json")
}

// loadRecord reads the record of a job, or returns (nil, nil) when there is none.
func (s *Scheduler) loadRecord(jobID string) (*record, error) {
	b, err := s.readRecord(jobID)
	if b == nil || err != nil {
		return nil, err
	}
	return decodeRecord(jobID, b)
}

// readRecord reads the bytes of a job's record, or returns (nil, nil) when there is
// none.
func (s *Scheduler) readRecord(jobID string) ([]byte, error) {
	if s.cfg.StateDir == "" {
		return nil, nil
	}
	b, err := readBounded(s.recordPath(jobID), maxRecord)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: record of job %s: %w", jobID, err)
	}
	return b, nil
}

// decodeRecord decodes the record of a job read by readRecord. (Its first decode in a
// process costs about 0.3 ms: encoding/json works out the AppDef's and the status's
// types then.)
func decodeRecord(jobID string, b []byte) (*record, error) {
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("slurm: record of job %s: %w", jobID, err)
	}
	if rec.JobID != jobID || rec.App == nil {
		return nil, fmt.Errorf("slurm: record of job %s is not one", jobID)
	}
	return &rec, nil
}

// endedRecord reports whether a record's bytes say, in their first key, that the job
// has ended for good (record.Ended). It reads two tokens, whatever the record's size;
// a record written before Ended was first says no, and the status written next puts
// it first.
func endedRecord(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	if t, err := dec.Token(); err != nil || t != "ended" {
		return false
	}
	t, err := dec.Token()
	return err == nil && t == true
}

// saveRecord writes a record atomically (temp file + rename), private to the user.
func (s *Scheduler) saveRecord(rec *record) error {
	if s.cfg.StateDir == "" {
		return nil
	}
	dir := s.jobsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("slurm: encoding the record of job %s: %w", rec.JobID, err)
	}
	f, err := os.CreateTemp(dir, "."+rec.JobID+".*.tmp")
	if err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync() // its data on disk before its name (see safefs.WriteFileAtomic)
	}
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("slurm: writing the record of job %s: %w", rec.JobID, err)
	}
	if err := os.Rename(f.Name(), s.recordPath(rec.JobID)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("slurm: %w", err)
	}
	if err := safefs.SyncDir(dir); err != nil {
		return fmt.Errorf("slurm: the record of job %s: %w", rec.JobID, err)
	}
	return nil
}

// recordIDs lists the job ids wick has records of.
func (s *Scheduler) recordIDs() ([]string, error) {
	if s.cfg.StateDir == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(s.jobsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	var ids []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && validJobID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// readBounded reads a whole file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && n < len(b) {
		return nil, err
	}
	return b[:n], nil
}
