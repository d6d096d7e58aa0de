// Package pycomp resolves the components wick does not define itself through the
// user's own TorchX: `file.py:fn` component files, components registered by
// [torchx.components] entry points, and TorchX's builtins that wick has no Go copy of.
//
// A Bridge runs the user's Python (python3 on PATH, as TorchX itself runs, or the
// interpreter the user names) with a short helper embedded in the binary
// (helper.py). The helper resolves the component with TorchX's own finder, parses
// the arguments with TorchX's own parser (materialize_appdef), and writes one JSON
// document to file descriptor 3: the component's parameters (names, types, defaults,
// help from the docstring) and the AppDef. The component's own output on stdout and
// stderr cannot corrupt it. Answers are cached by component, file (path, size and
// mtime) and arguments, so the UI's form and preview do not start Python again for a
// call they already made.
package pycomp

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/go-units"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
)

//go:embed helper.py
var helper string

// DefaultPython is the interpreter a Bridge runs when none is named: the python3 on
// PATH, the one the user's `torchx` would run with.
const DefaultPython = "python3"

// DefaultTimeout bounds one call to the user's TorchX: a component file that hangs
// (waits on the network, reads stdin, loops) gives a clear error after it.
const DefaultTimeout = 30 * time.Second

// DefaultMemory bounds the memory the helper and what it starts may allocate
// (RLIMIT_DATA: their heaps and anonymous mappings, not the libraries they map). A
// component is a function that builds an AppDef: TorchX's import and torch's take a few
// hundred MB; a component allocating in a loop stops here with a MemoryError.
const DefaultMemory = 2 << 30

// Limits of what is read back from Python: a component's parameters and AppDef are a
// few kilobytes; stderr is kept only for an error message.
const (
	maxAnswer = 8 << 20
	maxStderr = 64 << 10
	// maxShown bounds what an error quotes of what the interpreter printed.
	maxShown = 120
	// maxCache bounds the answers kept; past it the cache starts over (a form's
	// edits make a few dozen at most).
	maxCache = 256
)

// Bridge runs the user's TorchX. Its zero value is usable; it is safe for concurrent
// use. It implements components.External.
type Bridge struct {
	// Python is the interpreter: a name looked up on PATH or a path; "" means
	// DefaultPython.
	Python string
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Memory bounds what the helper and its children may allocate, in bytes (see
	// DefaultMemory); 0 means DefaultMemory, a negative value no bound.
	Memory int64
	// Dir is the working directory of the helper (relative component files are read
	// from it, as `torchx run` reads them from its own); "" means the process's.
	Dir string
	// Env is the helper's environment; nil means os.Environ().
	Env []string
	// Traceback adds Python's traceback to the one-line error of a component that
	// raised (set by $WICK_PYTHON_TRACEBACK).
	Traceback bool
	// CacheDir keeps what outlives the process: which named resource entry points the
	// interpreter's environment registers (see NamedResource); "" keeps it in memory
	// only.
	CacheDir string

	mu      sync.Mutex
	cache   map[string]answer
	entries *entryRecord
}

// answer is what the helper wrote.
type answer struct {
	Component  *compJSON   `json:"component"`
	Components []*compJSON `json:"components"`
	App        *appJSON    `json:"app"`
	// EntryPoints and Watch answer "entrypoints"; Resource answers "resource".
	EntryPoints map[string]string `json:"entry_points"`
	Watch       []string          `json:"watch"`
	Resource    *spec.Resource    `json:"resource"`
	Error       *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
		// Traceback is Python's, for a component that raised.
		Traceback string `json:"traceback"`
	} `json:"error"`
}

type compJSON struct {
	Name        string      `json:"name"`
	Summary     string      `json:"summary"`
	Help        string      `json:"help"`
	File        string      `json:"file"`
	Line        int         `json:"line"`
	Params      []paramJSON `json:"params"`
	Varargs     string      `json:"varargs"`
	VarargsHelp string      `json:"varargs_help"`
}

type paramJSON struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Help     string  `json:"help"`
	Required bool    `json:"required"`
	Optional bool    `json:"optional"`
	Default  *string `json:"default"`
}

type appJSON struct {
	Name     string            `json:"name"`
	Roles    []spec.Role       `json:"roles"`
	Metadata map[string]string `json:"metadata"`
}

