package gpus

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// BenchmarkAttribute64: what one sample costs wick past nvidia-smi's two runs, at 8
// GPUs and 64 replicas: parsing both answers (8 GPUs, 64 compute processes) and
// matching each process to its replica (a real shell per replica, CUDA_VISIBLE_DEVICES
// naming its GPU, its child the compute process: a walk up one parent each, and each
// replica's environment read). Reported: the share of a core it takes at one sample
// every SampleEvery.
func BenchmarkAttribute64(b *testing.B) {
	const gpusN, replicas = 8, 64
	var gpuRows, appRows strings.Builder
	for g := range gpusN {
		fmt.Fprintf(&gpuRows, "%d, GPU-%08d-0000-0000-0000-000000000000, %d, %d, 81559\n", g, g, 10*g, 1000*g)
	}
	roots := map[int]int{}
	for k := range replicas {
		cmd := exec.Command("sh", "-c", "sleep 300 & echo $!; wait")
		cmd.Env = append(os.Environ(), EnvVisible+"="+strconv.Itoa(k%gpusN))
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		child, _ := strconv.Atoi(strings.TrimSpace(line))
		b.Cleanup(func() {
			if p, err := os.FindProcess(child); err == nil {
				p.Kill()
			}
			cmd.Process.Kill()
			cmd.Wait()
		})
		roots[cmd.Process.Pid] = k
		fmt.Fprintf(&appRows, "%d, GPU-%08d-0000-0000-0000-000000000000, %d\n", child, k%gpusN, 500)
	}
	gpuOut, appOut := []byte(gpuRows.String()), []byte(appRows.String())
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		smp := &Sample{Devices: ParseDevices(gpuOut), Procs: ParseProcs(appOut)}
		if got := Attribute(smp, roots, "/proc"); len(got) != replicas {
			b.Fatalf("%d replicas matched", len(got))
		}
	}
	per := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(100*per.Seconds()/SampleEvery.Seconds(), "%core")
	b.ReportMetric(testkit.Load(), "load")
}
