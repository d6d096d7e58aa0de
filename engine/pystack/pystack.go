// Package pystack dumps the Python stacks of running processes with a real stack
// sampler, and groups the processes whose stacks end alike: what a hung training
// job's ranks are doing ("ranks 0,1: all_reduce in distributed_c10d.py:1541; rank 2:
// slow_io in hang.py:23").
//
// A CPython 3.11 process's stack is read by wick itself from the process's memory
// (ReadStack, cpython.go: milliseconds). Other processes, or where that fails, go to
// a sampler: py-spy (`py-spy dump --pid PID`) where it is installed, else gdb with
// CPython's gdb extension (libpython.py: Debian's python3.X-dbg ships it where gdb
// auto-loads it), which takes seconds of CPU per process. Debian bookworm's austin
// (1.0.1) cannot read Python 3.11's frames ("Interpreter state search timed out"), so
// it is not used.
package pystack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Frame is one Python frame.
type Frame struct {
	Func, File string
	Line       int
}

// String is "func in file.py:88" (the file's base name).
func (f Frame) String() string {
	if f.File == "" {
		return f.Func
	}
	return f.Func + " in " + filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
}

// Target is a process to dump, and who it is to the user ("rank 2", "python/0").
type Target struct {
	PID   int
	Label string
}

// Dump is a target's stack, innermost frame first, or why it could not be read.
type Dump struct {
	Target
	Frames []Frame
	Err    error
	// Tool is what read the stack: Builtin (wick itself, ReadStack), "py-spy" or
	// "gdb"; "" when none could.
	Tool string `json:",omitempty"`
}

// Tool is the sampler found on PATH.
type Tool struct{ Name, Path string }

// ErrNoTool says that no sampler is installed, and how to get one.
var ErrNoTool = errors.New(noToolText)

// Builtin is the Tool of a machine with no sampler installed: only CPython 3.11's
// stacks are read (ReadStack), the others fail with ErrNoTool.
const Builtin = "wick"

// Find returns the sampler to use where ReadStack cannot: py-spy, else gdb, else
// Builtin.
func Find() (Tool, error) {
	for _, name := range []string{"py-spy", "gdb"} {
		if p, err := exec.LookPath(name); err == nil {
			return Tool{name, p}, nil
		}
	}
	return Tool{Name: Builtin}, nil
}

// maxOutput bounds what is read of a sampler's output for one process.
const maxOutput = 1 << 20

// Sample dumps the stack of every target at once, each within ctx.
func Sample(ctx context.Context, tool Tool, targets []Target) []Dump {
	out := make([]Dump, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			frames, err := ReadStack(t.PID)
			by := Builtin
			if err != nil {
				frames, err = sampleOne(ctx, tool, t.PID, err)
				by = tool.Name
			}
			if err != nil {
				by = ""
			}
			out[i] = Dump{Target: t, Frames: frames, Err: err, Tool: by}
		}()
	}
	wg.Wait()
	return out
}

// sampleOne reads pid's stack with tool, where ReadStack could not (why).
func sampleOne(ctx context.Context, tool Tool, pid int, why error) ([]Frame, error) {
	switch tool.Name {
	case Builtin:
		return nil, fmt.Errorf("%w (%v)", ErrNoTool, why)
	case "py-spy":
		return run(ctx, tool, parsePySpy, "dump", "--pid", strconv.Itoa(pid))
	}
	// The interpreter's own symbols only, and its frames read from its thread state
	// (walkFrames): loading a torch process's shared libraries takes gdb tens of
	// seconds, and py-bt needs them to unwind a thread blocked in one (torch's
	// all_reduce) to its Python frames. py-bt with all of them where that fails (an
	// interpreter whose thread state walkFrames does not know).
	ext := extension(pid)
	frames, err := run(ctx, tool, parseGDB, append([]string{"-iex", "set auto-solib-add off", "-p", strconv.Itoa(pid), "-batch"}, append(ext, "-ex", walkFrames)...)...)
	if len(frames) > 0 || ctx.Err() != nil {
		return frames, err
	}
	return run(ctx, tool, parseGDB, append([]string{"-p", strconv.Itoa(pid), "-batch"}, append(ext, "-ex", "py-bt")...)...)
}