func (b *Bridge) python() string {
	if b.Python == "" {
		return DefaultPython
	}
	return b.Python
}

func (b *Bridge) memory() int64 {
	if b.Memory == 0 {
		return DefaultMemory
	}
	return b.Memory
}

func (b *Bridge) timeout() time.Duration {
	if b.Timeout <= 0 {
		return DefaultTimeout
	}
	return b.Timeout
}

// fileName splits a FILE.py:FN name into its file, resolved against Dir ("" for a
// registry name such as utils.booth).
func (b *Bridge) fileName(name string) string {
	if !components.IsPythonFile(name) {
		return ""
	}
	path, _, _ := strings.Cut(name, ":")
	if !filepath.IsAbs(path) && b.Dir != "" {
		path = filepath.Join(b.Dir, path)
	}
	return path
}

// Find returns the component name, with its parameters.
func (b *Bridge) Find(ctx context.Context, name string) (*components.Component, error) {
	a, err := b.call(ctx, "describe", map[string]any{"name": name}, b.fileName(name))
	if err != nil {
		return nil, err
	}
	if err := b.answerError(name, a); err != nil {
		return nil, err
	}
	if a.Component == nil {
		return nil, fmt.Errorf("%s: the TorchX helper gave no component", name)
	}
	return toComponent(name, a.Component), nil
}

// Materialize builds name's AppDef from argv, as `torchx run NAME ARGV...` would.
// Argument errors are TorchX's own message, on one line. --help gives the component
// and an error wrapping components.ErrHelp (TorchX is not asked to parse: wick prints
// the usage).
func (b *Bridge) Materialize(ctx context.Context, name string, argv []string, defaults map[string]string) (*components.Component, *spec.AppDef, error) {
	for _, a := range argv {
		if a == "--" {
			break
		}
		if a == "--help" {
			c, err := b.Find(ctx, name)
			if err != nil {
				return nil, nil, err
			}
			return c, nil, fmt.Errorf("%s: %w", name, components.ErrHelp)
		}
	}
	if argv == nil {
		argv = []string{}
	}
	req := map[string]any{"name": name, "argv": argv, "defaults": defaults}
	a, err := b.call(ctx, "materialize", req, b.fileName(name))
	if err != nil {
		return nil, nil, err
	}
	var comp *components.Component
	if a.Component != nil {
		comp = toComponent(name, a.Component)
	}
	if err := b.answerError(name, a); err != nil {
		if a.Error.Kind == "args" && comp != nil && asksHelp(comp, argv) {
			return comp, nil, fmt.Errorf("%s: %w", name, components.ErrHelp) // -h, as for wick's components
		}
		return comp, nil, err
	}
	if a.App == nil || comp == nil {
		return comp, nil, fmt.Errorf("%s: the TorchX helper gave no AppDef", name)
	}
	app := toApp(a.App)
	if err := app.Validate(); err != nil {
		return comp, nil, fmt.Errorf("%s: %w", name, err)
	}
	return comp, app, nil
}

// asksHelp reports whether argv holds -h (before any "--") and c has no parameter h
// for it to set: TorchX reserves -h for such parameters, wick also reads it as help.
func asksHelp(c *components.Component, argv []string) bool {
	for _, p := range c.Params {
		if p.Name == "h" {
			return false
		}
	}
	for _, a := range argv {
		if a == "--" {
			return false
		}
		if a == "-h" {
			return true
		}
	}
	return false
}

// File lists the components of a .py file: its functions TorchX's linter accepts as
// components (for the listings of the search path).
func (b *Bridge) File(ctx context.Context, path string) ([]*components.Component, error) {
	if !filepath.IsAbs(path) && b.Dir != "" {
		path = filepath.Join(b.Dir, path)
	}
	a, err := b.call(ctx, "file", map[string]any{"path": path}, path)
	if err != nil {
		return nil, err
	}
	if err := b.answerError(path, a); err != nil {
		return nil, err
	}
	out := make([]*components.Component, 0, len(a.Components))
	for _, c := range a.Components {
		out = append(out, toComponent(path+":"+c.Name, c))
	}
	return out, nil
}

// All lists the components TorchX finds: its builtins, or those of the
// [torchx.components] entry points.
func (b *Bridge) All(ctx context.Context) ([]*components.Component, error) {
	a, err := b.call(ctx, "list", map[string]any{}, "")
	if err != nil {
		return nil, err
	}
	if err := b.answerError("torchx", a); err != nil {
		return nil, err
	}
	out := make([]*components.Component, 0, len(a.Components))
	for _, c := range a.Components {
		out = append(out, toComponent(c.Name, c))
	}
	return out, nil
}

