package pystack

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// wick reads the Python stack of a CPython 3.11 process itself, as py-spy and austin
// do: from the process's memory (/proc/PID/mem), without stopping it, in
// milliseconds. gdb, the fallback, takes seconds of CPU per process to load the
// interpreter's debug symbols. The walk is CPython 3.11's (Include/internal/
// pycore_runtime.h, pycore_interp.h, cpython/pystate.h, pycore_frame.h,
// cpython/code.h): _PyRuntime.interpreters.head -> threads.head (the thread whose
// thread_id is _PyRuntime.main_thread) -> cframe -> current_frame, and each
// _PyInterpreterFrame's f_code and previous. The offsets are those of Debian's
// python3.11 (3.11.2, x86-64), read with gdb from its python3.11-dbg symbols; 3.11's
// layout is the same for every 3.11.x (py-spy reads them all with one binding).
// Any other Python is left to the external samplers.
const (
	offRuntimeMainThread  = 80  // _PyRuntimeState.main_thread
	offRuntimeInterpHead  = 40  // _PyRuntimeState.interpreters.head
	offInterpThreadsHead  = 16  // PyInterpreterState.threads.head
	offThreadNext         = 8   // PyThreadState.next
	offThreadID           = 152 // PyThreadState.thread_id
	offThreadCFrame       = 56  // PyThreadState.cframe
	offCFrameCurrent      = 8   // _PyCFrame.current_frame
	offFrameCode          = 32  // _PyInterpreterFrame.f_code
	offFramePrevious      = 48  // _PyInterpreterFrame.previous
	offFramePrevInstr     = 56  // _PyInterpreterFrame.prev_instr
	offCodeFirstLine      = 72  // PyCodeObject.co_firstlineno
	offCodeFilename       = 112 // PyCodeObject.co_filename
	offCodeName           = 120 // PyCodeObject.co_name
	offCodeLinetable      = 136 // PyCodeObject.co_linetable
	offCodeAdaptive       = 184 // PyCodeObject.co_code_adaptive
	offVarSize            = 16  // PyVarObject.ob_size
	offBytesData          = 32  // PyBytesObject.ob_sval
	offUnicodeLength      = 16  // PyASCIIObject.length
	offUnicodeState       = 32  // PyASCIIObject.state
	sizeASCIIObject       = 48  // the data of a compact ASCII string follows
	sizeCompactUnicode    = 72  // the data of another compact string follows
	maxFrames             = 512 // a stack deeper than this is cut
	maxStringBytes        = 4096
	maxLinetableBytes     = 1 << 16
	maxThreads            = 4096
	codeUnit              = 2 // sizeof(_Py_CODEUNIT)
	runtimeSymbol         = "_PyRuntime"
	supportedPythonPrefix = "3.11"
)

// errNotSupported says that a process's interpreter is not one ReadStack knows.
var errNotSupported = errors.New("not a CPython 3.11 process")

