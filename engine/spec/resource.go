package spec

import (
	"fmt"
	"strings"
	"sync"
)

// Resource is what one replica needs. A negative value means "does not matter".
type Resource struct {
	CPU   int `json:"cpu"`
	GPU   int `json:"gpu"`
	MemMB int `json:"memMB"`
	// Capabilities are scheduler-interpreted hardware hints.
	Capabilities map[string]string `json:"capabilities,omitempty"`
	// Devices are named device counts, e.g. "vpc.amazonaws.com/efa": 4.
	Devices map[string]int `json:"devices,omitempty"`
}

// NullResource says the resource does not matter (TorchX's NULL_RESOURCE).
var NullResource = Resource{CPU: -1, GPU: -1, MemMB: -1}

// IsNull reports whether r places no constraint at all.
func (r Resource) IsNull() bool {
	return r.CPU < 0 && r.GPU < 0 && r.MemMB < 0 && len(r.Devices) == 0 && len(r.Capabilities) == 0
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	c := r
	c.Capabilities = cloneMap(r.Capabilities)
	if r.Devices != nil {
		c.Devices = make(map[string]int, len(r.Devices))
		for k, v := range r.Devices {
			c.Devices[k] = v
		}
	}
	return c
}

const gib = 1024

// namedResources are TorchX's generic named resources (GiB = 1024 MB), built at first
// use (see awsNamedResources).
var namedResources = sync.OnceValue(func() map[string]Resource {
	return map[string]Resource{
		"gpu.small":  {CPU: 8, GPU: 1, MemMB: 32 * gib},
		"gpu.medium": {CPU: 16, GPU: 2, MemMB: 64 * gib},
		"gpu.large":  {CPU: 32, GPU: 4, MemMB: 128 * gib},
		"gpu.xlarge": {CPU: 64, GPU: 8, MemMB: 256 * gib},
		"cpu.nano":   {CPU: 1, GPU: 0, MemMB: 512},
		"cpu.micro":  {CPU: 1, GPU: 0, MemMB: 1 * gib},
		"cpu.small":  {CPU: 1, GPU: 0, MemMB: 2 * gib},
		"cpu.medium": {CPU: 2, GPU: 0, MemMB: 4 * gib},
		"cpu.large":  {CPU: 2, GPU: 0, MemMB: 8 * gib},
		"cpu.xlarge": {CPU: 8, GPU: 0, MemMB: 32 * gib},
		"NULL":       NullResource,
		"MISSING":    NullResource,
	}
})

// NamedResource looks up a named resource such as "gpu.small". An unknown name is an
// error that suggests the closest known one.
func NamedResource(name string) (Resource, error) {
	if r, ok := namedResources()[name]; ok {
		return r.Clone(), nil
	}
	if r, ok := awsNamedResources()[name]; ok {
		return r.Clone(), nil
	}
	return Resource{}, fmt.Errorf("unknown named resource %q%s", name, DidYouMean(name, NamedResources()))
}

// NamedResources lists the known named resources: the generic ones, then the aws_*
// ones, each sorted.
func NamedResources() []string {
	names := SortedKeys(namedResources())
	return append(names, SortedKeys(awsNamedResources())...)
}

// ResourceOf builds a resource the way TorchX's specs.resource does: a named resource h
// wins; otherwise a zero value falls back to 2 cpu, 0 gpu, 1024 MB, and a negative one
// is an error.
func ResourceOf(cpu, gpu, memMB int, h string) (Resource, error) {
	if h != "" {
		return NamedResource(h)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"cpu", cpu}, {"gpu", gpu}, {"memMB", memMB}} {
		if v.n < 0 {
			// TorchX passes a negative count on into the AppDef (`cpu or 2` keeps -1),
			// which no scheduler can honour.
			return Resource{}, fmt.Errorf("invalid --%s %d: a resource cannot be negative (0 takes the default)", v.name, v.n)
		}
	}
	if cpu == 0 {
		cpu = 2
	}
	if memMB == 0 {
		memMB = 1024
	}
	return Resource{CPU: cpu, GPU: gpu, MemMB: memMB}, nil
}

// DidYouMean returns " (did you mean X?)" naming the candidate closest to s, or "" when
// none is close enough to be a plausible typo.
func DidYouMean(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return ""
	}
	limit := max(2, len(s)/3)
	if bestD > limit && !strings.Contains(best, s) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
