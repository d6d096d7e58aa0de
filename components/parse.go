package components

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/wick-dev/wick/engine/spec"
)

// Parse reads a component's command-line arguments. Every parameter is a flag --NAME
// (also -X for its short form; a one-letter name is its own short form, as in TorchX),
// typed by its ParamType:
//
//   - int and float values must parse as numbers;
//   - bools accept --flag, --flag=VALUE (true/false, 1/0, yes/no, on/off) and TorchX's
//     spelling --flag True / --flag False;
//   - lists are written a,b,c; maps K=V,K2=V2 (';' also separates, values may be
//     quoted with ' or ", as in TorchX);
//   - a flag given twice is an error, as in TorchX.
//
// Each value comes from, in order of precedence: argv, then defaults (the
// [component:NAME] section of .torchxconfig, as strings), then the parameter's
// declared default. A required parameter with no value is an error, and so is a
// default naming no parameter. An Optional parameter set to "" is unset.
//
// When the component takes varargs, the first argument that is not a flag, and
// everything after it, are the varargs (so "-n" in "utils.sh echo -n hi" reaches echo);
// so is everything after "--". With no varargs in argv, defaults[c.Varargs] (split the
// way a shell would) supplies them. A component without varargs rejects any positional
// argument.
//
// --help, and -h unless the component has a parameter whose short form is h (dist.ddp's
// named resource), make Parse return ErrHelp: print c.Usage().
func (c *Component) Parse(argv []string, defaults map[string]string) (Args, error) {
	if err := c.check(); err != nil {
		return Args{}, err
	}
	fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SetInterspersed(c.Varargs == "")
	// --rdzv-port reaches --rdzv_port: parameter names never hold '-' (see check).
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "-", "_"))
	})
	raw := make([]*rawValue, len(c.Params))
	for i, p := range c.Params {
		raw[i] = &rawValue{typ: p.Type}
		f := fs.VarPF(raw[i], p.Name, p.short(), p.Help)
		if p.Type == Bool {
			f.NoOptDefVal = "true"
		}
	}
	merged, err := c.normalizeArgv(argv)
	if err != nil {
		return Args{}, err
	}
	if err := fs.Parse(merged); err != nil {
		return Args{}, c.flagError(err)
	}
	rest := fs.Args()
	if c.Varargs == "" && len(rest) > 0 {
		return Args{}, fmt.Errorf("unexpected argument %q: %s takes no positional arguments", rest[0], c.Name)
	}

	for _, k := range spec.SortedKeys(defaults) {
		if k == c.Varargs && k != "" {
			continue
		}
		if c.param(k) == nil {
			return Args{}, fmt.Errorf("default for unknown parameter %q of %s%s", k, c.Name, spec.DidYouMean(k, c.paramNames()))
		}
	}

	args := Args{Values: map[string]any{}}
	var missing []string
	for i, p := range c.Params {
		var (
			s      string
			source string
		)
		switch d, inDefaults := defaults[p.Name]; {
		case len(raw[i].vals) > 0:
			// The last value wins, as in argparse, which converts each one it reads
			// (type=int, float): an earlier value that is no number is an error too.
			if err := p.checkEarlier(raw[i].vals); err != nil {
				return Args{}, err
			}
			s, source = raw[i].vals[len(raw[i].vals)-1], "value"
		case inDefaults:
			s, source = d, "default"
		case p.Required:
			missing = append(missing, p.flag())
			continue
		case p.Default == "" && p.Type != String:
			continue // no default: unset
		default:
			s, source = p.Default, "declared"
		}
		v, ok, err := c.decode(p, s, source, &args)
		if err != nil {
			if source == "declared" {
				return Args{}, fmt.Errorf("%s: parameter %s has a bad default: %w", c.Name, p.flag(), err)
			}
			return Args{}, fmt.Errorf("invalid %s %q for %s: %w", source, s, p.flag(), err)
		}
		if !ok {
			if p.Required {
				missing = append(missing, p.flag())
			}
			continue
		}
		args.Values[p.Name] = v
	}
	if len(missing) == 1 {
		return Args{}, fmt.Errorf("missing required parameter %s", missing[0])
	}
	if len(missing) > 1 {
		return Args{}, fmt.Errorf("missing required parameters %s", strings.Join(missing, ", "))
	}
	if c.Varargs != "" {
		args.Varargs = append([]string(nil), rest...)
		if len(rest) == 0 {
			if d, ok := defaults[c.Varargs]; ok {
				words, err := SplitWords(d)
				if err != nil {
					return Args{}, fmt.Errorf("invalid default for %s: %w", c.Varargs, err)
				}
				args.Varargs = words
			}
		}
	}
	return args, nil
}

