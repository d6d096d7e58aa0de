// Package gpus finds the GPUs this machine lends to the apps it runs: the device pool
// that a sweep's queue and the local schedulers hand out, each replica its own.
//
// A pool is a list of CUDA_VISIBLE_DEVICES entries. When the launching environment
// sets CUDA_VISIBLE_DEVICES, its entries (GPU indexes, GPU UUIDs or MIG UUIDs) are the
// pool and nothing else: those are the devices the user may use. Otherwise the pool is
// every GPU nvidia-smi lists, by index (`nvidia-smi --query-gpu=index,uuid
// --format=csv,noheader`, or the `GPU N:` lines of `nvidia-smi -L`, where the MIG
// devices listed under a GPU are not GPUs of their own).
package gpus

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/execx"
	"github.com/wick-dev/wick/engine/spec"
)

// timeout bounds nvidia-smi: a wedged driver must not hang a launch.
const timeout = 10 * time.Second

// EnvVisible is the variable that names the devices a CUDA process may use.
const EnvVisible = "CUDA_VISIBLE_DEVICES"

// maxOutput bounds what is read of nvidia-smi's output (a line per GPU).
const maxOutput = 1 << 20

// Runner runs nvidia-smi with args and returns its standard output.
type Runner func(ctx context.Context, args ...string) ([]byte, error)

// Finder finds the pool; its zero value is unusable, use New.
type Finder struct {
	// Getenv reads the launching environment (os.LookupEnv).
	Getenv func(string) (string, bool)
	// Run runs nvidia-smi.
	Run Runner
}

// New is the Finder of this process: its environment and the nvidia-smi on its PATH.
func New() Finder {
	return Finder{Getenv: os.LookupEnv, Run: runSMI}
}

// Pool is the device pool of this machine, as seen by this process (New().Pool).
func Pool(ctx context.Context) []string {
	return New().Pool(ctx)
}

// Count is the number of devices in the pool: zero without a GPU or nvidia-smi.
func Count(ctx context.Context) int {
	return len(Pool(ctx))
}

// Pool is the device pool: the entries of CUDA_VISIBLE_DEVICES when it is set (an
// empty value: none), else the indexes of the GPUs nvidia-smi lists; nil when it
// lists none or cannot run.
func (f Finder) Pool(ctx context.Context) []string {
	if v, ok := f.Getenv(EnvVisible); ok {
		return ParseVisible(v)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if out, err := f.Run(ctx, "--query-gpu=index,uuid", "--format=csv,noheader"); err == nil {
		if ids := ParseQuery(out); len(ids) > 0 {
			return ids
		}
	}
	if out, err := f.Run(ctx, "-L"); err == nil {
		return ParseList(out)
	}
	return nil
}

// ParseVisible splits a CUDA_VISIBLE_DEVICES value into its entries, as CUDA reads
// it: comma-separated, blanks around an entry ignored. CUDA stops at the first entry
// that names no device, such as -1 (the way to hide every GPU): so does this.
func ParseVisible(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if n, err := strconv.Atoi(e); err == nil && n < 0 {
			break
		}
		out = append(out, e)
	}
	return out
}

// ParseQuery reads the indexes out of `nvidia-smi --query-gpu=index,uuid
// --format=csv,noheader`: one line per GPU, "INDEX, UUID". A header line (without
// noheader) and lines that do not start with an index are skipped.
func ParseQuery(out []byte) []string {
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		idx, _, _ := strings.Cut(sc.Text(), ",")
		idx = strings.TrimSpace(idx)
		if _, err := strconv.Atoi(idx); err == nil {
			ids = append(ids, idx)
		}
	}
	return ids
}

// ParseList reads the indexes out of `nvidia-smi -L`: the lines "GPU N: NAME (UUID:
// ...)". The MIG devices of a GPU ("  MIG 1g.5gb Device 0: ...") are parts of it,
// not GPUs.
func ParseList(out []byte) []string {
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "GPU ")
		if !ok {
			continue
		}
		idx, _, ok := strings.Cut(rest, ":")
		if _, err := strconv.Atoi(idx); ok && err == nil {
			ids = append(ids, idx)
		}
	}
	return ids
}

