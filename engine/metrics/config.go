package metrics

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Section is the .torchxconfig section that configures metrics.
const Section = "wick:metrics"

// DefaultDivergence is the factor by which a rank's value may differ from the median of
// the other ranks' values at the same step before it is an alarm. Ranks of a data
// parallel job see different batches, so their losses differ by a few percent; a rank
// at three times the others has diverged.
const DefaultDivergence = 3

// Limits on what a configuration may ask for.
const (
	maxPatterns   = 32
	maxPatternLen = 512
	maxNames      = 256
)

// Config says which metrics to take and when to raise alarms. The zero value takes
// every metric with the default step names and checks nothing for divergence; use
// DefaultConfig for the defaults.
type Config struct {
	// Only, when not empty, names the only metrics taken (besides Patterns).
	Only []string
	// Ignore names more metrics never taken, besides the built-in ids and sizes.
	Ignore []string
	// Watch names the metrics checked for a rank departing from the others; a name
	// matches a metric equal to it or containing it ("loss" watches eval_loss).
	Watch []string
	// Divergence is the factor of that check; 0 turns it off.
	Divergence float64
	// StepKeys are the names that give the x axis (default DefaultStepKeys).
	StepKeys []string
	// Patterns are the user's own expressions, tried on every line.
	Patterns []Pattern
}

// DefaultConfig takes every metric and watches the losses with DefaultDivergence.
func DefaultConfig() Config {
	return Config{Watch: []string{"loss"}, Divergence: DefaultDivergence}
}

// Pattern is a user's regular expression for one metric: its first group is the value.
type Pattern struct {
	Name string
	Re   *regexp.Regexp
}

// NewPattern compiles a pattern for the metric name. The expression must have a group
// (the value); it is RE2, so matching is linear in the line's length.
func NewPattern(name, expr string) (Pattern, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || len(name) > MaxNameLen {
		return Pattern{}, fmt.Errorf("pattern name %q must be 1 to %d characters", name, MaxNameLen)
	}
	if len(expr) > maxPatternLen {
		return Pattern{}, fmt.Errorf("pattern %s is longer than %d characters", name, maxPatternLen)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return Pattern{}, fmt.Errorf("pattern %s: %w", name, err)
	}
	if re.NumSubexp() < 1 {
		return Pattern{}, fmt.Errorf("pattern %s: %q has no group: put the value in (...)", name, expr)
	}
	return Pattern{Name: name, Re: re}, nil
}

// extract adds the pattern's value when it matches the line.
func (pt *Pattern) extract(text string, p *Parsed) {
	m := pt.Re.FindStringSubmatchIndex(text)
	if m == nil || m[2] < 0 {
		return
	}
	tok := strings.TrimSuffix(strings.TrimSpace(text[m[2]:m[3]]), "%")
	if len(tok) == 0 || len(tok) > maxNumberLen {
		return
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return
	}
	p.Samples = append(p.Samples, Sample{Name: pt.Name, Value: v})
}

// ParseConfig reads a [wick:metrics] section over the defaults:
//
//	[wick:metrics]
//	metrics = loss, eval_loss, lr        # take only these (default: every name=number)
//	ignore = data_time                   # never take these
//	watch = loss                         # checked for a departing rank (default: loss)
//	divergence = 3                       # the factor of that check; 0 turns it off
//	step = step, global_step             # the names of the x axis
//	pattern.acc = top-1 acc (\S+)%       # a metric of your own: the group is the value
//
// Errors name the key; the caller adds the file.
func ParseConfig(section map[string]string) (Config, error) {
	c := DefaultConfig()
	keys := make([]string, 0, len(section))
	for k := range section {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := section[k]
		var err error
		switch {
		case k == "metrics":
			c.Only, err = names(v)
		case k == "ignore":
			c.Ignore, err = names(v)
		case k == "watch":
			c.Watch, err = names(v)
		case k == "step":
			c.StepKeys, err = names(v)
		case k == "divergence":
			c.Divergence, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil && (c.Divergence != 0 && c.Divergence <= 1 || math.IsNaN(c.Divergence) || math.IsInf(c.Divergence, 0)) {
				err = fmt.Errorf("must be 0 (off) or a factor above 1, not %s", v)
			} else if err != nil {
				err = fmt.Errorf("%q is not a number", v)
			}
		case strings.HasPrefix(k, "pattern."):
			if len(c.Patterns) >= maxPatterns {
				err = fmt.Errorf("at most %d patterns", maxPatterns)
				break
			}
			var p Pattern
			if p, err = NewPattern(strings.TrimPrefix(k, "pattern."), v); err == nil {
				c.Patterns = append(c.Patterns, p)
			}
		default:
			err = fmt.Errorf("unknown key (want metrics, ignore, watch, divergence, step or pattern.NAME)")
		}
		if err != nil {
			return Config{}, fmt.Errorf("[%s] %s: %w", Section, k, err)
		}
	}
	return c, nil
}

// names reads a comma- or space-separated list of metric names.
func names(v string) ([]string, error) {
	f := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(f) > maxNames {
		return nil, fmt.Errorf("at most %d names", maxNames)
	}
	for i, n := range f {
		if len(n) > MaxNameLen {
			return nil, fmt.Errorf("name %.20q... is longer than %d characters", n, MaxNameLen)
		}
		f[i] = strings.ToLower(n)
	}
	return f, nil
}

// Watched reports whether the configuration checks name for divergence.
func (c *Config) Watched(name string) bool {
	if c.Divergence == 0 {
		return false
	}
	for _, w := range c.Watch {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}