// answerError turns the helper's error into a one-line error.
func (b *Bridge) answerError(name string, a *answer) error {
	if a.Error == nil {
		return nil
	}
	msg := oneLine(a.Error.Message)
	switch a.Error.Kind {
	case "notorchx":
		return fmt.Errorf("%s: %w: %s cannot import torchx (%s): install TorchX for it (pip install torchx), name another interpreter with $%s, or write the component as a YAML component file (wick builtins --print utils.echo)",
			name, components.ErrNoTorchX, b.python(), msg, EnvPython)
	case "notfound":
		return fmt.Errorf("%w %q: %s", components.ErrNoSuchComponent, name, msg)
	case "args":
		return fmt.Errorf("%s: %s", name, msg)
	case "syntax":
		return errors.New(msg) // "file.py:LINE: SyntaxError: ..." says it all
	case "notcomponent":
		return fmt.Errorf("%s is not a TorchX component: %s", name, msg)
	case "raised":
		if b.Traceback && a.Error.Traceback != "" {
			return fmt.Errorf("%s raised %s\n%s", name, msg, strings.TrimRight(a.Error.Traceback, "\n"))
		}
		return fmt.Errorf("%s raised %s", name, msg)
	}
	return fmt.Errorf("%s: %s", name, msg)
}

// EnvPython, EnvTimeout and EnvMemory name the variables that override the
// interpreter, the time limit and the memory bound (2GiB, 512m, unlimited; see
// Configure); EnvTraceback, set to 1, asks for Python's traceback of a component that
// raised.
const (
	EnvPython    = "WICK_PYTHON"
	EnvTimeout   = "WICK_PYTHON_TIMEOUT"
	EnvTraceback = "WICK_PYTHON_TRACEBACK"
	EnvMemory    = "WICK_PYTHON_MEMORY"
)

// Configure returns a Bridge for the working directory dir, with the interpreter and
// time limit from $WICK_PYTHON and $WICK_PYTHON_TIMEOUT (read with getenv), else
// from settings (the [wick:python] section of .torchxconfig: python, timeout), else
// the defaults; and its memory bound from $WICK_PYTHON_MEMORY, else [wick:python]
// memory. Its CacheDir is wick's under $XDG_CACHE_HOME, else ~/.cache. The helper inherits the process's environment (PYTHONPATH, a virtualenv's
// PATH). A bad timeout or memory bound is an error.
func Configure(dir string, getenv func(string) string, settings map[string]string) (*Bridge, error) {
	b := &Bridge{Dir: dir, Python: settings["python"]}
	b.Traceback = getenv(EnvTraceback) != "" && getenv(EnvTraceback) != "0"
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		b.CacheDir = filepath.Join(d, "wick")
	} else if h := getenv("HOME"); filepath.IsAbs(h) {
		b.CacheDir = filepath.Join(h, ".cache", "wick")
	}
	if p := getenv(EnvPython); p != "" {
		b.Python = p
	}
	t, where := settings["timeout"], "[wick:python] timeout"
	if v := getenv(EnvTimeout); v != "" {
		t, where = v, "$"+EnvTimeout
	}
	if t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s: %q is not a duration such as 30s or 2m", where, t)
		}
		b.Timeout = d
	}
	m, where := settings["memory"], "[wick:python] memory"
	if v := getenv(EnvMemory); v != "" {
		m, where = v, "$"+EnvMemory
	}
	switch n, err := units.RAMInBytes(m); {
	case m == "":
	case strings.EqualFold(m, "unlimited"):
		b.Memory = -1
	case err != nil || n < 64<<20:
		return nil, fmt.Errorf("%s: %q is not a size of at least 64MiB such as 2GiB or 512m (or unlimited)", where, m)
	default:
		b.Memory = n
	}
	return b, nil
}

// cacheKey names a call: the interpreter, the operation and request, and for a
// component file its path, size and modification time (an edited file is read again).
func (b *Bridge) cacheKey(op string, req []byte, file string) string {
	key := b.python() + "\x00" + b.Dir + "\x00" + op + "\x00" + string(req)
	if file != "" {
		if st, err := os.Stat(file); err == nil {
			key += fmt.Sprintf("\x00%d\x00%d", st.Size(), st.ModTime().UnixNano())
		}
	}
	return key
}