// decode converts a parameter's value from source ("value": argv; "default":
// .torchxconfig; "declared": the component's): p.parse, but a bool from argv or the
// config is read as TorchX reads it (torchxBool), and its warnings go to args.
func (c *Component) decode(p Param, s, source string, args *Args) (any, bool, error) {
	if p.Type != Bool || source == "declared" {
		return p.parse(s)
	}
	v, warn, err := torchxBool(s, source)
	if warn != "" {
		args.Warnings = append(args.Warnings, fmt.Sprintf("%s = %s in the defaults of %s: %s", p.Name, shown(s), c.Name, warn))
	}
	return v, err == nil, err
}

// checkEarlier checks the values of a repeated int or float flag before the last
// (argparse converts every occurrence; bools, lists and maps it reads as strings).
func (p Param) checkEarlier(vals []string) error {
	if p.Type != Int && p.Type != Float {
		return nil
	}
	for _, v := range vals[:len(vals)-1] {
		if _, _, err := p.parse(v); err != nil {
			return fmt.Errorf("invalid value %q for %s: %w", v, p.flag(), err)
		}
	}
	return nil
}

// rawValue collects the raw strings a flag was given; Parse converts them afterwards so
// that every error names the flag in one clear line.
type rawValue struct {
	typ  ParamType
	vals []string
}

func (v *rawValue) String() string {
	if len(v.vals) == 0 {
		return ""
	}
	return v.vals[len(v.vals)-1]
}

func (v *rawValue) Set(s string) error { v.vals = append(v.vals, s); return nil }
func (v *rawValue) Type() string       { return v.typ.String() }

// flag is how messages name the parameter: -j for a one-letter name, else --name.
func (p Param) flag() string {
	if len(p.Name) == 1 {
		return "-" + p.Name
	}
	return "--" + p.Name
}

// short is the parameter's one-letter flag: Short, or the name itself when it is one
// letter long (TorchX's rule: -j, -m, -h).
func (p Param) short() string {
	if p.Short != "" {
		return p.Short
	}
	if len(p.Name) == 1 {
		return p.Name
	}
	return ""
}

// parse converts the string form of a value. ok is false when the value is unset: an
// empty list or map, or an Optional parameter given "".
func (p Param) parse(s string) (v any, ok bool, err error) {
	if s == "" && (p.Optional || p.Type == List || p.Type == Map) {
		return nil, false, nil
	}
	switch p.Type {
	case String:
		return s, true, nil
	case Int:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, false, errors.New("want an int")
		}
		return n, true, nil
	case Float:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, false, errors.New("want a float")
		}
		return f, true, nil
	case Bool:
		b, err := spec.ParseBool(s)
		if err != nil {
			return nil, false, errors.New("want a bool (true or false)")
		}
		return b, true, nil
	case List:
		l := splitComma(s)
		return l, len(l) > 0, nil
	case Map:
		m, err := parseMap(s)
		if err != nil {
			return nil, false, err
		}
		return m, len(m) > 0, nil
	}
	return nil, false, fmt.Errorf("unknown parameter type %v", p.Type)
}

