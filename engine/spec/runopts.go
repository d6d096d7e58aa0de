package spec

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MaxStopTimeout is the largest stop_timeout a scheduler accepts, in seconds: a day.
// More is surely a typo, and a duration of 1e10 seconds would overflow.
const MaxStopTimeout = 86400

// OptType is the type of a run option's value.
type OptType int

// The run option types and the Go types of their values in a Cfg.
const (
	OptString OptType = iota // string
	OptInt                   // int
	OptFloat                 // float64
	OptBool                  // bool
	OptList                  // []string
	OptMap                   // map[string]string
)

// String names the type as `wick runopts` prints it.
func (t OptType) String() string {
	switch t {
	case OptString:
		return "str"
	case OptInt:
		return "int"
	case OptFloat:
		return "float"
	case OptBool:
		return "bool"
	case OptList:
		return "list[str]"
	case OptMap:
		return "dict[str,str]"
	}
	return fmt.Sprintf("OptType(%d)", int(t))
}

// RunOpt describes one scheduler run option.
type RunOpt struct {
	Name string  `json:"name"`
	Type OptType `json:"-"`
	// Default is nil or a value of the Go type of Type.
	Default  any    `json:"default,omitempty"`
	Required bool   `json:"required,omitempty"`
	Help     string `json:"help"`
}

// RunOpts is a scheduler's ordered set of run options.
type RunOpts []RunOpt

// Get returns the option named name.
func (o RunOpts) Get(name string) (RunOpt, bool) {
	for _, opt := range o {
		if opt.Name == name {
			return opt, true
		}
	}
	return RunOpt{}, false
}

// Names lists the options' names in order.
func (o RunOpts) Names() []string {
	names := make([]string, len(o))
	for i, opt := range o {
		names[i] = opt.Name
	}
	return names
}

// Cfg holds run option values by name, each of the Go type of its option.
type Cfg map[string]any

// ErrInvalidRunOpt is wrapped by every run option error.
var ErrInvalidRunOpt = errors.New("invalid run option")

// Cast turns the string form of a value into the option's type: strict bools
// (true/1/yes/on, false/0/no/off), lists split on ',' or ';', maps of k:v pairs split on
// ',' or ';' (TorchX's syntax: '=' is taken by the key).
func (opt RunOpt) Cast(s string) (any, error) {
	wrap := func(err error) error {
		return fmt.Errorf("%w %s=%q: %v", ErrInvalidRunOpt, opt.Name, s, err)
	}
	switch opt.Type {
	case OptString:
		return s, nil
	case OptInt:
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, wrap(errors.New("want an integer"))
		}
		return v, nil
	case OptFloat:
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, wrap(errors.New("want a number"))
		}
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, wrap(errors.New("want a finite number"))
		}
		return v, nil
	case OptBool:
		v, err := ParseBool(s)
		if err != nil {
			return nil, wrap(err)
		}
		return v, nil
	case OptList:
		return SplitList(s), nil
	case OptMap:
		m := map[string]string{}
		for _, item := range SplitList(s) {
			k, v, ok := strings.Cut(item, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, wrap(fmt.Errorf("want KEY:VALUE pairs, got %q", item))
			}
			m[strings.TrimSpace(k)] = v
		}
		return m, nil
	}
	return nil, wrap(errors.New("unknown option type"))
}

// SplitList splits on ',' and ';', trimming items and dropping empty ones.
func SplitList(s string) []string {
	var out []string
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// ParseBool accepts true/1/yes/on and false/0/no/off, in any case; anything else is an
// error (TorchX silently read every other word as false).
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes", "on", "t", "y":
		return true, nil
	case "false", "0", "no", "off", "f", "n":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (want true or false)", s)
}

// KV is one key and its raw string value, in the order written.
type KV struct{ Key, Value string }

