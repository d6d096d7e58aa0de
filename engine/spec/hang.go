package spec

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// MetaHangAfter is the AppDef metadata key that holds the app's hang time (a Go
// duration, "0" for off): `wick run --hang-after`. Every scheduler keeps the AppDef,
// so every face that observes the app reads the same time. Without it the time is
// engine/hang's default.
const MetaHangAfter = "wick/hang_after"

// ParseHangAfter reads a hang time as `wick run --hang-after` takes it: a Go duration
// ("90s", "5m"), or "0" / "off" to raise no hang alarm (returned as a negative time).
// "" and "auto" mean the default (0).
func ParseHangAfter(s string) (time.Duration, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "", "auto":
		return 0, nil
	case "0", "off", "none":
		return -1, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad hang time %q: want a duration such as 90s or 5m, off or auto", s)
	}
	return d, nil
}

// Hang is a running app whose replicas are all alive but whose progress stopped: no
// rank printed a line or reached a new step for After. It is found when an app is
// observed (engine/hang), never stored.
type Hang struct {
	// Since is when the last progress was seen: the last line of any rank, or the
	// start of the replicas when none printed.
	Since time.Time
	// After is the hang time that was passed: the app's own (MetaHangAfter), else the
	// default (the larger of 5 minutes and 10 times the median step interval).
	After time.Duration
	// Ranks are the ranks that stopped first ("rank 1", "trainer/0"): those behind the
	// others in steps, else those whose output stopped clearly before the others'.
	// Empty when every rank stopped at the same step and time.
	Ranks []string
	// Step is the last step the ranks of Ranks reached (the last step of every rank
	// when Ranks is empty), -1 when no step was seen; Ahead the step the others
	// reached when they are ahead, else Step.
	Step  int64
	Ahead int64
}

// MarshalJSON writes the hang as --json shows it: its kind, its time in seconds
// (after_s), and Ranks as [] rather than null.
func (h Hang) MarshalJSON() ([]byte, error) {
	ranks := h.Ranks
	if ranks == nil {
		ranks = []string{}
	}
	return json.Marshal(struct {
		Kind   string    `json:"kind"`
		Since  time.Time `json:"since"`
		AfterS float64   `json:"after_s"`
		Ranks  []string  `json:"ranks"`
		Step   int64     `json:"step"`
		Ahead  int64     `json:"others_step"`
	}{"hang", h.Since, h.After.Seconds(), ranks, h.Step, h.Ahead})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (h *Hang) UnmarshalJSON(b []byte) error {
	var v struct {
		Since  time.Time `json:"since"`
		AfterS float64   `json:"after_s"`
		Ranks  []string  `json:"ranks"`
		Step   int64     `json:"step"`
		Ahead  int64     `json:"others_step"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*h = Hang{Since: v.Since, After: time.Duration(v.AfterS * float64(time.Second)), Ranks: v.Ranks, Step: v.Step, Ahead: v.Ahead}
	return nil
}

// Message is the alarm's one line at now: "hang: no progress for 42s (alarm after
// 10s); rank 1 stopped first, at step 2 (the others at 3)".
func (h *Hang) Message(now time.Time) string {
	quiet := now.Sub(h.Since).Round(time.Second)
	var b strings.Builder
	fmt.Fprintf(&b, "hang: no output or new step for %s (alarm after %s)", quiet, h.After)
	switch {
	case len(h.Ranks) > 0:
		fmt.Fprintf(&b, "; %s stopped first", strings.Join(h.Ranks, ", "))
		if h.Step >= 0 {
			fmt.Fprintf(&b, ", at step %d", h.Step)
			if h.Ahead > h.Step {
				fmt.Fprintf(&b, " (the others at %d)", h.Ahead)
			}
		}
	case h.Step >= 0:
		fmt.Fprintf(&b, "; every rank stopped at step %d (wick stack shows where)", h.Step)
	default:
		b.WriteString(" (wick stack shows where)")
	}
	return b.String()
}
