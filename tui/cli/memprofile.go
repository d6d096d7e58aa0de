package cli

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// memSample is how often WICK_MEMPROFILE looks at the live heap.
const memSample = time.Second

// startMemProfile is WICK_MEMPROFILE (not in the help: for who measures the UI): it
// keeps a heap profile taken when the live heap was at its highest (re-taken each
// second the live heap has grown 5% past the last one), and when stop is called
// writes it to path, and to path.txt the peak live heap, the garbage collector's
// share of the CPU the process used, and the count of collections. Each whole minute
// it also writes a profile of that moment to path.Nm (N the minute): the steady state
// of a long run, which the peak (a search over every line, say) may not show.
func startMemProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("WICK_MEMPROFILE: %w", err)
	}
	done, ended := make(chan struct{}), make(chan struct{})
	var (
		peak, profiled uint64
		prof           bytes.Buffer
	)
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	take := func() {
		metrics.Read(samples)
		live := samples[0].Value.Uint64()
		peak = max(peak, live)
		if live > profiled+profiled/20 {
			profiled = live
			prof.Reset()
			_ = pprof.Lookup("heap").WriteTo(&prof, 0)
		}
	}
	start := time.Now()
	minute := 0
	go func() {
		defer close(ended)
		t := time.NewTicker(memSample)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				take()
				if m := int(time.Since(start) / time.Minute); m > minute {
					minute = m
					writeHeapProfile(fmt.Sprintf("%s.%dm", path, m))
				}
			case <-done:
				take()
				return
			}
		}
	}()
	return func() error {
		close(done)
		<-ended
		_, werr := f.Write(prof.Bytes())
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("WICK_MEMPROFILE %s: %w", path, werr)
		}
		cpu := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/user:cpu-seconds"},
			{Name: "/cpu/classes/scavenge/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(cpu)
		gc, user, scav := cpu[0].Value.Float64(), cpu[1].Value.Float64(), cpu[2].Value.Float64()
		summary := fmt.Sprintf("peak-live-heap-bytes %d\ngc-cpu-seconds %.3f\ngc-cpu-fraction %.4f\ngc-cycles %d\n",
			peak, gc, gc/max(gc+user+scav, 1e-9), cpu[3].Value.Uint64())
		if err := os.WriteFile(path+".txt", []byte(summary), 0o600); err != nil {
			return fmt.Errorf("WICK_MEMPROFILE: %w", err)
		}
		return nil
	}, nil
}

// writeHeapProfile writes the heap profile of now to path; a failure only loses
// that profile (the measurement goes on).
func writeHeapProfile(path string) {
	var b bytes.Buffer
	if pprof.Lookup("heap").WriteTo(&b, 0) == nil {
		_ = os.WriteFile(path, b.Bytes(), 0o600)
	}
}
