package local

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestReplicasForkedFromOneThread: the replicas of an app are forked from one thread
// of the supervisor's (spawner.go), not each from one of its own: the supervisor of
// 64 running replicas runs a few threads. Before, each replica held a thread for as
// long as it lived (1,024 replicas: 1,024 threads), and each fork copied the
// supervisor's table of every replica's log files, which the replica's exec closed.
func TestReplicasForkedFromOneThread(t *testing.T) {
	s := testScheduler(t, false)
	r := role("s", "sleep", "600")
	r.NumReplicas = 64
	id := start(t, s, appOf("threads", r), nil)
	defer func() {
		if err := s.Cancel(context.Background(), id); err != nil {
			t.Error(err)
		}
		waitApp(t, s, id)
	}()
	waitState(t, s, id, allRunning)
	_, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(raw.Supervisor.PID) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	threads := -1
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if threads < 1 || threads >= 32 {
		t.Fatalf("the supervisor of 64 running replicas runs %d threads, want fewer than 32", threads)
	}
}

// TestReplicaOutlivesTheOthersEnd: a replica runs to its end while 63 others of its
// app start and end (the thread it was forked from lives on: its parent-death
// signal follows that thread, golang/go#27505).
func TestReplicaOutlivesTheOthersEnd(t *testing.T) {
	s := testScheduler(t, false)
	quick := role("q", "true")
	quick.NumReplicas = 63
	long := role("l", "sh", "-c", "sleep 2; echo alive")
	id := start(t, s, appOf("outlive", long, quick), nil)
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded {
		t.Fatalf("%s: %s", st.State, st.Msg)
	}
	lines := logLines(t, s, id, "l", 0, sched.LogOptions{})
	if len(lines) != 1 || lines[0].Text != "alive" {
		t.Fatalf("the long replica's log: %+v", lines)
	}
}