// splitComma splits a list value on ',', trimming items and dropping empty ones.
func splitComma(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseMap reads K=V,K2=V2 with TorchX's rules (those of -cfg strings).
func parseMap(s string) (map[string]string, error) {
	kvs, err := spec.SplitCfg(s)
	if err != nil {
		return nil, errors.New("want a map written KEY=VALUE[,KEY=VALUE...]")
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		if _, dup := m[kv.Key]; dup {
			return nil, fmt.Errorf("%s is given twice", kv.Key)
		}
		m[kv.Key] = kv.Value
	}
	return m, nil
}

// formatValue writes a parsed value back in the string form parse reads.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []string:
		return strings.Join(x, ",")
	case map[string]string:
		parts := make([]string, 0, len(x))
		for _, k := range spec.SortedKeys(x) {
			parts = append(parts, k+"="+x[k])
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// normalizeArgv rewrites argv into what pflag reads the way argparse (TorchX's parser)
// reads it:
//
//   - a long flag may be abbreviated to any unambiguous prefix (--scr for --script);
//     an ambiguous one is an error naming the candidates;
//   - a flag that takes a value takes the next token, as argparse does, unless that
//     token looks like a flag (starts with '-' and is not a negative number): then the
//     flag has no value (an error, except for a bool, which wick reads as true);
//   - a bool flag therefore takes the next token too (--debug 0 --image foo:1 is debug
//     0 and image foo:1), and Parse decodes it as TorchX does;
//
// and rejects pflag's "-test." prefix, which pflag silently skips.
func (c *Component) normalizeArgv(argv []string) ([]string, error) {
	out := make([]string, 0, len(argv))
	for i := 0; i < len(argv); i++ {
		tok := argv[i]
		next := func() (string, bool) {
			if i+1 < len(argv) && !looksLikeFlag(argv[i+1]) {
				return argv[i+1], true
			}
			return "", false
		}
		switch {
		case tok == "--":
			return append(out, argv[i:]...), nil
		case len(tok) < 2 || tok[0] != '-':
			if c.Varargs != "" {
				return append(out, argv[i:]...), nil
			}
			out = append(out, tok)
		case len(strings.SplitN(tok, "=", 2)[0]) > 2 && tok[1] != '-' && c.param(strings.SplitN(tok[1:], "=", 2)[0]) != nil:
			// -replicas: one dash before a long name. pflag would read it as -r with
			// the value "eplicas" and take the next argument for a positional one.
			name := strings.SplitN(tok[1:], "=", 2)[0]
			return nil, fmt.Errorf("unknown flag -%s for %s (did you mean --%s?)", shown(name), c.Name, name)
		case strings.HasPrefix(tok, "--"):
			toks, skip, err := c.longArg(argv, i)
			if err != nil {
				return nil, err
			}
			out = append(out, toks...)
			i += skip
		default:
			if strings.HasPrefix(tok, "-test.") {
				return nil, fmt.Errorf("unknown flag %s for %s", shown(tok), c.Name)
			}
			out = append(out, tok)
			// A group of short flags: bools may be stacked (-ab); the first one taking a
			// value ends the group, taking the rest of it or the next argument.
			group := tok[1:]
			for j := 0; j < len(group); j++ {
				p := c.paramByShort(group[j])
				if p == nil {
					break
				}
				if j < len(group)-1 && p.Type != Bool {
					break // -j2x8, -j=2x8: the rest of the group is the value
				}
				if j < len(group)-1 {
					continue
				}
				switch nx, ok := next(); {
				case ok && p.Type == Bool:
					out[len(out)-1] = tok + "=" + nx
					i++
				case ok:
					out = append(out, nx)
					i++
				case p.Type != Bool:
					return nil, fmt.Errorf("flag -%s needs a value%s", string(group[j]), dashHint(argv, i, "-"+string(group[j])))
				}
			}
		}
	}
	return out, nil
}

// longArg rewrites the long flag argv[i] (and its value) as --NAME[=VALUE], with
// skip 1 when it took the next token as its value.
func (c *Component) longArg(argv []string, i int) (toks []string, skip int, err error) {
	tok := argv[i]
	name, val, hasVal := strings.Cut(tok[2:], "=")
	p, err := c.longFlag(strings.ReplaceAll(name, "-", "_"))
	if err != nil {
		return nil, 0, err
	}
	if p == nil {
		if name != "help" && name != "" && strings.HasPrefix("help", name) && c.uniqueHelpPrefix(name) {
			tok = "--help"
		}
		return []string{tok}, 0, nil // unknown: pflag's error names it
	}
	hasNext := i+1 < len(argv) && !looksLikeFlag(argv[i+1])
	switch {
	case hasVal:
		return []string{"--" + p.Name + "=" + val}, 0, nil
	case hasNext:
		return []string{"--" + p.Name + "=" + argv[i+1]}, 1, nil
	case p.Type == Bool:
		return []string{"--" + p.Name}, 0, nil
	}
	return nil, 0, fmt.Errorf("flag --%s needs a value%s", p.Name, dashHint(argv, i, "--"+p.Name))
}

// negativeNumber is argparse's _negative_number_matcher: such a token is a value, not a
// flag (no parameter of a component looks like a negative number).
var negativeNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-\d+$|^-\d*\.\d+$`) })

// looksLikeFlag is argparse's test of whether a token is an option rather than a value:
// it starts with '-', is not '-' alone nor a negative number, and holds no space.
func looksLikeFlag(tok string) bool {
	return len(tok) > 1 && tok[0] == '-' && !negativeNumber().MatchString(tok) && !strings.Contains(tok, " ")
}

// dashHint tells how to give a value that starts with '-', when the token after flag
// is one.
func dashHint(argv []string, i int, flag string) string {
	if i+1 < len(argv) && argv[i+1] != "--" {
		return fmt.Sprintf(" (%s is a flag; for a value that starts with '-' write %s=%s)", shown(argv[i+1]), flag, shown(argv[i+1]))
	}
	return ""
}

// longFlag finds the parameter of --name: the one named so, else the only one whose
// name starts with name (argparse's abbreviations, allow_abbrev). nil with no error
// when none matches; an error naming the candidates when several do.
func (c *Component) longFlag(name string) (*Param, error) {
	if p := c.param(name); p != nil || name == "" || name == "help" {
		return p, nil
	}
	var found []*Param
	for i := range c.Params {
		if strings.HasPrefix(c.Params[i].Name, name) {
			found = append(found, &c.Params[i])
		}
	}
	helpToo := strings.HasPrefix("help", name)
	switch {
	case len(found) == 1 && !helpToo:
		return found[0], nil
	case len(found) == 0:
		return nil, nil
	}
	names := make([]string, 0, len(found)+1)
	for _, p := range found {
		names = append(names, "--"+p.Name)
	}
	if helpToo {
		names = append(names, "--help")
	}
	return nil, fmt.Errorf("ambiguous flag --%s for %s: it could be %s", shown(name), c.Name, strings.Join(names, ", "))
}

// uniqueHelpPrefix reports whether --name, a prefix of --help, abbreviates it alone.
func (c *Component) uniqueHelpPrefix(name string) bool {
	for _, p := range c.Params {
		if strings.HasPrefix(p.Name, name) {
			return false
		}
	}
	return true
}

// torchxBool decodes a bool parameter's value as TorchX does (torchx/util/types.py
// decode: `value.lower() == "true"`, every other word is false), with two guards where
// that reading would silently turn a user's "yes" into no. On the command line (source
// "value") true and false in any case are read, and 0, no, off and "" as false;
// 1, yes, on, t, y and any other word are an error naming the flag. In .torchxconfig
// (source "default") TorchX's reading holds, so that a project behaves as under TorchX,
// with a warning when a word that means true elsewhere reads as false.
func torchxBool(s, source string) (v bool, warn string, err error) {
	low := strings.ToLower(strings.TrimSpace(s))
	switch low {
	case "true":
		return true, "", nil
	case "false", "0", "no", "off", "":
		return false, "", nil
	}
	if source == "default" {
		return false, "read as false, as TorchX reads every word but \"true\" (write true or false)", nil
	}
	if b, perr := spec.ParseBool(low); perr == nil && b {
		return false, "", errors.New("want true or false (TorchX would read it as false)")
	}
	return false, "", errors.New("want a bool (true or false)")
}

// flagError turns pflag's errors into wick's one-line messages.
func (c *Component) flagError(err error) error {
	if errors.Is(err, pflag.ErrHelp) {
		return ErrHelp
	}
	var notExist *pflag.NotExistError
	if errors.As(err, &notExist) {
		name := shown(notExist.GetSpecifiedName())
		hint := ""
		if c.Varargs != "" {
			hint = " (arguments for the program go after --)"
		}
		if group := notExist.GetSpecifiedShortnames(); group != "" {
			// A group of several letters is most often a long flag written with one
			// dash (-cfg, TorchX's spelling; -lr, Python's habit): name it whole, as
			// typed, rather than its first letter alone.
			group, _, _ = strings.Cut(group, "=")
			if len(group) < 2 {
				return fmt.Errorf("unknown flag -%s for %s%s", name, c.Name, hint)
			}
			// Two letters are too few to guess from (-zq is not a typo of --n).
			if dym := didYouMeanFlag(group, c.paramNames()); dym != "" && len(group) > 2 {
				hint = dym
			}
			return fmt.Errorf("unknown flag -%s in -%s for %s%s", name, shown(group), c.Name, hint)
		}
		if dym := didYouMeanFlag(name, c.paramNames()); dym != "" {
			hint = dym
		}
		return fmt.Errorf("unknown flag --%s for %s%s", name, c.Name, hint)
	}
	var needsValue *pflag.ValueRequiredError
	if errors.As(err, &needsValue) {
		if needsValue.GetSpecifiedShortnames() != "" {
			return fmt.Errorf("flag -%s needs a value", shown(needsValue.GetSpecifiedName()))
		}
		return fmt.Errorf("flag --%s needs a value", shown(needsValue.GetSpecifiedName()))
	}
	return fmt.Errorf("%s: %s", c.Name, shown(err.Error()))
}

// shown writes user input into a message: as is when it is printable, else quoted
// (so that a message stays on one line).
func shown(s string) string {
	for _, r := range s {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// didYouMeanFlag is spec.DidYouMean for flags: " (did you mean --x?)".
func didYouMeanFlag(name string, names []string) string {
	s := spec.DidYouMean(name, names)
	if s == "" {
		return ""
	}
	_, best, _ := strings.Cut(s, "\"")
	best, _, _ = strings.Cut(best, "\"")
	return fmt.Sprintf(" (did you mean --%s?)", best)
}

func (c *Component) param(name string) *Param {
	for i := range c.Params {
		if c.Params[i].Name == name {
			return &c.Params[i]
		}
	}
	return nil
}

func (c *Component) paramByShort(b byte) *Param {
	for i := range c.Params {
		if s := c.Params[i].short(); len(s) == 1 && s[0] == b {
			return &c.Params[i]
		}
	}
	return nil
}

func (c *Component) paramNames() []string {
	names := make([]string, len(c.Params))
	for i, p := range c.Params {
		names[i] = p.Name
	}
	return names
}

// check verifies what Parse relies on (pflag panics on a bad definition): parameter
// names are identifiers, unique, not "help"; short forms are single letters or
// digits, unique; the varargs name is an identifier that no parameter takes.
func (c *Component) check() error {
	seen := map[string]bool{}
	shorts := map[string]string{}
	for _, p := range c.Params {
		if !isIdentifier(p.Name) {
			return fmt.Errorf("component %s: parameter name %q must be a letter or '_' followed by letters, digits or '_'", c.Name, p.Name)
		}
		if p.Name == "help" {
			return fmt.Errorf("component %s: parameter name \"help\" is reserved for --help", c.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("component %s: parameter %q declared twice", c.Name, p.Name)
		}
		seen[p.Name] = true
		if p.Type < String || p.Type > Map {
			return fmt.Errorf("component %s: parameter %q has an unknown type", c.Name, p.Name)
		}
		if s := p.short(); s != "" {
			if len(s) != 1 || !isAlnumByte(s[0]) {
				return fmt.Errorf("component %s: short form %q of --%s must be one letter or digit", c.Name, s, p.Name)
			}
			if other, dup := shorts[s]; dup {
				return fmt.Errorf("component %s: short form -%s used by both --%s and --%s", c.Name, s, other, p.Name)
			}
			shorts[s] = p.Name
		}
	}
	if c.Varargs != "" {
		if !isIdentifier(c.Varargs) {
			return fmt.Errorf("component %s: varargs name %q must be an identifier", c.Name, c.Varargs)
		}
		if seen[c.Varargs] {
			return fmt.Errorf("component %s: varargs name %q is also a parameter", c.Name, c.Varargs)
		}
	}
	return nil
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && !isAlnumByte(c) || i == 0 && '0' <= c && c <= '9' {
			return false
		}
	}
	return true
}

func isAlnumByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// SplitWords splits s into words the way a POSIX shell would, without expanding
// anything: blanks separate words, '...' quotes literally, "..." quotes with \\, \",
// \$ and \` escapes, and a backslash outside quotes escapes the next character. It
// reads varargs defaults such as "-a b --c='d e'" from .torchxconfig.
func SplitWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\':
			in = true
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
				}
			}
		case c == '\'':
			in = true
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			in = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated \" quote")
			}
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
