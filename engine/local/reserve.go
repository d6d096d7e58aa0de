package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The app's final state must reach the disk even when the disk is full by then (a
// replica filled it): otherwise the app, whose replicas may all have succeeded,
// reads as FAILED "supervisor died" forever. So the supervisor reserves the space at
// the start, in a file of its own, and writes the final state into that file's
// blocks if the ordinary write fails.
const (
	reserveFile = ".state.reserve"
	// minReserve and maxReserve bound the reservation: four times the state at the
	// start (attempts and warnings make it grow), at least 64 KB.
	minReserve = 64 << 10
	maxReserve = 16 << 20
)

// makeReserve reserves the space for the final state. Failing is logged only.
func (sv *supervisor) makeReserve() {
	size := int64(minReserve)
	if b, err := json.Marshal(sv.st); err == nil {
		size = min(max(size, 4*int64(len(b))), maxReserve)
	}
	path := filepath.Join(sv.dir, reserveFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		sv.logf("no space reserved for the final state: %v", err)
		return
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		// No fallocate here: zeros take the space as well.
		_, err = f.Write(make([]byte, size))
		if err != nil {
			sv.logf("no space reserved for the final state: %v", err)
			os.Remove(path)
			return
		}
	}
	sv.reserved = true
}

// saveFinal writes the final state; when the disk is full, into the reserved space.
// It returns why the state could not be written, if it could not.
func (sv *supervisor) saveFinal() error {
	err := sv.st.save(sv.dir)
	if err == nil || !sv.reserved {
		sv.dropReserve()
		return err
	}
	data, jerr := json.MarshalIndent(sv.st, "", "  ")
	if jerr != nil {
		return errors.Join(err, jerr)
	}
	path := filepath.Join(sv.dir, reserveFile)
	f, oerr := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if oerr != nil {
		return errors.Join(err, oerr)
	}
	// In place: the blocks are the file's already.
	_, werr := f.WriteAt(append(data, '\n'), 0)
	if werr == nil {
		werr = f.Truncate(int64(len(data) + 1))
	}
	if werr == nil {
		werr = f.Sync()
	}
	f.Close()
	if werr == nil {
		werr = os.Rename(path, filepath.Join(sv.dir, stateFile))
	}
	if werr != nil {
		return errors.Join(err, fmt.Errorf("write the state into its reserved space: %w", werr))
	}
	sv.reserved = false
	sv.logf("the disk was full: the final state was written into the space reserved for it")
	return nil
}

func (sv *supervisor) dropReserve() {
	if sv.reserved {
		os.Remove(filepath.Join(sv.dir, reserveFile))
		sv.reserved = false
	}
}
