package gpus

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/execx"
	"github.com/wick-dev/wick/engine/spec"
)

// What each GPU is doing, read from nvidia-smi's queries (nvidia-smi(1), sections
// "--query-gpu", "--query-compute-apps" and "--format": values of a row joined by
// ", ", no header with noheader, no units with nounits, "[N/A]" or "[Not
// Supported]" where a device cannot tell):
//
//	nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits
//	nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits
//
// One Sampler serves the whole process: a sample is taken at most every
// SampleEvery, however many panes and lists ask, and nvidia-smi is not run at all
// where it is not installed.

// Arguments of the two queries.
var (
	queryGPUArgs  = []string{"--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits"}
	queryAppsArgs = []string{"--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits"}
)

// SampleEvery is how long a sample serves: the rate nvidia-smi runs at while
// something asks.
const SampleEvery = 5 * time.Second

// sampleTimeout bounds one sample (both queries): a wedged driver must not hold the
// UI's usage reads.
const sampleTimeout = 4 * time.Second

// offFor is how long the sampler rests after nvidia-smi failed.
const offFor = time.Minute

// mib is nvidia-smi's memory unit (MiB, with nounits).
const mib = 1 << 20

// Device is one GPU at a sample.
type Device struct {
	Index string
	UUID  string
	// Util is utilization.gpu in percent; -1 when the device cannot tell.
	Util int
	// Used and Total are memory.used and memory.total in bytes; Total 0 when the
	// device cannot tell.
	Used, Total uint64
}

// Proc is one compute process on a GPU at a sample.
type Proc struct {
	PID  int
	UUID string // its GPU's
	// Used is its used_memory in bytes.
	Used uint64
}

// Sample is what every GPU is doing at a moment.
type Sample struct {
	At      time.Time
	Devices []Device
	Procs   []Proc
	// MIG maps the UUID of each MIG device to its GPU's (nvidia-smi -L, ParseMIG):
	// nvidia-smi's queries tell a GPU's use, not a MIG device's, so a replica given
	// a MIG device is shown its GPU's.
	MIG map[string]string
}

// ParseDevices reads the rows of the --query-gpu query above; rows that are not
// five values with an index are skipped.
func ParseDevices(out []byte) []Device {
	var devs []Device
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := splitRow(sc.Text())
		if len(f) != 5 {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue
		}
		d := Device{Index: f[0], UUID: f[1], Util: -1}
		if n, err := strconv.Atoi(f[2]); err == nil {
			d.Util = n
		}
		d.Used, _ = mebibytes(f[3])
		d.Total, _ = mebibytes(f[4])
		devs = append(devs, d)
	}
	return devs
}

// ParseProcs reads the rows of the --query-compute-apps query above; "No running
// processes found" and other rows that are not three values with a pid are skipped.
func ParseProcs(out []byte) []Proc {
	var procs []Proc
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := splitRow(sc.Text())
		if len(f) != 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 0 {
			continue
		}
		used, _ := mebibytes(f[2])
		procs = append(procs, Proc{PID: pid, UUID: f[1], Used: used})
	}
	return procs
}

