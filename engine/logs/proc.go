package logs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// Proc identifies a process across pid reuse and reboots: its pid, its start time in
// clock ticks after boot (field 22 of /proc/PID/stat), and the boot it runs in. A pid
// alone can name another process once the first is gone; pid and start time can too
// after a reboot (the same services start in the same order, at the same tick), which
// the boot's id tells apart. A Proc recorded without a boot id (by an older wick, or
// where the kernel has none) is judged by pid and start time alone.
type Proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot,omitempty"`
}

// bootIDFile holds the kernel's random id of the current boot (random(4)).
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// BootID returns the id of the current boot, "" where the kernel has none.
var BootID = sync.OnceValue(func() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil || len(b) > 64 {
		return ""
	}
	return string(bytes.TrimSpace(b))
})

// IsZero reports whether p names no process.
func (p Proc) IsZero() bool { return p.PID <= 0 }

// ProcOf returns the identity of the live process pid.
func ProcOf(pid int) (Proc, error) {
	start, state, _, err := procStat(pid)
	if err != nil {
		return Proc{}, err
	}
	if state == 'Z' || state == 'X' {
		return Proc{}, fmt.Errorf("process %d has exited", pid)
	}
	return Proc{PID: pid, Start: start, Boot: BootID()}, nil
}

// Self returns the identity of the calling process.
func Self() (Proc, error) { return ProcOf(os.Getpid()) }

// Alive reports whether p is still running: it was recorded in this boot, its pid
// exists, has the same start time, is not a zombie (an exited child its parent has not reaped yet) and is not dying
// (exiting, or a SIGKILL pending: for a moment after kill -9 returns, the process is
// still there and running, and `wick sweep resume` right after the kill of a queue
// took it for a live one).
func (p Proc) Alive() bool {
	ok, _ := p.alive()
	return ok
}

// alive is Alive, with the error that kept it from looking where there was one.
func (p Proc) alive() (bool, error) {
	if p.IsZero() || p.Boot != "" && p.Boot != BootID() {
		return false, nil
	}
	start, state, flags, err := procStat(p.PID)
	if err != nil || start != p.Start || state == 'Z' || state == 'X' || flags&pfExiting != 0 {
		return false, err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/status")
	return err == nil && !killPending(b), err
}

// pfExiting is the kernel's PF_EXITING flag (include/linux/sched.h), set in field 9
// of /proc/PID/stat once the process has begun to exit.
const pfExiting = 0x4

// killPending reads /proc/PID/status: whether SIGKILL is pending for the thread
// (SigPnd) or its process (ShdPnd), masks of signals in hexadecimal, signal N being
// bit N-1 (proc(5)).
func killPending(status []byte) bool {
	const sigkill = 1 << (9 - 1)
	for _, line := range bytes.Split(status, []byte{'\n'}) {
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok || (string(k) != "SigPnd" && string(k) != "ShdPnd") {
			continue
		}
		if m, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64); err == nil && m&sigkill != 0 {
			return true
		}
	}
	return false
}

// procStat reads a process's start time, state letter and flags from /proc/PID/stat.
func procStat(pid int) (start uint64, state byte, flags uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and ')', so
	// the fields are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, errors.New("malformed /proc stat")
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); field 9 (flags) is fields[6]; field 22
	// (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, 0, errors.New("malformed /proc stat")
	}
	start, err = strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("malformed /proc stat: %w", err)
	}
	flags, _ = strconv.ParseUint(string(fields[6]), 10, 64)
	return start, fields[0][0], flags, nil
}