// ReadStack reads the Python stack of process pid's main thread, innermost frame
// first, from its memory. It fails with an error for a process that is not CPython
// 3.11's, or whose memory it may not read.
func ReadStack(pid int) ([]Frame, error) {
	file, base, err := interpreterImage(pid)
	if err != nil {
		return nil, err
	}
	sym, err := symbolValue(file, runtimeSymbol)
	if err != nil {
		return nil, err
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	m := memory{mem}
	runtime := base + sym
	mainID, err := m.u64(runtime + offRuntimeMainThread)
	if err != nil {
		return nil, err
	}
	interp, err := m.u64(runtime + offRuntimeInterpHead)
	if err != nil || interp == 0 {
		return nil, errors.Join(errors.New("no interpreter"), err)
	}
	ts, err := m.u64(interp + offInterpThreadsHead)
	if err != nil {
		return nil, err
	}
	var chosen uint64
	for n := 0; ts != 0 && n < maxThreads; n++ {
		id, err := m.u64(ts + offThreadID)
		if err != nil {
			return nil, err
		}
		if chosen == 0 || id == mainID {
			chosen = ts
		}
		if ts, err = m.u64(ts + offThreadNext); err != nil {
			return nil, err
		}
	}
	if chosen == 0 {
		return nil, errors.New("no Python thread")
	}
	cframe, err := m.u64(chosen + offThreadCFrame)
	if err != nil || cframe == 0 {
		return nil, errors.Join(errors.New("no current frame"), err)
	}
	f, err := m.u64(cframe + offCFrameCurrent)
	if err != nil {
		return nil, err
	}
	var out []Frame
	for ; f != 0 && len(out) < maxFrames; f, err = m.u64(f + offFramePrevious) {
		if err != nil {
			return nil, err
		}
		fr, err := m.frame(f)
		if err != nil {
			return nil, err
		}
		out = append(out, fr)
	}
	if len(out) == 0 {
		return nil, errors.New("no Python frames")
	}
	return out, nil
}

// interpreterImage finds the ELF file that holds _PyRuntime in process pid (its
// libpython3.11 where it has one, else its python3.11 executable) and the address it
// is loaded at; the file is opened through /proc so that a container's is found.
func interpreterImage(pid int) (path string, base uint64, err error) {
	dir := "/proc/" + strconv.Itoa(pid)
	f, err := os.Open(dir + "/maps")
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	var exe, lib string
	var exeBase, libBase uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "START-END PERMS OFFSET DEV INODE PATH"
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[2] != "00000000" {
			continue
		}
		name := filepath.Base(fields[5])
		start, err := strconv.ParseUint(strings.Split(fields[0], "-")[0], 16, 64)
		if err != nil {
			continue
		}
		switch {
		case lib == "" && strings.HasPrefix(name, "libpython"+supportedPythonPrefix+".so"):
			lib, libBase = fields[5], start
		case exe == "" && strings.HasPrefix(name, "python"+supportedPythonPrefix):
			exe, exeBase = fields[5], start
		}
	}
	switch {
	case lib != "":
		return dir + "/root" + lib, libBase, nil
	case exe != "":
		// The executable, through its magic link: a container's path is not this
		// machine's.
		return dir + "/exe", exeBase, nil
	}
	return "", 0, errNotSupported
}

