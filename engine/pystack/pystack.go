// Package pystack dumps the Python stacks of running processes with a real stack
// sampler, and groups the processes whose stacks end alike: what a hung training
// job's ranks are doing ("ranks 0,1: all_reduce in distributed_c10d.py:1541; rank 2:
// slow_io in hang.py:23").
//
// The sampler is py-spy (`py-spy dump --pid PID`) where it is installed, else gdb with
// CPython's gdb extension (`py-bt`, libpython.py: Debian's python3.X-dbg ships it
// where gdb auto-loads it). Debian bookworm's austin (1.0.1) cannot read Python 3.11's
// frames (it prints nothing), so it is not used.
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
}

// Tool is the sampler found on PATH.
type Tool struct{ Name, Path string }

// ErrNoTool says that no sampler is installed, and how to get one.
var ErrNoTool = errors.New("no Python stack sampler: install py-spy (pip install py-spy) or gdb with CPython's extension (apt-get install gdb python3-dbg)")

// Find returns the sampler to use: py-spy, else gdb.
func Find() (Tool, error) {
	for _, name := range []string{"py-spy", "gdb"} {
		if p, err := exec.LookPath(name); err == nil {
			return Tool{name, p}, nil
		}
	}
	return Tool{}, ErrNoTool
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
			frames, err := sampleOne(ctx, tool, t.PID)
			out[i] = Dump{Target: t, Frames: frames, Err: err}
		}()
	}
	wg.Wait()
	return out
}

func sampleOne(ctx context.Context, tool Tool, pid int) ([]Frame, error) {
	if tool.Name == "py-spy" {
		return run(ctx, tool, parsePySpy, "dump", "--pid", strconv.Itoa(pid))
	}
	// The interpreter's own symbols first: loading a torch process's shared libraries
	// takes gdb tens of seconds. A thread blocked in a library (torch's all_reduce)
	// needs them to be unwound to its Python frames: then with all of them.
	frames, err := run(ctx, tool, parseGDB, "-iex", "set auto-solib-add off", "-p", strconv.Itoa(pid), "-batch", "-ex", "py-bt")
	if len(frames) > 0 || ctx.Err() != nil {
		return frames, err
	}
	return run(ctx, tool, parseGDB, "-p", strconv.Itoa(pid), "-batch", "-ex", "py-bt")
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
