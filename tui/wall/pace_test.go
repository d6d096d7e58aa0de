package wall

import (
	"testing"
	"time"
)

// TestFlushPaceSlowsWhileLinesStream: the pump's interval is flushInterval for lines
// that come now and then, streamInterval once lines have come within an interval of
// each batch streamAfter times on end, and flushInterval again after a lull.
func TestFlushPaceSlowsWhileLinesStream(t *testing.T) {
	var p flushPace
	at := time.Unix(1000, 0)
	if d := p.first(at); d != flushInterval {
		t.Fatalf("the first batch waits %v, want %v", d, flushInterval)
	}
	// A stream: each batch's lines come 10 ms after the last was sent.
	for i := range streamAfter {
		at = at.Add(flushInterval)
		p.sent(at)
		at = at.Add(10 * time.Millisecond)
		d := p.first(at)
		want := flushInterval
		if i == streamAfter-1 {
			want = streamInterval
		}
		if d != want {
			t.Fatalf("batch %d of a stream waits %v, want %v", i+2, d, want)
		}
	}
	p.sent(at.Add(streamInterval))
	// A lull longer than the interval: the next lines come within flushInterval.
	at = at.Add(streamInterval + 2*streamInterval)
	if d := p.first(at); d != flushInterval {
		t.Fatalf("the first batch after a lull waits %v, want %v", d, flushInterval)
	}
	// Lines now and then (every 200 ms): never slowed.
	for i := range 3 * streamAfter {
		p.sent(at.Add(flushInterval))
		at = at.Add(200 * time.Millisecond)
		if d := p.first(at); d != flushInterval {
			t.Fatalf("batch %d of lines every 200 ms waits %v, want %v", i, d, flushInterval)
		}
	}
	// A pump of more than paceAbove replicas keeps flushInterval however lines come.
	f := flushPace{interval: flushInterval, fixed: true}
	for i := range 3 * streamAfter {
		f.sent(at)
		at = at.Add(10 * time.Millisecond)
		if d := f.first(at); d != flushInterval {
			t.Fatalf("batch %d of a fixed pace waits %v, want %v", i, d, flushInterval)
		}
	}
}