// walkFrames is a gdb command that prints the Python stack of the process's main
// thread as py-bt does, read from the interpreter's state rather than by unwinding
// the native stack, so that gdb needs no symbols of the libraries a thread is
// blocked in: CPython 3.11's _PyRuntime.interpreters.head->threads (the thread whose
// thread_id is _PyRuntime.main_thread), its cframe->current_frame and each frame's
// previous (Include/internal/pycore_frame.h), each read with the extension's
// PyFramePtr (libpython.py). It prints nothing where those are not found (another
// Python, no debug symbols). No single quote in it: NodeScript quotes it for sh.
var walkFrames = "python exec(" + strconv.Quote(`import gdb
def _wick_walk():
    try:
        rt = gdb.parse_and_eval("_PyRuntime")
        main = int(rt["main_thread"])
        ts = rt["interpreters"]["head"]["threads"]["head"]
        chosen = None
        while int(ts) != 0:
            if chosen is None or int(ts["thread_id"]) == main:
                chosen = ts
            ts = ts["next"]
        if chosen is None:
            return
        f = chosen["cframe"]["current_frame"]
        lines = []
        while int(f) != 0 and len(lines) < 512:
            p = PyFramePtr(f)
            if not p.is_optimized_out():
                lines.append("  File \"%s\", line %s, in %s" % (p.filename(), p.current_line_num(), p.co_name.proxyval(set())))
            f = f["previous"]
    except Exception as e:
        print("wick: cannot walk the frames: %s" % e)
        return
    print("Traceback (most recent call first):")
    print("\n".join(lines))
_wick_walk()`) + ")"

// extension is the gdb arguments that load CPython's gdb extension (py-bt) for the
// interpreter pid runs, for a process of another mount namespace (a container's):
// gdb auto-loads it by the interpreter's path as it sees it, which for such a
// process is not this machine's. The extension of this machine's interpreter of the
// same name is used (a container's Python from the same distribution as the host's).
func extension(pid int) []string {
	self, err1 := os.Readlink("/proc/self/ns/mnt")
	its, err2 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	exe, err3 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err1 != nil || err2 != nil || err3 != nil || self == its {
		return nil
	}
	f := filepath.Join("/usr/share/gdb/auto-load", exe+"-gdb.py")
	if _, err := os.Stat(f); err != nil {
		return nil
	}
	return []string{"-ex", "source " + f}
}

// run runs the sampler with args and parses its output.
func run(ctx context.Context, tool Tool, parse func([]byte) []Frame, args ...string) ([]Frame, error) {
	cmd := exec.CommandContext(ctx, tool.Path, args...)
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limited{&out, maxOutput}, &limited{&out, maxOutput}
	err := cmd.Run()
	if frames := parse(out.Bytes()); len(frames) > 0 {
		return frames, nil
	}
	if bytes.Contains(out.Bytes(), []byte(`Undefined command: "py-bt"`)) {
		return nil, errors.New("gdb has no py-bt: install CPython's gdb extension (apt-get install python3-dbg)")
	}
	if err == nil {
		err = errors.New("no Python frames")
	}
	return nil, fmt.Errorf("%s: %w", tool.Name, err)
}

// limited is a writer that keeps at most n bytes.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// parseGDB reads py-bt's frames (libpython.py, PyFrameObjectPtr.print_traceback:
// '  File "%s", line %i, in %s'), innermost first, after "Traceback (most recent
// call first):".
func parseGDB(b []byte) []Frame {
	var out []Frame
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "Traceback (most recent call first):" {
			in, out = true, nil
			continue
		}
		if !in {
			continue
		}
		rest, ok := strings.CutPrefix(l, `File "`)
		if !ok {
			continue
		}
		file, rest, ok := strings.Cut(rest, `", line `)
		if !ok {
			continue
		}
		line, fn, _ := strings.Cut(rest, ", in ")
		n, _ := strconv.Atoi(line)
		out = append(out, Frame{Func: fn, File: file, Line: n})
	}
	return out
}

// parsePySpy reads `py-spy dump`'s first thread's frames ("    func (file.py:88)"),
// innermost first.
func parsePySpy(b []byte) []Frame {
	var out []Frame
	threads := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		raw := sc.Text()
		if strings.HasPrefix(raw, "Thread ") {
			threads++
			continue
		}
		if threads != 1 || !strings.HasPrefix(raw, "    ") {
			continue
		}
		l := strings.TrimSpace(raw)
		k := strings.LastIndex(l, " (")
		if k < 0 || !strings.HasSuffix(l, ")") {
			continue
		}
		loc := l[k+2 : len(l)-1]
		c := strings.LastIndexByte(loc, ':')
		if c < 0 {
			continue
		}
		n, _ := strconv.Atoi(loc[c+1:])
		out = append(out, Frame{Func: l[:k], File: loc[:c], Line: n})
	}
	return out
}

// Group is the targets whose stacks end in the same frame.
type Group struct {
	Top    string // the innermost frame, or the error
	Labels []string
	Dumps  []Dump
}

// GroupByTop groups dumps by their innermost Python frame (a built-in the frame
// calls, "<built-in method sleep ...>", is not one), in the order of their first
// target.
func GroupByTop(dumps []Dump) []Group {
	var out []Group
	idx := map[string]int{}
	for _, d := range dumps {
		key := ""
		switch {
		case d.Err != nil:
			key = "cannot read: " + d.Err.Error()
		default:
			key = Top(d.Frames)
		}
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, Group{Top: key})
		}
		out[i].Labels = append(out[i].Labels, d.Label)
		out[i].Dumps = append(out[i].Dumps, d)
	}
	return out
}