// SplitCfg parses "a=b,c=d" the TorchX way: split on '='; in each middle chunk the last
// ',' or ';' separates the previous value from the next key, so "FOO=v1,v2,BAR=v3" gives
// FOO="v1,v2" and BAR="v3". Values may be quoted with ' or " to hold '=', ',' or ';'.
func SplitCfg(s string) ([]KV, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	chunks, err := splitQuoted(s, '=')
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidRunOpt, s, err)
	}
	if len(chunks) < 2 {
		return nil, fmt.Errorf("%w %q: want KEY=VALUE[,KEY=VALUE...]", ErrInvalidRunOpt, s)
	}
	var out []KV
	key := strings.TrimSpace(chunks[0])
	for i := 1; i < len(chunks); i++ {
		chunk := chunks[i]
		var val, next string
		if i == len(chunks)-1 {
			val = chunk
		} else {
			j := lastUnquoted(chunk)
			if j < 0 {
				return nil, fmt.Errorf("%w %q: no ',' before key in %q", ErrInvalidRunOpt, s, chunk)
			}
			val, next = chunk[:j], chunk[j+1:]
		}
		if key == "" {
			return nil, fmt.Errorf("%w %q: empty key", ErrInvalidRunOpt, s)
		}
		out = append(out, KV{Key: key, Value: unquote(strings.TrimSpace(val))})
		key = strings.TrimSpace(next)
	}
	return out, nil
}

// splitQuoted splits s on sep outside of quotes, keeping the quotes.
func splitQuoted(s string, sep byte) ([]string, error) {
	var parts []string
	var quote byte
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	return append(parts, s[start:]), nil
}

// lastUnquoted finds the last ',' or ';' of chunk outside quotes.
func lastUnquoted(chunk string) int {
	idx := -1
	var quote byte
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ',' || c == ';':
			idx = i
		}
	}
	return idx
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// ParseCfg parses "a=b,c=d" and casts each value to its option's type. An unknown key is
// an error naming the key and the closest known one; so is a key given twice.
func (o RunOpts) ParseCfg(s string) (Cfg, error) {
	kvs, err := SplitCfg(s)
	if err != nil {
		return nil, err
	}
	cfg := Cfg{}
	for _, kv := range kvs {
		if _, dup := cfg[kv.Key]; dup {
			return nil, fmt.Errorf("%w: %s given twice", ErrInvalidRunOpt, kv.Key)
		}
		v, err := o.Cast(kv.Key, kv.Value)
		if err != nil {
			return nil, err
		}
		cfg[kv.Key] = v
	}
	return cfg, nil
}

// ParseCfgLenient is ParseCfg for -cfg on the command line, as TorchX's
// runopts.cfg_from_str reads it: a key that is no option is left out with a warning
// ("unknown run option passed to scheduler: KEY=VALUE", and the closest key), not an
// error. A bad value of a known key is still an error.
func (o RunOpts) ParseCfgLenient(s string) (Cfg, []string, error) {
	kvs, err := SplitCfg(s)
	if err != nil {
		return nil, nil, err
	}
	cfg := Cfg{}
	var warns []string
	for _, kv := range kvs {
		if _, ok := o.Get(kv.Key); !ok {
			warns = append(warns, fmt.Sprintf("unknown run option passed to scheduler: %s=%s%s; skipped, as TorchX does",
				kv.Key, kv.Value, DidYouMean(kv.Key, o.Names())))
			continue
		}
		if _, dup := cfg[kv.Key]; dup {
			return nil, nil, fmt.Errorf("%w: %s given twice", ErrInvalidRunOpt, kv.Key)
		}
		v, err := o.Cast(kv.Key, kv.Value)
		if err != nil {
			return nil, nil, err
		}
		cfg[kv.Key] = v
	}
	return cfg, warns, nil
}

// Cast casts the string value of the option named key, rejecting unknown keys.
func (o RunOpts) Cast(key, value string) (any, error) {
	opt, ok := o.Get(key)
	if !ok {
		return nil, o.unknown(key)
	}
	return opt.Cast(value)
}

