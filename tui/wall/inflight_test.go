package wall_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/wall"
)

// TestSlowUIBoundsLinesInFlight: a wall whose UI takes no batch for a while (as one
// catching up with 1,024 replicas is behind) holds about wall.MaxInFlight of lines
// read and not yet in its rings, not what the logs have (32 replicas x 8,000 lines
// are ~55 MB as lines; the line-count bounds alone held ~35 MB of them), and loses
// none: once the UI takes the batches, every line of every replica is in its pane.
func TestSlowUIBoundsLinesInFlight(t *testing.T) {
	const replicas, lines = 32, 8000
	e := newEnv(t)
	h := e.run(shApp("inflight", replicas, `seq -f "[rank $K] step %g loss 2.5000 lr 3.0e-04 grad_norm 1.55" 1 `+strconv.Itoa(lines)))
	e.wait(h)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := wall.New(benchContext(ctx, e.r), h, wall.Options{NoMetrics: true})
	defer w.Close()
	msgs := make(chan tea.Msg, 64)
	var exec func(tea.Cmd)
	exec = func(cmd tea.Cmd) {
		if cmd == nil {
			return
		}
		go func() {
			msg := cmd()
			if batch, ok := msg.(tea.BatchMsg); ok {
				for _, c := range batch {
					exec(c)
				}
				return
			}
			if msg != nil {
				select {
				case msgs <- msg:
				case <-ctx.Done():
				}
			}
		}()
	}
	// The slow UI: the feed's batches wait in held; the other messages are taken.
	var held []common.StreamMsg
	exec(w.Init())
	testkit.Wait(t, 30*time.Second, "the readers wait for room", func() (bool, string) {
		for {
			select {
			case msg := <-msgs:
				if s, ok := msg.(common.StreamMsg); ok {
					held = append(held, s)
				} else {
					exec(w.Update(msg))
				}
				continue
			default:
			}
			break
		}
		now, _ := w.InFlight()
		return now > wall.MaxInFlight-4<<10, strconv.FormatInt(now, 10) + " bytes in flight"
	})
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grown := int64(ms.HeapAlloc) - int64(heap0)
	t.Logf("stalled: %d MB of lines in flight, the heap grew %d MB", func() int64 { n, _ := w.InFlight(); return n >> 20 }(), grown>>20)
	// The records of the pump's batches may be in slices up to twice their length, and
	// the 32 readers' own state (their blocks and iterators) is a few MB whatever is in
	// flight (8-13 MB grown with 3 MB of lines in flight, 4 MB allowed): far from the
	// ~55 MB the logs hold.
	if grown > 3*wall.MaxInFlight+8<<20 {
		t.Errorf("the stalled wall's heap grew %d MB with %d MB of lines in flight allowed", grown>>20, wall.MaxInFlight>>20)
	}
	if _, peak := w.InFlight(); peak > wall.MaxInFlight {
		t.Errorf("%d bytes of lines were in flight, over the bound of %d", peak, wall.MaxInFlight)
	}

	// The UI catches up: every line is in its pane.
	for _, s := range held {
		exec(w.Update(s.Msg))
		exec(s.Next)
	}
	deadline := time.After(testkit.Scale(time.Minute))
	for !w.AllEnded() {
		select {
		case msg := <-msgs:
			if s, ok := msg.(common.StreamMsg); ok {
				exec(w.Update(s.Msg))
				exec(s.Next)
			} else {
				exec(w.Update(msg))
			}
		case <-deadline:
			t.Fatal("the wall never read every line")
		}
	}
	for _, c := range w.Counts() {
		if c.Received != lines || c.Held != lines {
			t.Errorf("pane %s: %d lines received, %d held; the replica wrote %d", c.Name, c.Received, c.Held, lines)
		}
	}
	if _, peak := w.InFlight(); peak > wall.MaxInFlight {
		t.Errorf("%d bytes of lines were in flight, over the bound of %d", peak, wall.MaxInFlight)
	}
}