// symbolValue is the address of symbol name in the ELF file at path, relative to its
// first loaded segment.
func symbolValue(path, name string) (uint64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var first uint64
	seen := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && (!seen || p.Vaddr < first) {
			first, seen = p.Vaddr, true
		}
	}
	for _, list := range []func() ([]elf.Symbol, error){f.DynamicSymbols, f.Symbols} {
		syms, err := list()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if s.Name == name {
				return s.Value - first, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no %s: %w", path, name, errNotSupported)
}

// memory reads a process's memory.
type memory struct{ f *os.File }

func (m memory) read(addr uint64, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := m.f.ReadAt(b, int64(addr)); err != nil {
		return nil, fmt.Errorf("reading %d bytes at %#x: %w", n, addr, err)
	}
	return b, nil
}

func (m memory) u64(addr uint64) (uint64, error) {
	b, err := m.read(addr, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// frame reads the _PyInterpreterFrame at f: its code's name and file, and the line
// of its last instruction.
func (m memory) frame(f uint64) (Frame, error) {
	code, err := m.u64(f + offFrameCode)
	if err != nil || code == 0 {
		return Frame{}, errors.Join(errors.New("a frame without code"), err)
	}
	prev, err := m.u64(f + offFramePrevInstr)
	if err != nil {
		return Frame{}, err
	}
	name, err := m.str(code + offCodeName)
	if err != nil {
		return Frame{}, err
	}
	file, err := m.str(code + offCodeFilename)
	if err != nil {
		return Frame{}, err
	}
	b, err := m.read(code+offCodeFirstLine, 4)
	if err != nil {
		return Frame{}, err
	}
	first := int(int32(binary.LittleEndian.Uint32(b)))
	table, err := m.bytesObject(code + offCodeLinetable)
	if err != nil {
		return Frame{}, err
	}
	lasti := (int64(prev) - int64(code+offCodeAdaptive)) / codeUnit
	return Frame{Func: name, File: file, Line: lineOf(table, first, lasti)}, nil
}

// str reads the str object whose pointer is at addr (a compact one: every str a code
// object holds is).
func (m memory) str(addr uint64) (string, error) {
	obj, err := m.u64(addr)
	if err != nil || obj == 0 {
		return "", errors.Join(errors.New("no string"), err)
	}
	n, err := m.u64(obj + offUnicodeLength)
	if err != nil {
		return "", err
	}
	st, err := m.read(obj+offUnicodeState, 4)
	if err != nil {
		return "", err
	}
	state := binary.LittleEndian.Uint32(st)
	kind, compact, ascii := int(state>>2&7), state>>5&1 == 1, state>>6&1 == 1
	if !compact || kind == 0 {
		return "", errors.New("not a compact string")
	}
	data := obj + sizeCompactUnicode
	if ascii {
		data = obj + sizeASCIIObject
	}
	n = min(n, maxStringBytes/uint64(kind))
	b, err := m.read(data, int(n)*kind)
	if err != nil {
		return "", err
	}
	if kind == 1 && ascii {
		return string(b), nil
	}
	var sb strings.Builder
	for i := 0; i+kind <= len(b); i += kind {
		switch kind {
		case 1:
			sb.WriteRune(rune(b[i])) // Latin-1
		case 2:
			sb.WriteRune(rune(binary.LittleEndian.Uint16(b[i:])))
		default:
			sb.WriteRune(rune(binary.LittleEndian.Uint32(b[i:])))
		}
	}
	return sb.String(), nil
}

// bytesObject reads the bytes object whose pointer is at addr.
func (m memory) bytesObject(addr uint64) ([]byte, error) {
	obj, err := m.u64(addr)
	if err != nil || obj == 0 {
		return nil, errors.Join(errors.New("no bytes"), err)
	}
	n, err := m.u64(obj + offVarSize)
	if err != nil {
		return nil, err
	}
	return m.read(obj+offBytesData, int(min(n, maxLinetableBytes)))
}

// lineOf is the line of the instruction at lasti (in code units) of a code object
// whose co_linetable is table and co_firstlineno first: CPython 3.11's location
// table (Objects/locations.md; PyCode_Addr2Line, and libpython.py's
// parse_location_table). A frame not started yet (lasti < 0) is at its first line.
func lineOf(table []byte, first int, lasti int64) int {
	if lasti < 0 {
		return first
	}
	line, addr, i := first, int64(0), 0
	next := func() (byte, bool) {
		if i >= len(table) {
			return 0, false
		}
		i++
		return table[i-1], true
	}
	varint := func() int {
		b, ok := next()
		v, shift := int(b&63), 0
		for ok && b&64 != 0 {
			b, ok = next()
			shift += 6
			v |= int(b&63) << shift
		}
		return v
	}
	signed := func() int {
		v := varint()
		if v&1 != 0 {
			return -(v >> 1)
		}
		return v >> 1
	}
	for {
		b, ok := next()
		if !ok {
			return line
		}
		code, length := int(b>>3&15), int64(b&7)+1
		at := line
		switch {
		case code == 15: // no location
			at = -1
		case code == 14: // long form: line delta, end line, columns
			line += signed()
			at = line
			varint()
			varint()
			varint()
		case code == 13: // no columns
			line += signed()
			at = line
		case code >= 10: // one line: the delta in the code, two columns
			line += code - 10
			at = line
			next()
			next()
		default: // short form: same line, one byte of columns
			next()
		}
		if lasti >= addr && lasti < addr+length {
			if at < 0 {
				return line
			}
			return at
		}
		addr += length
	}
}
