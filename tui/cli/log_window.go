package cli

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/render"
)

// maxUnixSeconds is the largest unix time --since and --until take: 2262, where Go's
// nanosecond times end.
const maxUnixSeconds = math.MaxInt64/1_000_000_000 - 1

// parseWhen reads a time for --since/--until: RFC 3339, a clock time today, a unix time,
// or a duration before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q is a negative duration: a duration counts back from now (%s means %s ago)", s, strings.TrimPrefix(s, "-"), strings.TrimPrefix(s, "-"))
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, time.Local), nil
		}
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		// Beyond these, nanoseconds overflow int64 and the time wraps into the past.
		if !(secs >= 0 && secs <= maxUnixSeconds) {
			return time.Time{}, fmt.Errorf("unix time %q is out of range (0 to %d)", s, maxUnixSeconds)
		}
		return time.Unix(0, int64(secs*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("cannot read time %q (want RFC 3339, HH:MM:SS, unix seconds or a duration like 10m)", s)
}

func (f logFlags) options(now time.Time) (sched.LogOptions, error) {
	var o sched.LogOptions
	var err error
	if f.regex != "" {
		if o.Regex, err = regexp.Compile(f.regex); err != nil {
			return o, usagef("--regex: %v", err)
		}
	}
	if o.Streams, err = sched.ParseStream(f.streams); err != nil {
		return o, usagef("--streams: %v", err)
	}
	if o.Since, err = parseWhen(f.since, now); err != nil {
		return o, usagef("--since: %v", err)
	}
	if o.Until, err = parseWhen(f.until, now); err != nil {
		return o, usagef("--until: %v", err)
	}
	// A window that cannot hold a line is a mistake, not an empty log.
	if o.Since.After(now) {
		return o, usagef("--since %s is in the future (%s)", f.since, o.Since.Local().Format(time.DateTime))
	}
	if !o.Since.IsZero() && !o.Until.IsZero() && !o.Until.After(o.Since) {
		return o, usagef("--since %s --until %s holds nothing: --until must come after --since", f.since, f.until)
	}
	if f.lines < 0 {
		return o, usagef("--lines must not be negative")
	}
	for _, r := range f.ranks {
		if r < 0 {
			return o, usagef("--rank %d: a rank is not negative", r)
		}
	}
	o.Follow = f.follow
	o.Tail = f.lines
	return o, nil
}

// emptyWindowWarning counts the lines emit is given, when --since or --until is set;
// warn then says so if there were none: the times may be off, not the logs.
func (a *app) emptyWindowWarning(ident string, f logFlags, opts sched.LogOptions, emit func(sched.Line) error) (counted func(sched.Line) error, warn func()) {
	if opts.Since.IsZero() && opts.Until.IsZero() {
		return emit, func() {}
	}
	n := 0
	return func(l sched.Line) error { n++; return emit(l) }, func() {
		if n == 0 && a.ctx.Err() == nil {
			fmt.Fprintf(a.env.Stderr, "wick: warning: no line of %s in the window%s\n", render.Escape(ident), window(f, opts))
		}
	}
}

// window describes --since and --until for a message.
func window(f logFlags, o sched.LogOptions) string {
	s := ""
	if !o.Since.IsZero() {
		s += fmt.Sprintf(" --since %s (%s)", f.since, o.Since.Local().Format(time.DateTime))
	}
	if !o.Until.IsZero() {
		s += fmt.Sprintf(" --until %s (%s)", f.until, o.Until.Local().Format(time.DateTime))
	}
	return s
}

// plain reports whether the whole log is printed as stored: no filter, no time, no
// following, no JSON. The raw file can then be copied instead of iterated line by line.
func (f logFlags) plain(o sched.LogOptions) bool {
	return o.Regex == nil && o.Since.IsZero() && o.Until.IsZero() && !o.Follow && o.Tail == 0 && !f.timestamps && !f.asJSON
}
