package logs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// Proc identifies a process across pid reuse: its pid plus its start time, in clock
// ticks after boot (field 22 of /proc/PID/stat). A pid alone can name another process
// once the first is gone; the pair cannot.
type Proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// IsZero reports whether p names no process.
func (p Proc) IsZero() bool { return p.PID <= 0 }

// ProcOf returns the identity of the live process pid.
func ProcOf(pid int) (Proc, error) {
	start, state, err := procStat(pid)
	if err != nil {
		return Proc{}, err
	}
	if state == 'Z' || state == 'X' {
		return Proc{}, fmt.Errorf("process %d has exited", pid)
	}
	return Proc{PID: pid, Start: start}, nil
}

// Self returns the identity of the calling process.
func Self() (Proc, error) { return ProcOf(os.Getpid()) }

// Alive reports whether p is still running: its pid exists, has the same start time
// and is not a zombie (an exited child its parent has not reaped yet).
func (p Proc) Alive() bool {
	if p.IsZero() {
		return false
	}
	start, state, err := procStat(p.PID)
	return err == nil && start == p.Start && state != 'Z' && state != 'X'
}

// procStat reads a process's start time and state letter from /proc/PID/stat.
func procStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and ')', so
	// the fields are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	start, err = strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("malformed /proc stat: %w", err)
	}
	return start, fields[0][0], nil
}