func splitRow(line string) []string {
	f := strings.Split(line, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

// mebibytes reads a nounits memory value (MiB); false for "[N/A]" and the like.
func mebibytes(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n * mib, true
}

// The sampler's own cost must stay under 1% of a core (#32: 8 GPUs, 64 replicas).
// nvidia-smi's cost depends on the driver and the machine, so the sampler measures
// it: the CPU time of each run (its rusage, children included) and of its own work
// (parsing, and the matching its callers charge, Charge), and a sample serves for
// costFactor times what it cost, SampleEvery at the least.
const costFactor = 100

// migEvery is how often the MIG devices are listed again (nvidia-smi -L): a GPU is
// split differently only when an administrator changes it.
const migEvery = time.Minute

// costRunner runs nvidia-smi and says what it cost in CPU time.
type costRunner func(ctx context.Context, args ...string) ([]byte, time.Duration, error)

// Sampler takes samples of nvidia-smi for a whole process; its zero value is not
// usable: use NewSampler.
type Sampler struct {
	run     costRunner
	look    func() bool // whether nvidia-smi is there
	now     func() time.Time
	timeout time.Duration // bounds a sample: sampleTimeout

	mu       sync.Mutex
	last     *Sample
	restTill time.Time
	running  chan struct{} // closed when the sample under way ends
	// every is how long the last sample serves: max(SampleEvery, costFactor ×
	// cost); cost is what the last sample cost, and charged what the callers'
	// matching cost since.
	every, cost, charged time.Duration
	// mig is the last MIG list (ParseMIG), taken at migAt; only take touches them.
	mig   map[string]string
	migAt time.Time
}

// NewSampler samples with run (the nvidia-smi on PATH when nil, its CPU time
// measured; run's counts as none).
func NewSampler(run Runner) *Sampler {
	look := func() bool { return true }
	cr := runSMICost
	if run != nil {
		cr = func(ctx context.Context, args ...string) ([]byte, time.Duration, error) {
			out, err := run(ctx, args...)
			return out, 0, err
		}
	} else {
		look = func() bool { _, err := exec.LookPath("nvidia-smi"); return err == nil }
	}
	return &Sampler{run: cr, look: look, now: time.Now, timeout: sampleTimeout, every: SampleEvery}
}

// Charge adds d, the CPU time a caller spent on a sample (matching it to
// processes: Attribute), to the sampler's cost.
func (s *Sampler) Charge(d time.Duration) {
	s.mu.Lock()
	s.charged += d
	s.every = max(s.every, costFactor*(s.cost+s.charged))
	s.mu.Unlock()
}

var (
	shared     *Sampler
	sharedOnce sync.Once
)

// Shared is the Sampler of this process, of the nvidia-smi on its PATH.
func Shared() *Sampler {
	sharedOnce.Do(func() { shared = NewSampler(nil) })
	return shared
}

// ErrNoGPUs is returned by Sample where there is no nvidia-smi, it fails, or it
// lists no GPU: the callers show no GPU columns.
var ErrNoGPUs = errors.New("no GPUs to sample (no nvidia-smi, or it lists none)")

// errNotThere wraps ErrNoGPUs where nvidia-smi is not on PATH.
var errNotThere = fmt.Errorf("%w: nvidia-smi is not on PATH", ErrNoGPUs)

// Sample is the last sample when younger than SampleEvery, else a new one; calls at
// once share one run. After a failure nvidia-smi is left alone for offFor; where it
// is not on PATH nothing runs.
func (s *Sampler) Sample(ctx context.Context) (*Sample, error) {
	for {
		s.mu.Lock()
		now := s.now()
		if s.last != nil && now.Sub(s.last.At) < s.every {
			last := s.last
			s.mu.Unlock()
			return last, nil
		}
		if now.Before(s.restTill) {
			s.mu.Unlock()
			return nil, ErrNoGPUs
		}
		if wait := s.running; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		s.running = done
		s.mu.Unlock()

		smp, cost, err := s.take(ctx)
		s.mu.Lock()
		s.running = nil
		close(done)
		s.cost, s.charged = cost, 0
		s.every = max(SampleEvery, costFactor*cost)
		if errors.Is(err, errNotThere) {
			s.last = nil // looked up again next time: a PATH lookup costs next to nothing
		} else if err != nil {
			s.last, s.restTill = nil, s.now().Add(offFor)
		} else {
			s.last = smp
		}
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return smp, nil
	}
}

// take runs the two queries (and nvidia-smi -L every migEvery), and says what they
// cost in CPU time: nvidia-smi's, and the parsing's (a bound: the time it took).
func (s *Sampler) take(ctx context.Context) (*Sample, time.Duration, error) {
	if !s.look() {
		return nil, 0, errNotThere
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	var cost time.Duration
	run := func(args ...string) ([]byte, error) {
		out, c, err := s.run(ctx, args...)
		cost += c
		return out, err
	}
	out, err := run(queryGPUArgs...)
	if err != nil {
		return nil, cost, errors.Join(ErrNoGPUs, err)
	}
	began := time.Now()
	smp := &Sample{At: s.now(), Devices: ParseDevices(out)}
	cost += time.Since(began)
	if len(smp.Devices) == 0 {
		return nil, cost, ErrNoGPUs
	}
	if out, err := run(queryAppsArgs...); err == nil {
		began := time.Now()
		smp.Procs = ParseProcs(out)
		cost += time.Since(began)
	}
	if s.migAt.IsZero() || s.now().Sub(s.migAt) >= migEvery {
		s.migAt = s.now()
		if out, err := run("-L"); err == nil {
			s.mig = ParseMIG(out)
		}
	}
	smp.MIG = s.mig
	return smp, cost, nil
}

// runSMICost runs the nvidia-smi on PATH, its output bounded, and returns the CPU
// time it took (user and system, its children's included: the rusage of its wait).
func runSMICost(ctx context.Context, args ...string) ([]byte, time.Duration, error) {
	cmd := exec.CommandContext(ctx, "nvidia-smi", args...)
	execx.Bound(cmd)
	var out limitedBuffer
	cmd.Stdout = &out
	err := cmd.Run()
	var cost time.Duration
	if cmd.ProcessState != nil {
		cost = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return nil, cost, err
	}
	return out.Bytes(), cost, nil
}

// Use is what one replica does on GPUs (spec.GPUUse).
type Use = spec.GPUUse

// maxDepth bounds the walk from a GPU process up to its replica's first process.
const maxDepth = 64

// Attribute tells each replica's use, roots mapping the pid of a replica's first
// process to the replica: a compute process belongs to the replica whose first
// process is it or an ancestor of it (its parents, read from proc, "/proc"). A
// replica with no device is left out.
func Attribute[K comparable](smp *Sample, roots map[int]K, proc string) map[K]Use {
	if smp == nil || len(roots) == 0 {
		return nil
	}
	byUUID := map[string]*Device{}
	byIndex := map[string]*Device{}
	for i := range smp.Devices {
		d := &smp.Devices[i]
		byUUID[d.UUID], byIndex[d.Index] = d, d
	}
	devs := map[K]map[string]bool{}
	own := map[K]uint64{}
	add := func(k K, d *Device) {
		if devs[k] == nil {
			devs[k] = map[string]bool{}
		}
		devs[k][d.Index] = true
	}
	device := func(e string) *Device {
		if d := byIndex[e]; d != nil {
			return d
		}
		if d := byUUID[e]; d != nil {
			return d
		}
		return byUUID[parentGPU(smp.MIG, e)]
	}
	for pid, k := range roots {
		for _, e := range visibleOf(proc, pid) {
			if d := device(e); d != nil {
				add(k, d)
			}
		}
	}
	for _, p := range smp.Procs {
		k, ok := rootOf(proc, p.PID, roots)
		if !ok {
			continue
		}
		own[k] += p.Used
		if d := device(p.UUID); d != nil {
			add(k, d)
		}
	}
	out := make(map[K]Use, len(devs))
	for k, set := range devs {
		u := Use{Util: -1, Own: own[k]}
		sum, n := 0, 0
		for idx := range set {
			d := byIndex[idx]
			u.Devices = append(u.Devices, idx)
			u.Used += d.Used
			u.Total += d.Total
			if d.Util >= 0 {
				sum += d.Util
				n++
			}
		}
		if n > 0 {
			u.Util = sum / n
		}
		slices.SortFunc(u.Devices, func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x - y
		})
		out[k] = u
	}
	return out
}

// rootOf finds the replica of pid: pid itself or its nearest ancestor in roots.
func rootOf[K comparable](proc string, pid int, roots map[int]K) (K, bool) {
	for range maxDepth {
		if k, ok := roots[pid]; ok {
			return k, true
		}
		ppid := parentOf(proc, pid)
		if ppid <= 1 {
			break
		}
		pid = ppid
	}
	var zero K
	return zero, false
}

// maxStat bounds a read of /proc/PID/stat.
const maxStat = 4096

// parentOf is pid's parent (/proc/PID/stat's fourth field, after the command name
// in parentheses, which may hold anything); 0 when it cannot be read.
func parentOf(proc string, pid int) int {
	b, err := readBounded(filepath.Join(proc, strconv.Itoa(pid), "stat"), maxStat)
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// maxEnviron bounds a read of /proc/PID/environ.
const maxEnviron = 1 << 20

// visibleOf are the devices pid's environment names: CUDA_VISIBLE_DEVICES, else
// NVIDIA_VISIBLE_DEVICES (a container's, set by the Engine from its device request),
// unless "all" or "none".
func visibleOf(proc string, pid int) []string {
	b, err := readBounded(filepath.Join(proc, strconv.Itoa(pid), "environ"), maxEnviron)
	if err != nil {
		return nil
	}
	var cuda, nvidia string
	var haveCuda bool
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(EnvVisible+"=")); ok {
			cuda, haveCuda = string(v), true
		} else if v, ok := bytes.CutPrefix(kv, []byte("NVIDIA_VISIBLE_DEVICES=")); ok {
			nvidia = string(v)
		}
	}
	if haveCuda {
		return ParseVisible(cuda)
	}
	if nvidia == "all" || nvidia == "none" || nvidia == "void" {
		return nil
	}
	return ParseVisible(nvidia)
}

// readBounded reads at most n bytes of path.
func readBounded(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
