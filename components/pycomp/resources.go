package pycomp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
)

// NamedResourceGroup is the entry point group TorchX reads named resources from
// (torchx/specs/__init__.py _load_named_resources, load_group("torchx.named_resources")):
// a user's package registers `my_gpu = my_pkg.resources:my_gpu`, a function returning
// a torchx.specs.Resource.
const NamedResourceGroup = "torchx.named_resources"

// Limits of the entry point cache: its records are a few kilobytes (a path per
// distribution of the environment).
const (
	maxEntryCache = 1 << 20
	// racyWindow: a file changed this close to the start of a discovery may have
	// changed while Python read it (file times come from a coarse clock), so that
	// discovery is not written to disk.
	racyWindow = 100 * time.Millisecond
	// entryCacheVersion changes when the record's format or meaning does.
	entryCacheVersion = 1
)

// pythonEnvVars are the variables that choose the interpreter and its sys.path: part
// of the cache key, with the interpreter's path and the working directory (relative
// PYTHONPATH entries).
var pythonEnvVars = []string{"PATH", "HOME", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE",
	"PYTHONNOUSERSITE", "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "VIRTUAL_ENV", "CONDA_PREFIX", "PYENV_VERSION"}

// entryRecord is what a discovery found: the group's entry points (name -> value,
// "module:attr"), and the state of every path whose change could change them: the
// interpreter, each sys.path entry, the user site directory, each distribution's
// entry_points.txt.
type entryRecord struct {
	Version     int               `json:"version"`
	Key         string            `json:"key"`
	EntryPoints map[string]string `json:"entry_points"`
	Watch       []pathStamp       `json:"watch"`
}

// pathStamp is a path's state: missing, or its size and modification time.
type pathStamp struct {
	Path    string `json:"path"`
	Missing bool   `json:"missing,omitempty"`
	Size    int64  `json:"size,omitempty"`
	MTime   int64  `json:"mtime,omitempty"`
}

func stampOf(path string) pathStamp {
	st, err := os.Stat(path)
	if err != nil {
		return pathStamp{Path: path, Missing: true}
	}
	return pathStamp{Path: path, Size: st.Size(), MTime: st.ModTime().UnixNano()}
}

// fresh reports whether no watched path changed since r was made.
func (r *entryRecord) fresh() bool {
	for _, w := range r.Watch {
		if stampOf(w.Path) != w {
			return false
		}
	}
	return true
}

// NamedResource returns the resource that the [torchx.named_resources] entry point
// name of the user's Python makes, evaluated by TorchX itself
// (torchx.specs.named_resources[name]) in the helper, with its time and memory
// bounds. ok is false when no entry point has that name, or when there is no Python
// to ask (or one that cannot list its entry points) and name is one of wick's own:
// wick's table answers then. A name neither has is an error suggesting
// the closest of both.
//
// Which entry points exist is cached on disk (CacheDir) with the state of every path
// that could change it, so that a call for a name no entry point registers costs a
// few stat calls, not a Python start.
func (b *Bridge) NamedResource(ctx context.Context, name string) (spec.Resource, bool, error) {
	eps, err := b.entryPoints(ctx)
	if err != nil {
		_, known := spec.NamedResource(name)
		if errors.Is(err, components.ErrNoTorchX) || known == nil {
			// No Python, or one that cannot list its entry points: wick's own table
			// answers for its names (its builtins never need Python).
			return spec.Resource{}, false, nil
		}
		return spec.Resource{}, false, fmt.Errorf("unknown named resource %q: the %s entry points of %s could not be read: %w", name, NamedResourceGroup, b.python(), err)
	}
	value, ok := eps[name]
	if !ok {
		if _, err := spec.NamedResource(name); err != nil && len(eps) > 0 {
			// Neither table has it: TorchX's message suggests among both.
			return spec.Resource{}, false, fmt.Errorf("unknown named resource %q%s", name, spec.DidYouMean(name, append(spec.NamedResources(), spec.SortedKeys(eps)...)))
		}
		return spec.Resource{}, false, nil
	}
	a, err := b.call(ctx, "resource", map[string]any{"name": name}, "")
	if err != nil {
		return spec.Resource{}, false, err
	}
	what := fmt.Sprintf("named resource %s (%s = %s)", name, NamedResourceGroup, value)
	if err := b.answerError(what, a); err != nil {
		return spec.Resource{}, false, err
	}
	if a.Resource == nil {
		return spec.Resource{}, false, fmt.Errorf("%s: the TorchX helper gave no resource", what)
	}
	r := *a.Resource
	if len(r.Capabilities) == 0 {
		r.Capabilities = nil
	}
	if len(r.Devices) == 0 {
		r.Devices = nil
	}
	return r, true, nil
}

// entryPoints returns the named resource entry points of the user's Python: from
// memory or the disk cache while nothing they depend on changed, else from the
// helper.
func (b *Bridge) entryPoints(ctx context.Context) (map[string]string, error) {
	key := b.entryKey()
	b.mu.Lock()
	r := b.entries
	b.mu.Unlock()
	if r == nil || r.Key != key {
		r = b.readEntryCache(key)
	}
	if r != nil && r.fresh() {
		b.mu.Lock()
		b.entries = r
		b.mu.Unlock()
		return r.EntryPoints, nil
	}
	start := time.Now()
	a, err := b.run(ctx, "entrypoints", []byte(`{"group":"`+NamedResourceGroup+`"}`))
	if err != nil {
		return nil, err
	}
	if err := b.answerError(NamedResourceGroup, a); err != nil {
		return nil, err
	}
	r = &entryRecord{Version: entryCacheVersion, Key: key, EntryPoints: a.EntryPoints}
	if r.EntryPoints == nil {
		r.EntryPoints = map[string]string{}
	}
	racy := false
	for _, p := range a.Watch {
		s := stampOf(p)
		racy = racy || !s.Missing && s.MTime >= start.Add(-racyWindow).UnixNano()
		r.Watch = append(r.Watch, s)
	}
	b.mu.Lock()
	b.entries = r
	b.mu.Unlock()
	if !racy {
		b.writeEntryCache(r)
	}
	return r.EntryPoints, nil
}

// entryKey names the environment a discovery holds for: the interpreter (as named and
// as found on PATH), the working directory, and the variables that steer sys.path.
func (b *Bridge) entryKey() string {
	env := b.Env
	if env == nil {
		env = os.Environ()
	}
	vals := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	py := b.python()
	found, _ := exec.LookPath(py)
	parts := []string{fmt.Sprint(entryCacheVersion), py, found, b.Dir}
	for _, k := range pythonEnvVars {
		parts = append(parts, k+"="+vals[k])
	}
	return strings.Join(parts, "\x00")
}

// entryCacheFile is where the record for key is kept ("" without a CacheDir).
func (b *Bridge) entryCacheFile(key string) string {
	if b.CacheDir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(b.CacheDir, "python", "entrypoints-"+hex.EncodeToString(sum[:12])+".json")
}

// readEntryCache returns the record kept for key, or nil (none, unreadable, another
// key's or another version's).
func (b *Bridge) readEntryCache(key string) *entryRecord {
	path := b.entryCacheFile(key)
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEntryCache+1))
	if err != nil || len(data) > maxEntryCache {
		return nil
	}
	var r entryRecord
	if json.Unmarshal(data, &r) != nil || r.Version != entryCacheVersion || r.Key != key {
		return nil
	}
	return &r
}

// writeEntryCache keeps r on disk, private (0700 directory, 0600 file), replacing the
// old record at once (a temporary file renamed). A cache that cannot be written is
// only slower: the error is dropped.
func (b *Bridge) writeEntryCache(r *entryRecord) {
	path := b.entryCacheFile(r.Key)
	if path == "" {
		return
	}
	data, err := json.Marshal(r)
	if err != nil || len(data) > maxEntryCache {
		return
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".entrypoints-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		_ = os.Remove(tmp.Name())
	}
}
