package logs

import (
	"fmt"
	"math"
)

// Nothing read from a log directory is trusted: a replica can write into its own log
// directory (it is where $TORCHELASTIC_ERROR_FILE points), so the index may hold
// anything. Every record is checked against the size of combined.log and against the
// record before it before a byte is read on its word; an index that fails is
// abandoned for the stored bytes (see Iterator.fallBack).

// badRecord says why record r cannot be one the writer wrote, judged on its own:
// combSize is the size of combined.log, read after the record. "" means it may be.
func badRecord(r *record, combSize int64) string {
	if r.flags&^(flagPartial|flagEnd|flagStream|flagGap) != 0 {
		return fmt.Sprintf("unknown flags %#x", r.flags)
	}
	if r.end() {
		return ""
	}
	switch {
	case r.stream != codeStdout && r.stream != codeStderr:
		return fmt.Sprintf("unknown stream %d", r.stream)
	case r.flags&flagGap != 0:
		// Lines in no file: no bytes, anywhere.
		if r.flags != flagGap || r.length != 0 || r.lines <= 0 || r.streamOff < 0 || r.combOff < 0 || r.combOff > combSize {
			return fmt.Sprintf("a gap of %d lines, %d bytes, flags %#x", r.lines, r.length, r.flags)
		}
		return ""
	case r.length <= 0:
		return fmt.Sprintf("length %d", r.length)
	case r.combOff < 0 || r.streamOff < 0 || r.streamOff > math.MaxInt64-r.length:
		return fmt.Sprintf("offset %d", r.combOff)
	case r.combOff > combSize || r.inComb() && r.length > combSize-r.combOff:
		return fmt.Sprintf("%d bytes at offset %d, past the end of %s (%d bytes)", r.length, r.combOff, CombinedFile, combSize)
	case r.lines <= 0 || r.lines > r.length:
		return fmt.Sprintf("%d lines in %d bytes", r.lines, r.length)
	case r.partial() && r.lines != 1:
		return fmt.Sprintf("a partial run of %d lines", r.lines)
	}
	return ""
}

// badNext says why record r cannot follow record prev in the index; "" means it may.
// Both passed badRecord.
func badNext(prev, r *record) string {
	if prev.end() {
		return "a record after the end mark"
	}
	if r.time < prev.time {
		return "time goes backwards"
	}
	if r.end() {
		return ""
	}
	// Runs follow each other in combined.log; a partial run is followed by a newline
	// that no run holds (which reconcile may have found missing). A run in its
	// stream's file only, or a gap, takes no room there.
	end := prev.combOff
	if prev.inComb() {
		end += prev.length
	}
	if r.combOff < end || r.combOff > end+1 || r.combOff == end+1 && !(prev.partial() && prev.inComb()) {
		return fmt.Sprintf("offset %d where the run before ends at %d", r.combOff, end)
	}
	return ""
}

// damage is an index found damaged: which record (counted from 1) and why.
type damage struct {
	rec int64 // 0-based number of the bad record
	why string
}

func (d *damage) String() string {
	return fmt.Sprintf("index damaged at record %d (%s)", d.rec+1, d.why)
}