// ParseMIG reads the MIG devices out of `nvidia-smi -L`, as NVIDIA's MIG User Guide
// prints it ("Getting Started with MIG", "Running CUDA Applications on Bare-Metal"):
// under each "GPU N: NAME (UUID: GPU-...)" line, its MIG devices indented, "  MIG
// 1g.5gb Device 0: (UUID: MIG-...)". It returns each MIG device's UUID mapped to its
// GPU's; nil when there is none.
func ParseMIG(out []byte) map[string]string {
	var m map[string]string
	gpu := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		uuid := listedUUID(line)
		switch {
		case strings.HasPrefix(line, "GPU "):
			gpu = uuid
		case strings.HasPrefix(strings.TrimSpace(line), "MIG ") && gpu != "" && strings.HasPrefix(uuid, "MIG-"):
			if m == nil {
				m = map[string]string{}
			}
			m[uuid] = gpu
		}
	}
	return m
}

// listedUUID is the UUID of a line of nvidia-smi -L: what follows "(UUID: ", to the
// closing parenthesis.
func listedUUID(line string) string {
	_, rest, ok := strings.Cut(line, "(UUID: ")
	if !ok {
		return ""
	}
	uuid, _, _ := strings.Cut(rest, ")")
	return strings.TrimSpace(uuid)
}

// parentGPU is the UUID of the GPU that MIG device e is part of: from mig (ParseMIG),
// or from the name itself in the form CUDA 11.0 used, MIG-GPU-UUID/GI/CI; "" when e
// is not a MIG device it knows.
func parentGPU(mig map[string]string, e string) string {
	if g, ok := mig[e]; ok {
		return g
	}
	if rest, ok := strings.CutPrefix(e, "MIG-GPU-"); ok {
		uuid, _, _ := strings.Cut(rest, "/")
		return "GPU-" + uuid
	}
	return ""
}

// runSMI runs the nvidia-smi on PATH, its output bounded.
func runSMI(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "nvidia-smi", args...)
	execx.Bound(cmd)
	var out limitedBuffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// limitedBuffer keeps the first maxOutput bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Split hands out a pool: need[i] devices to the i-th taker, consecutive and in the
// pool's order. It returns nil and false when the pool has too few.
func Split(pool []string, need []int) ([][]string, bool) {
	out := make([][]string, len(need))
	next := 0
	for i, n := range need {
		if n < 0 || next+n > len(pool) {
			return nil, false
		}
		out[i] = pool[next : next+n : next+n]
		next += n
	}
	return out, true
}

// ErrShort is returned by Replicas when the pool has fewer devices than the app's
// replicas need.
var ErrShort = errors.New("too few devices")

// Replicas hands an app's pool out to its replicas (sched.Submission.Devices): role
// by role, replica by replica, max(resource.gpu, 1) consecutive devices each. It
// returns role name -> replica id -> its devices.
func Replicas(app *spec.AppDef, pool []string) (map[string][][]string, error) {
	var need []int
	for _, r := range app.Roles {
		for range r.NumReplicas {
			need = append(need, max(r.Resource.GPU, 1))
		}
	}
	parts, ok := Split(pool, need)
	if !ok {
		total := 0
		for _, n := range need {
			total += n
		}
		return nil, fmt.Errorf("%w: the app's replicas need %d devices (one each, or their resource's gpu), its pool has %d (%s)",
			ErrShort, total, len(pool), strings.Join(pool, ","))
	}
	out := make(map[string][][]string, len(app.Roles))
	i := 0
	for _, r := range app.Roles {
		out[r.Name] = parts[i : i+r.NumReplicas]
		i += r.NumReplicas
	}
	return out, nil
}