// call runs the helper once (or answers from the cache).
func (b *Bridge) call(ctx context.Context, op string, req map[string]any, file string) (*answer, error) {
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("TorchX helper request: %w", err)
	}
	key := b.cacheKey(op, reqJSON, file)
	b.mu.Lock()
	if a, ok := b.cache[key]; ok {
		b.mu.Unlock()
		return &a, nil
	}
	b.mu.Unlock()

	a, err := b.run(ctx, op, reqJSON)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.cache == nil || len(b.cache) >= maxCache {
		b.cache = map[string]answer{}
	}
	b.cache[key] = *a
	b.mu.Unlock()
	return a, nil
}

// bootstrap compiles the helper under a name of its own, so that the helper's frames
// are told from the component's ("<string>", as TorchX execs a component file). It
// drops the working directory that -c puts first on sys.path, as the `torchx` script
// has none (a json.py beside the component would otherwise shadow the standard
// library's).
const bootstrap = "import sys;sys.path[:1]=[] if sys.path[:1]==[''] else sys.path[:1];exec(compile(sys.argv.pop(1),'<wick-helper>','exec'))"

// run starts the helper and reads its answer from fd 3. The helper runs in a process
// group of its own, with its memory bounded (Memory), and the group is killed when
// the helper has ended (answered, failed or timed out): nothing a component started
// outlives the call.
func (b *Bridge) run(ctx context.Context, op string, req []byte) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout())
	defer cancel()
	py := b.python()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("TorchX helper: %w", err)
	}
	defer pr.Close()
	cmd := exec.Command(py, "-c", bootstrap, helper, op, string(req))
	cmd.Dir = b.Dir
	cmd.Env = b.Env
	cmd.ExtraFiles = []*os.File{pw} // fd 3
	cmd.Stdin = nil                 // /dev/null: a component that reads stdin gets EOF
	stderr := &tailBuffer{max: maxStderr}
	stdout := &headBuffer{max: maxShown} // what the component prints is not wick's to show, but for an error
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so that a timeout kills what the component started too;
	// killed if wick dies. Linux sends the death signal when the thread that forked
	// exits (golang/go#27505): start and wait on one locked thread.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A process the component left behind may hold stdout or stderr: Wait does not
	// wait for it past this.
	cmd.WaitDelay = time.Second
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		// Its own cgroup where one can be made: what the component starts cannot
		// leave it, as it can leave the process group (setsid).
		cg := joinCgroup(cmd.Process.Pid)
		started <- limitMemory(cmd.Process.Pid, b.memory())
		err := waitKillGroup(cmd)
		_ = cg.killAll() // best effort: the process group was killed already
		waited <- err
	}()
	if err := <-started; err != nil {
		pw.Close()
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-waited
		}
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: no %s to run TorchX with: install Python and TorchX (pip install torchx), name the interpreter with $%s, or write the component as a YAML component file (wick builtins --print utils.echo)",
				components.ErrNoTorchX, py, EnvPython)
		}
		return nil, fmt.Errorf("TorchX helper: start %s: %w", py, err)
	}
	pw.Close()
	var (
		out     []byte
		readErr error
		read    = make(chan struct{})
	)
	go func() {
		defer close(read)
		out, readErr = io.ReadAll(io.LimitReader(pr, maxAnswer+1))
	}()
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		pr.Close() // a grandchild out of the group may still hold fd 3: stop reading
		<-read
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("TorchX did not answer within %s (does the component hang? set $%s or [wick:python] timeout for a longer limit)", b.timeout(), EnvTimeout)
		}
		return nil, fmt.Errorf("TorchX helper: %w", ctx.Err())
	}
	// The helper exited and its group was killed: wait for its answer, unless a
	// process that left the group keeps the pipe open, which the deadline ends.
	select {
	case <-read:
	case <-ctx.Done():
		pr.Close()
		<-read
	}
	if readErr != nil && len(out) == 0 {
		return nil, fmt.Errorf("TorchX helper: read answer: %w", readErr)
	}
	if len(out) > maxAnswer {
		return nil, fmt.Errorf("TorchX helper: answer larger than %d bytes", maxAnswer)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, noAnswer(py, cmd.ProcessState, waitErr, stdout, stderr.String())
	}
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("TorchX helper (%s): bad answer (%v), starting %s", py, err, quote(out, maxShown))
	}
	if a.Error != nil && a.Error.Kind == "raised" && strings.Contains(a.Error.Message, "MemoryError") {
		a.Error.Message += fmt.Sprintf(" (the TorchX helper may allocate %s: $%s or [wick:python] memory sets more)", units.BytesSize(float64(b.memory())), EnvMemory)
	}
	return &a, nil
}