// Top is the innermost frame of a stack with a file, as Frame.String says it.
func Top(frames []Frame) string {
	for _, f := range frames {
		if f.File != "" {
			return f.String()
		}
	}
	return "(no Python frame)"
}

// Label joins the labels of a group: "ranks 0,1,3" for ranks, else as they are.
func Label(labels []string) string {
	var nums []string
	for _, l := range labels {
		n, ok := strings.CutPrefix(l, "rank ")
		if !ok {
			return strings.Join(labels, ", ")
		}
		nums = append(nums, n)
	}
	slices.SortFunc(nums, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	if len(nums) == 1 {
		return "rank " + nums[0]
	}
	return "ranks " + strings.Join(nums, ",")
}

// RankOf reads RANK from a process's environment: a torchrun worker's global rank;
// -1 when it has none.
func RankOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return -1
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("RANK=")); ok {
			if n, err := strconv.Atoi(string(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

// Pythons returns pid and its descendants that run a Python interpreter (their
// executable's name starts with "python"), parents first.
func Pythons(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 && len(out) < 4096 {
		p := queue[0]
		queue = queue[1:]
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(p) + "/exe"); err == nil && strings.HasPrefix(filepath.Base(exe), "python") {
			out = append(out, p)
		}
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, t := range tasks {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + t.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// Parse reads the output of a sampler (py-spy's dump or gdb's py-bt) run elsewhere (on
// a Slurm node): the frames of its process, innermost first.
func Parse(tool string, out []byte) []Frame {
	if tool == "py-spy" {
		return parsePySpy(out)
	}
	return parseGDB(out)
}

// NodeScript is a shell script that samples, where it runs (a Slurm replica's node,
// in the replica's environment), every Python process of the replica: those whose
// environment has the replica's WICK_APP_ID, WICK_ROLE and WICK_REPLICA_ID. It
// prints, for each, a line "=== wick-stack TOOL PID RANK" (RANK -1 when the process
// has none) and the sampler's output, all sampled at once. With no sampler it prints
// ErrNoTool's message on stderr and exits 3.
var NodeScript = `a=$WICK_APP_ID r=$WICK_ROLE k=$WICK_REPLICA_ID
if command -v py-spy >/dev/null 2>&1; then t=py-spy; elif command -v gdb >/dev/null 2>&1; then t=gdb; else echo "` + noToolText + `" >&2; exit 3; fi
d=$(mktemp -d) || exit 3
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  case "$(readlink "$p/exe" 2>/dev/null)" in */python*) ;; *) continue;; esac
  e=$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null)
  [ "$(printf '%s\n' "$e" | grep -cFx -e "WICK_APP_ID=$a" -e "WICK_ROLE=$r" -e "WICK_REPLICA_ID=$k")" = 3 ] || continue
  rank=$(printf '%s\n' "$e" | sed -n 's/^RANK=\([0-9]*\)$/\1/p')
  {
    echo "=== wick-stack $t $pid ${rank:--1}"
    if [ $t = py-spy ]; then py-spy dump --pid "$pid" 2>&1
    else
      o=$(gdb -iex "set auto-solib-add off" -p "$pid" -batch -ex '` + walkFrames + `' 2>&1)
      case "$o" in *'File "'*) printf '%s\n' "$o";; *) gdb -p "$pid" -batch -ex py-bt 2>&1;; esac
    fi
  } >"$d/$pid" &
done
wait
cat "$d"/* 2>/dev/null; rm -rf "$d"`

// noToolText is ErrNoTool's message, for NodeScript.
const noToolText = "no Python stack sampler: install py-spy (pip install py-spy) or gdb with CPython's extension (apt-get install gdb python3-dbg)"

// NodeDump is one process's stack read on its node: a section of NodeScript's
// output, or one of NodeVerb's dumps.
type NodeDump struct {
	PID, Rank int
	Frames    []Frame
	Err       error
	Tool      string // what read it (see Dump.Tool)
}

// ParseNode reads NodeScript's output.
func ParseNode(out []byte) []NodeDump {
	var dumps []NodeDump
	for _, sec := range bytes.Split(out, []byte("=== wick-stack "))[1:] {
		head, body, _ := bytes.Cut(sec, []byte("\n"))
		f := strings.Fields(string(head))
		if len(f) != 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		rank, err := strconv.Atoi(f[2])
		if err != nil {
			rank = -1
		}
		d := NodeDump{PID: pid, Rank: rank, Frames: Parse(f[0], body), Tool: f[0]}
		if len(d.Frames) == 0 {
			d.Tool = ""
			d.Err = fmt.Errorf("%s: no Python frames", f[0])
			if bytes.Contains(body, []byte(`Undefined command: "py-bt"`)) {
				d.Err = errors.New("gdb has no py-bt on the node: install CPython's gdb extension (apt-get install python3-dbg)")
			}
		}
		dumps = append(dumps, d)
	}
	return dumps
}
