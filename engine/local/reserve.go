package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/spec"
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
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if err != nil {
		// No fallocate here: zeros take the space as well.
		_, err = f.Write(make([]byte, size))
	}
	f.Close()
	if err != nil {
		// Freed first: the zeros may have taken the space the message needs.
		os.Remove(path)
		sv.logf("no space reserved for the final state: %v", err)
		return
	}
	sv.reserved = true
}

// finalFile is a file of the end written beside its name, fsynced, not yet put in
// place (the final state beside state.json, state.prepare; SUCCESS, prepareSuccess),
// or why it could not be.
type finalFile struct {
	p   *safefs.Prepared
	err error
}

// saveFinal puts the final state in place (ff, prepared while the logs were synced);
// when the disk is full, it writes it into the reserved space. It returns why the state
// could not be written, if it could not. The reservation, if unused, is left for
// finalize to drop (after the launcher is told of the end).
func (sv *supervisor) saveFinal(ff finalFile) error {
	err := ff.err
	if err == nil {
		if err = ff.p.Commit(); err != nil {
			err = fmt.Errorf("save app state: %w", err)
		}
	}
	if err == nil || !sv.reserved {
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
	if werr == nil {
		werr = safefs.SyncDir(sv.dir) // the rename on disk, as WriteFileAtomic does
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

// When even the reserved write fails (the directory turned read-only, or the
// reservation could not be made and the disk is full), the supervisor still leaves a
// record of the end it could not write, so that the app does not read as "supervisor
// died" when the supervisor lived and the replicas may have succeeded. The record's
// file is made at the start beside the reservation, its space written, and kept open:
// at the end it is overwritten in place through that descriptor, which needs neither
// a new block nor the directory. A reader that finds the supervisor gone without a
// final state reads it (markGone).
const (
	unsavedFile = ".state.unsaved"
	// unsavedBase and unsavedPerReplica size the record: the reason, the app's
	// verdict and warnings, and each replica's end (about 100 bytes of JSON).
	unsavedBase       = 8 << 10
	unsavedPerReplica = 160
	// maxUnsavedReason bounds the reason kept in the record.
	maxUnsavedReason = 1 << 10
)

// unsaved is the record of a final state that could not be written: why, and what it
// said.
type unsaved struct {
	Reason   string           `json:"reason"`
	State    spec.AppState    `json:"state"`
	Msg      string           `json:"msg,omitempty"`
	Ended    time.Time        `json:"ended,omitzero"`
	Warnings []string         `json:"warnings,omitempty"`
	Replicas []unsavedReplica `json:"replicas,omitempty"`
}

// unsavedReplica is one replica's end in an unsaved record.
type unsavedReplica struct {
	Role     string        `json:"role"`
	ID       int           `json:"id"`
	State    spec.AppState `json:"state"`
	ExitCode *int          `json:"exit_code,omitempty"`
	Ended    time.Time     `json:"ended,omitzero"`
}

// makeUnsaved creates the record's file, its space written with zeros. Failing is
// logged only.
func (sv *supervisor) makeUnsaved() {
	size := unsavedBase + unsavedPerReplica*len(sv.all)
	path := filepath.Join(sv.dir, unsavedFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		sv.logf("no space kept to record a final state that cannot be written: %v", err)
		return
	}
	// Written rather than fallocated: real blocks, which an overwrite never needs
	// again.
	if _, err := f.Write(make([]byte, size)); err != nil {
		f.Close()
		os.Remove(path)
		sv.logf("no space kept to record a final state that cannot be written: %v", err)
		return
	}
	sv.unsaved, sv.unsavedSize = f, size
}

// recordUnsaved records that the final state could not be written, and why, in the
// record's file.
func (sv *supervisor) recordUnsaved(why error) {
	if sv.unsaved == nil {
		return
	}
	reason := strings.Join(causes(why), "; ")
	if len(reason) > maxUnsavedReason {
		reason = reason[:maxUnsavedReason]
	}
	u := unsaved{Reason: reason, State: sv.st.State, Msg: sv.st.Msg, Ended: sv.st.Ended, Warnings: sv.st.Warnings}
	for _, r := range sv.all {
		u.Replicas = append(u.Replicas, unsavedReplica{Role: r.st.Role, ID: r.st.ID, State: r.st.State, ExitCode: r.st.ExitCode, Ended: r.st.Ended})
	}
	data, err := json.Marshal(u)
	if err == nil && len(data) > sv.unsavedSize {
		// Too many warnings to fit: the reason and the replicas' ends matter more.
		u.Warnings = nil
		data, err = json.Marshal(u)
	}
	if err == nil && len(data) > sv.unsavedSize {
		u.Replicas, u.Msg = nil, ""
		data, err = json.Marshal(u)
	}
	if err == nil {
		_, err = sv.unsaved.WriteAt(data, 0)
	}
	if err == nil {
		err = sv.unsaved.Sync()
	}
	if err != nil {
		sv.logf("the final state could not be recorded either: %v", err)
	}
	sv.unsaved.Close()
	sv.unsaved = nil
}

// dropUnsaved removes the record's file: the final state was written, or the app
// was deleted.
func (sv *supervisor) dropUnsaved() {
	if sv.unsaved != nil {
		sv.unsaved.Close()
		sv.unsaved = nil
		os.Remove(filepath.Join(sv.dir, unsavedFile))
	}
}

// causes lists the distinct innermost messages of err and of the errors it joins:
// "no space left on device" rather than the paths and operations that led to it.
func causes(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if c := rootCause(err); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	walk(err)
	return out
}

// readUnsaved reads the record a supervisor left when it could not write the app's
// final state; false when there is none (the supervisor did not get that far, or
// wrote the state).
func readUnsaved(appDir string) (*unsaved, bool) {
	data, err := safefs.ReadFile(filepath.Join(appDir, unsavedFile), unsavedBase+unsavedPerReplica*spec.MaxReplicas)
	if err != nil {
		return nil, false
	}
	data = bytes.TrimRight(data, "\x00")
	var u unsaved
	if len(data) == 0 || json.Unmarshal(data, &u) != nil || u.Reason == "" {
		return nil, false
	}
	return &u, true
}

// markGone sets st, whose supervisor is gone without writing a final state, to
// FAILED: with why the supervisor could not write it and what it was, when the
// supervisor recorded that, else "supervisor died".
func markGone(appDir string, st *state) {
	if n := countLeftovers(appDir, st); n > 0 {
		defer func() {
			st.Warnings = append(st.Warnings, fmt.Sprintf("%s of the app still running though its supervisor is gone: wick cancel stops them", processes(n)))
		}()
	}
	u, ok := readUnsaved(appDir)
	if !ok {
		markDead(st, reasonDied)
		return
	}
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			r := &st.Roles[i].Replicas[j]
			for _, e := range u.Replicas {
				if e.Role == r.Role && e.ID == r.ID {
					r.State, r.ExitCode, r.Ended = e.State, e.ExitCode, e.Ended
				}
			}
		}
	}
	if !u.Ended.IsZero() {
		st.Ended = u.Ended
	}
	if len(u.Warnings) > 0 {
		st.Warnings = u.Warnings
	}
	markDead(st, unsavedReason(u))
	st.StructuredError = st.Msg
}

// maxExitCodesShown bounds the exit codes an unsaved end's message lists.
const maxExitCodesShown = 8

// unsavedReason is the message of an app whose supervisor could not write its final
// state: "supervisor could not write its state: REASON (the app had ended STATE[:
// MSG]; exit codes: ROLE/K CODE, ...)".
func unsavedReason(u *unsaved) string {
	var b strings.Builder
	fmt.Fprintf(&b, "supervisor could not write its state: %s (the app had ended %s", u.Reason, u.State)
	if u.State == spec.Failed && u.Msg != "" {
		b.WriteString(": " + u.Msg)
	}
	var codes []string
	known := 0
	for _, r := range u.Replicas {
		if r.ExitCode == nil {
			continue
		}
		known++
		if len(codes) < maxExitCodesShown {
			codes = append(codes, fmt.Sprintf("%s/%d %d", r.Role, r.ID, *r.ExitCode))
		}
	}
	if known > len(codes) {
		codes = append(codes, fmt.Sprintf("and %d more", known-len(codes)))
	}
	if len(codes) > 0 {
		b.WriteString("; exit codes: " + strings.Join(codes, ", "))
	}
	b.WriteString(")")
	return b.String()
}
