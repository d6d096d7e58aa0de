package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
)

// Limits on container stats.
const (
	// maxStatsBytes bounds one stats record read from the Engine (about 2 KiB, more
	// with many networks or CPUs).
	maxStatsBytes = 1 << 20
	// maxTrackedContainers bounds the previous CPU samples kept: past it they are all
	// dropped, and each container's next CPU is its average since it was created.
	maxTrackedContainers = 4096
	// trackedAge is how long a previous sample is kept without being refreshed.
	trackedAge = time.Minute
)

// cpuSample is a container's CPU time at a moment.
type cpuSample struct {
	total uint64 // ns
	at    time.Time
}

// statsCache keeps each container's previous CPU sample: the Engine's one-shot
// stats carry no previous sample (asking for one makes the Engine wait a second).
type statsCache struct {
	mu   sync.Mutex
	prev map[string]cpuSample
}

// Usage returns the CPU and memory of each running container of the app, from the
// Engine's one-shot stats (stream=false, one-shot=true), one request per container,
// concurrently. Memory is what `docker stats` shows: usage less the inactive file
// cache.
func (s *Scheduler) Usage(ctx context.Context, appID string) (map[sched.ReplicaKey]sched.Usage, error) {
	cli, sums, _, err := s.appContainers(ctx, appID)
	if err != nil {
		return nil, err
	}
	var running []container.Summary
	for _, c := range sums {
		if c.State == container.StateRunning {
			running = append(running, c)
		}
	}
	out := map[sched.ReplicaKey]sched.Usage{}
	var mu sync.Mutex
	err = forEach(ctx, len(running), func(i int) error {
		c := running[i]
		r := replica{sum: c}
		if r.id() < 0 || r.role() == "" {
			return nil
		}
		u, ok, err := s.containerUsage(ctx, cli, c)
		if err != nil || !ok {
			return err
		}
		mu.Lock()
		out[sched.ReplicaKey{Role: r.role(), Replica: r.id()}] = u
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage of %s: %w", appID, err)
	}
	return out, nil
}

// containerUsage reads one container's stats; ok is false when it is gone or stopped.
func (s *Scheduler) containerUsage(ctx context.Context, cli *client.Client, c container.Summary) (sched.Usage, bool, error) {
	res, err := cli.ContainerStats(ctx, c.ID, client.ContainerStatsOptions{})
	if cerrdefs.IsNotFound(err) {
		return sched.Usage{}, false, nil
	}
	if err != nil {
		return sched.Usage{}, false, s.engineErr(err)
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(io.LimitReader(res.Body, maxStatsBytes)).Decode(&st); err != nil {
		return sched.Usage{}, false, fmt.Errorf("stats of container %s: %w", shortID(c.ID), err)
	}
	if st.Read.IsZero() || st.Read.Year() < 2000 {
		return sched.Usage{}, false, nil // a stopped container's stats are empty
	}
	now := st.Read
	total := st.CPUStats.CPUUsage.TotalUsage
	u := sched.Usage{At: now, RSS: memUsage(st.MemoryStats)}
	from, base := time.Unix(c.Created, 0), uint64(0)
	s.stats.mu.Lock()
	if s.stats.prev == nil || len(s.stats.prev) > maxTrackedContainers {
		s.stats.prev = map[string]cpuSample{}
	}
	if p, ok := s.stats.prev[c.ID]; ok && p.total <= total && p.at.Before(now) {
		from, base = p.at, p.total
	}
	s.stats.prev[c.ID] = cpuSample{total: total, at: now}
	for id, p := range s.stats.prev {
		if now.Sub(p.at) > trackedAge {
			delete(s.stats.prev, id)
		}
	}
	s.stats.mu.Unlock()
	if dt := now.Sub(from); dt > 0 {
		u.CPU = float64(total-base) / float64(dt.Nanoseconds())
	}
	return u, true, nil
}

// memUsage is the memory `docker stats` shows: usage less the inactive file cache
// (total_inactive_file on cgroup v1, inactive_file on v2), which the kernel reclaims
// first.
func memUsage(m container.MemoryStats) uint64 {
	inactive, ok := m.Stats["total_inactive_file"]
	if !ok {
		inactive = m.Stats["inactive_file"]
	}
	if inactive < m.Usage {
		return m.Usage - inactive
	}
	return m.Usage
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
