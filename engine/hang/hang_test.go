package hang

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

func TestAfter(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		own       time.Duration
		intervals []time.Duration
		want      time.Duration
	}{
		{0, nil, DefaultAfter},
		{0, []time.Duration{s, 2 * s, 3 * s}, DefaultAfter}, // 10 x 2 s is under 5 min
		// Slow steps: ten times the median (one long checkpoint step does not move it).
		{0, []time.Duration{60 * s, 50 * s, 70 * s, 900 * s}, 700 * s},
		{20 * s, []time.Duration{60 * s}, 20 * s}, // the app's own time wins
		{-1, nil, -1}, // off
	} {
		if got := After(tc.own, tc.intervals); got != tc.want {
			t.Errorf("After(%v, %v) = %v, want %v", tc.own, tc.intervals, got, tc.want)
		}
	}
}

func TestJudge(t *testing.T) {
	start := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
	after := 20 * time.Second
	for _, tc := range []struct {
		name  string
		ps    []Progress
		now   time.Time
		ranks []string // nil: no hang
		msg   string
	}{
		{
			name: "quiet for less than the hang time",
			ps:   []Progress{{"rank 0", at(100), 3}, {"rank 1", at(99), 2}},
			now:  at(119),
		},
		{
			// hang.py: rank 0 printed step 3 and waits in all_reduce, rank 1 sleeps
			// before it and printed step 2 last.
			name:  "a rank behind the others in steps",
			ps:    []Progress{{"rank 0", at(100), 3}, {"rank 1", at(100), 2}, {"rank 2", at(100), 3}},
			now:   at(142),
			ranks: []string{"rank 1"},
			msg:   "hang: no output or new step for 42s (alarm after 20s); rank 1 stopped first, at step 2 (the others at 3)",
		},
		{
			name:  "one step, one rank quiet well before the others",
			ps:    []Progress{{"rank 0", at(100), 5}, {"rank 1", at(60), 5}},
			now:   at(130),
			ranks: []string{"rank 1"},
			msg:   "hang: no output or new step for 30s (alarm after 20s); rank 1 stopped first, at step 5",
		},
		{
			name:  "every rank at one step and time",
			ps:    []Progress{{"rank 0", at(100), 5}, {"rank 1", at(100).Add(300 * time.Millisecond), 5}},
			now:   at(130),
			ranks: []string{},
			msg:   "hang: no output or new step for 30s (alarm after 20s); every rank stopped at step 5 (wick stack shows where)",
		},
		{
			// A hang in init_process_group: nothing printed since the start.
			name:  "no output at all",
			ps:    []Progress{{"trainer/0", time.Time{}, -1}, {"trainer/1", time.Time{}, -1}},
			now:   at(25),
			ranks: []string{},
			msg:   "hang: no output or new step for 25s (alarm after 20s) (wick stack shows where)",
		},
		{
			name:  "a replica that never printed while the other did",
			ps:    []Progress{{"python/0", at(10), -1}, {"python/1", time.Time{}, -1}},
			now:   at(40),
			ranks: []string{"python/1"},
			msg:   "hang: no output or new step for 30s (alarm after 20s); python/1 stopped first",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Judge(tc.ps, start, tc.now, after)
			if tc.ranks == nil {
				if h != nil {
					t.Fatalf("hang %+v, want none", h)
				}
				return
			}
			if h == nil {
				t.Fatal("no hang")
			}
			if !slices.Equal(h.Ranks, tc.ranks) && (len(h.Ranks) > 0 || len(tc.ranks) > 0) {
				t.Errorf("ranks %q, want %q", h.Ranks, tc.ranks)
			}
			if got := h.Message(tc.now); got != tc.msg {
				t.Errorf("message\n got %s\nwant %s", got, tc.msg)
			}
		})
	}
	if h := Judge([]Progress{{"rank 0", at(1), 1}}, start, at(1000), -1); h != nil {
		t.Errorf("alarm off, got %+v", h)
	}
}

func TestHangJSON(t *testing.T) {
	h := &spec.Hang{Since: time.Unix(100, 0).UTC(), After: 1500 * time.Millisecond, Step: 2, Ahead: 3}
	b, err := json.Marshal(spec.AppStatus{AppID: "x", Hang: h})
	if err != nil {
		t.Fatal(err)
	}
	want := `"hang":{"kind":"hang","since":"1970-01-01T00:01:40Z","after_s":1.5,"ranks":[],"step":2,"others_step":3}`
	if !strings.Contains(string(b), want) {
		t.Errorf("json %s\nwant %s", b, want)
	}
	var back spec.AppStatus
	if err := json.Unmarshal(b, &back); err != nil || back.Hang == nil || back.Hang.After != h.After || back.Hang.Step != 2 {
		t.Errorf("round trip: %v %+v", err, back.Hang)
	}
}