// noAnswer says what the interpreter did when it wrote no answer: how it ended, the
// first bytes it printed and the last line of its stderr, escaped.
func noAnswer(py string, ps *os.ProcessState, waitErr error, stdout *headBuffer, stderr string) error {
	var how string
	switch {
	case ps == nil:
		how = fmt.Sprintf("failed (%v)", waitErr)
	case ps.Success():
		how = "exited 0"
	case ps.ExitCode() >= 0:
		how = fmt.Sprintf("exited with status %d", ps.ExitCode())
	default:
		how = "was killed (" + ps.String() + ")"
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			how += ", perhaps for memory"
		}
	}
	msg := fmt.Sprintf("TorchX helper (%s) %s without an answer: is it Python with TorchX?", py, how)
	if b, n := stdout.bytes(); n > 0 {
		q := quote(b, maxShown)
		if n > int64(len(b)) && !strings.HasSuffix(q, "...") {
			q += "..."
		}
		msg += fmt.Sprintf(" It printed %d bytes: %s", n, q)
	} else {
		msg += " It printed nothing"
	}
	if last := lastLine(stderr); last != "" {
		msg += "; stderr: " + quote([]byte(last), 2*maxShown)
	}
	return errors.New(msg)
}

// quote is the first max bytes of b, escaped (Go's %q: control bytes and invalid
// UTF-8 as \x.. escapes), marked when cut.
func quote(b []byte, max int) string {
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}

// headBuffer keeps the first max bytes written to it and counts them all.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
	n   int64
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	h.n += int64(len(p))
	return len(p), nil
}

func (h *headBuffer) bytes() ([]byte, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]byte(nil), h.b...), h.n
}

// toComponent makes a wick component of the helper's description: called name (as
// the user wrote it), typed parameters, no Build (components.External builds).
func toComponent(name string, c *compJSON) *components.Component {
	comp := &components.Component{
		Name: name, Summary: c.Summary, Help: c.Help, From: components.FromTorchX,
		Varargs: c.Varargs, VarargsHelp: c.VarargsHelp,
	}
	if file, fn, ok := strings.Cut(name, ":"); ok && components.IsPythonFile(name) {
		comp.Name, comp.Source = fn, file
		if c.File != "" {
			comp.Source = c.File
		}
	}
	for _, p := range c.Params {
		q := components.Param{Name: p.Name, Help: p.Help, Required: p.Required, Optional: p.Optional}
		switch p.Type {
		case "int":
			q.Type = components.Int
		case "float":
			q.Type = components.Float
		case "bool":
			q.Type = components.Bool
		case "list":
			q.Type = components.List
		case "map":
			q.Type = components.Map
		default:
			q.Type = components.String
		}
		if p.Default != nil {
			q.Default = *p.Default
		}
		if len(p.Name) == 1 {
			q.Short = p.Name
		}
		comp.Params = append(comp.Params, q)
	}
	return comp
}

// toApp makes a spec.AppDef of the helper's AppDef.
func toApp(a *appJSON) *spec.AppDef {
	app := &spec.AppDef{Name: a.Name, Roles: a.Roles, Metadata: a.Metadata}
	for i := range app.Roles {
		r := &app.Roles[i]
		if r.Env == nil {
			r.Env = map[string]string{}
		}
		if len(r.PortMap) == 0 {
			r.PortMap = nil
		}
		if len(r.Metadata) == 0 {
			r.Metadata = nil
		}
		if len(r.Resource.Capabilities) == 0 {
			r.Resource.Capabilities = nil
		}
		if len(r.Resource.Devices) == 0 {
			r.Resource.Devices = nil
		}
	}
	if len(app.Metadata) == 0 {
		app.Metadata = nil
	}
	return app
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lastLine is the last non-blank line of s (a traceback's exception).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// oneLine joins s's lines with spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