// CfgStrings writes run options in their string form (FormatValue), which
// RunOpts.CfgValues reads back: how a scheduler records them with an app, to describe
// it later. Nil for none.
func CfgStrings(cfg Cfg) map[string]string {
	if len(cfg) == 0 {
		return nil
	}
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		out[k] = FormatValue(v)
	}
	return out
}

// CfgValues reads back run options recorded by CfgStrings, each cast to its option's
// type. One that o does not know or cannot read (recorded by another version of wick)
// is left out: what comes back can fill a form and launch again. Nil for none.
func (o RunOpts) CfgValues(raw map[string]string) Cfg {
	if len(raw) == 0 {
		return nil
	}
	cfg := make(Cfg, len(raw))
	for k, v := range raw {
		if val, err := o.Cast(k, v); err == nil {
			cfg[k] = val
		}
	}
	return cfg
}

func (o RunOpts) unknown(key string) error {
	return fmt.Errorf("%w: unknown key %q%s", ErrInvalidRunOpt, key, DidYouMean(key, o.Names()))
}

// Resolve checks cfg against the options: unknown keys and values of the wrong type are
// errors, required options must be present, and defaults fill in the rest. It returns a
// new Cfg.
func (o RunOpts) Resolve(cfg Cfg) (Cfg, error) {
	out := Cfg{}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		opt, ok := o.Get(k)
		if !ok {
			return nil, o.unknown(k)
		}
		v := cfg[k]
		if v == nil {
			continue
		}
		if !opt.Type.holds(v) {
			return nil, fmt.Errorf("%w %s: want %s, got %v (%T)", ErrInvalidRunOpt, k, opt.Type, v, v)
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, fmt.Errorf("%w %s=%v: want a finite number", ErrInvalidRunOpt, k, f)
		}
		out[k] = v
	}
	for _, opt := range o {
		if _, ok := out[opt.Name]; ok {
			continue
		}
		if opt.Required {
			return nil, fmt.Errorf("%w: %s is required (-cfg %s=..., or set it in .torchxconfig)", ErrInvalidRunOpt, opt.Name, opt.Name)
		}
		if opt.Default != nil {
			out[opt.Name] = opt.Default
		}
	}
	return out, nil
}

func (t OptType) holds(v any) bool {
	switch v.(type) {
	case string:
		return t == OptString
	case int:
		return t == OptInt
	case float64:
		return t == OptFloat
	case bool:
		return t == OptBool
	case []string:
		return t == OptList
	case map[string]string:
		return t == OptMap
	}
	return false
}

// String returns the string value of key, or "".
func (c Cfg) String(key string) string { s, _ := c[key].(string); return s }

// Int returns the int value of key, or 0.
func (c Cfg) Int(key string) int { v, _ := c[key].(int); return v }

// Float returns the float value of key, or 0.
func (c Cfg) Float(key string) float64 { v, _ := c[key].(float64); return v }

// Bool returns the bool value of key, or false.
func (c Cfg) Bool(key string) bool { v, _ := c[key].(bool); return v }

// List returns the list value of key, or nil.
func (c Cfg) List(key string) []string { v, _ := c[key].([]string); return v }

// Map returns the map value of key, or nil.
func (c Cfg) Map(key string) map[string]string { v, _ := c[key].(map[string]string); return v }

// Merge returns a copy of c with every key of other that c lacks: c wins.
func (c Cfg) Merge(other Cfg) Cfg {
	out := maps.Clone(c)
	if out == nil {
		out = Cfg{}
	}
	for k, v := range other {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// FormatValue writes a value in the string form Cast reads back.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case []string:
		return strings.Join(x, ",")
	case map[string]string:
		parts := make([]string, 0, len(x))
		for _, k := range SortedKeys(x) {
			parts = append(parts, k+":"+x[k])
		}
		return strings.Join(parts, ",")
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
