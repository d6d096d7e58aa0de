// Package config reads TorchX's .torchxconfig files, so that a TorchX project works
// unchanged with wick.
//
// A .torchxconfig is an INI file (read as Python's configparser reads it: sections
// in [brackets], "key = value" or "key: value", full-line comments starting with # or
// ;, indented continuation lines, %(key)s interpolation and %% for a literal %; keys
// are case-sensitive). Its sections:
//
//	[local_cwd]            run options of a scheduler (one section per scheduler), cast
//	log_dir = /tmp/logs    to their types; "None" means unset
//
//	[component:dist.ddp]   default arguments of a component, as strings, exactly as
//	j = 2x8                they would be written on the command line (lists a,b,c,
//	env = A=B,C=D          maps A=B,C=D, varargs as a shell would split them)
//
//	[cli:run]              defaults of `wick run`: scheduler, workspace, component
//	scheduler = local_cwd
//
// [torchx:tracker] and [tracker:NAME] configure TorchX's experiment trackers
// (TrackerEnv puts them in the replicas' env, as TorchX does). [wick:NAME]
// sections hold wick's own settings ([wick:metrics]: see engine/metrics.ParseConfig).
//
// # Which files, and precedence
//
// If $TORCHXCONFIG is set, only the file it names is read (it must exist), as in
// TorchX. Otherwise wick reads ~/.torchxconfig and the project's ./.torchxconfig,
// those that exist.
//
// For each value, the first source that has it wins, as in TorchX
// (torchx/runner/config.py find_configs, whose DEFAULT_CONFIG_DIRS is [$HOME, $CWD],
// and load, which "does not override existing values"):
//
//  1. the command line (`wick run -cfg k=v`, component flags, -s);
//  2. ~/.torchxconfig;
//  3. the project's ./.torchxconfig;
//  4. the defaults in code (a run option's default, a parameter's declared default).
//
// So a user's home file overrides the project's, as under TorchX. A key set to None
// in a file masks the same key of lower-precedence files, leaving the option at its
// default.
//
// An option a scheduler section names that the scheduler does not have is skipped
// with a warning naming the file and line (UnknownRunOpts), as TorchX warns and runs.
// An unknown [cli:run] key and a value of the wrong type are errors that name the
// file and the line (and suggest the closest key). A [component:NAME] section that
// names no component is ignored, as in TorchX, but `wick run` warns of it when NAME is
// a near miss of one (ComponentSections).
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wick-dev/wick/engine/spec"
)

// FileName is the name of the config file, in the project and in the home directory.
const FileName = ".torchxconfig"

// EnvVar names the variable that points at the one config file to read.
const EnvVar = "TORCHXCONFIG"

// NoneValue is the value that means "unset" in a scheduler section.
const NoneValue = "None"

// cliRunKeys are the keys of [cli:run].
func cliRunKeys() []string { return []string{"scheduler", "workspace", "component"} }

// Config is what a set of config files says, files in precedence order. The zero
// value (and a nil *Config) holds nothing.
type Config struct {
	files []*File
}

// Locations say where Load looks for config files.
type Locations struct {
	// TorchxConfig is the value of $TORCHXCONFIG; TorchxConfigSet says whether the
	// variable is set at all (set and empty means: read no file, as in TorchX).
	TorchxConfig    string
	TorchxConfigSet bool
	// Cwd is the project directory; Home the user's home directory. "" skips one.
	Cwd, Home string
}

// Paths returns the config files to read, highest precedence first: the
// $TORCHXCONFIG file alone (an error if it is not a file; none if it is empty), or
// the home directory's then the project's .torchxconfig, those that exist (TorchX's
// find_configs).
func Paths(loc Locations) ([]string, error) {
	if loc.TorchxConfigSet {
		if loc.TorchxConfig == "" {
			return nil, nil
		}
		fi, err := os.Stat(loc.TorchxConfig)
		if err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("$%s=%s does not exist or is not a file", EnvVar, loc.TorchxConfig)
		}
		return []string{loc.TorchxConfig}, nil
	}
	var paths []string
	seen := map[string]bool{}
	for _, dir := range []string{loc.Home, loc.Cwd} { // TorchX's DEFAULT_CONFIG_DIRS order
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, FileName)
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		if seen[abs] {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			seen[abs] = true
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// Load reads the config files of a project, those Paths finds at loc.
func Load(loc Locations) (*Config, error) {
	paths, err := Paths(loc)
	if err != nil {
		return nil, err
	}
	return LoadFiles(paths...)
}

// maxFileSize bounds a config file.
const maxFileSize = 1 << 20

// LoadFiles reads and parses config files, highest precedence first. Each must
// exist.
func LoadFiles(paths ...string) (*Config, error) {
	c := &Config{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if len(data) > maxFileSize {
			return nil, fmt.Errorf("%s: config file is larger than %d bytes", p, maxFileSize)
		}
		f, err := Parse(p, data)
		if err != nil {
			return nil, err
		}
		c.files = append(c.files, f)
	}
	return c, nil
}

// Files lists the paths of the files read, highest precedence first.
func (c *Config) Files() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.files))
	for i, f := range c.files {
		out[i] = f.Path
	}
	return out
}

// RunOpts returns the run options the files set for scheduler, cast to the types of
// opts: the first file (in precedence order) that sets a key wins, "None" leaves the
// option unset. Merge the result under the command line's: cli.Merge(cfg).
func (c *Config) RunOpts(scheduler string, opts spec.RunOpts) (spec.Cfg, error) {
	cfg := spec.Cfg{}
	if c == nil {
		return cfg, nil
	}
	seen := map[string]bool{}
	for _, f := range c.files {
		s := f.Section(scheduler)
		if s == nil {
			continue
		}
		for _, e := range s.Entries {
			key := e.Key
			if _, ok := opts.Get(key); !ok {
				if snake := snakeCase(key); snake != key {
					if _, ok := opts.Get(snake); ok {
						key = snake
					}
				}
			}
			opt, ok := opts.Get(key)
			if !ok {
				continue // UnknownRunOpts warns of it
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			if e.Value == NoneValue {
				continue
			}
			v, err := opt.Cast(e.Value)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: [%s] %w", f.Path, e.Line, scheduler, err)
			}
			cfg[key] = v
		}
	}
	return cfg, nil
}

// UnknownRunOpts returns a warning for each key of the scheduler's sections that is
// not one of its run options: RunOpts skips them, as TorchX's config.load does (it
// logs "... is not a runopt of `SCHEDULER` scheduler" and runs).
func (c *Config) UnknownRunOpts(scheduler string, opts spec.RunOpts) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, f := range c.files {
		s := f.Section(scheduler)
		if s == nil {
			continue
		}
		for _, e := range s.Entries {
			if _, ok := opts.Get(e.Key); ok {
				continue
			}
			if _, ok := opts.Get(snakeCase(e.Key)); ok {
				continue
			}
			out = append(out, fmt.Sprintf("%s:%d: [%s] %s is not a run option of %s%s; skipped, as TorchX does",
				f.Path, e.Line, scheduler, e.Key, scheduler, spec.DidYouMean(e.Key, opts.Names())))
		}
	}
	return out
}

// EnvTrackers is the variable naming the experiment trackers (torchx/tracker/api.py).
const EnvTrackers = "TORCHX_TRACKERS"

// TrackerEnv is the environment TorchX's runner puts in every role for its experiment
// trackers (torchx/runner/api.py get_configured_trackers and dryrun): the tracker
// names are the keys of [torchx:tracker] (files in precedence order, the first value
// winning), or $TORCHX_TRACKERS split on ',' when set; the config of each is the
// config key of [tracker:NAME], or $TORCHX_TRACKER_<NAME>_CONFIG when set. It sets
// TORCHX_TRACKERS to the names joined by ',' and TORCHX_TRACKER_<NAME>_CONFIG for each
// that has a config. Nil when no tracker is configured.
func (c *Config) TrackerEnv(lookup func(string) (string, bool)) map[string]string {
	var names []string
	if v, ok := lookup(EnvTrackers); ok {
		names = strings.Split(v, ",")
	} else if c != nil {
		seen := map[string]bool{}
		for _, f := range c.files {
			if s := f.Section("torchx:tracker"); s != nil {
				for _, e := range s.Entries {
					if !seen[e.Key] {
						seen[e.Key] = true
						names = append(names, e.Key)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	env := map[string]string{EnvTrackers: strings.Join(names, ",")}
	for _, name := range names {
		key := "TORCHX_TRACKER_" + strings.ToUpper(name) + "_CONFIG" // tracker_config_env_var_name
		conf, ok := lookup(key)
		if !ok {
			conf = c.merged("tracker:" + name)["config"]
		}
		if conf != "" {
			env[key] = conf
		}
	}
	return env
}

// snakeCase turns logDir into log_dir (newer TorchX accepts camelCase spellings).
func snakeCase(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// ComponentDefaults returns the [component:NAME] defaults, as strings, the first
// file that sets a key winning. Pass them to components.Component.Parse.
func (c *Config) ComponentDefaults(name string) map[string]string {
	return c.merged("component:" + name)
}

// CLIRun returns the [cli:run] defaults: scheduler, workspace, component.
func (c *Config) CLIRun() map[string]string { return c.merged("cli:run") }

// Wick returns a [wick:NAME] section of wick's own settings (e.g. wick:metrics), the
// first file that sets a key winning.
func (c *Config) Wick(name string) map[string]string { return c.merged("wick:" + name) }

// CLI returns the [cli:CMD] defaults of a wick verb.
func (c *Config) CLI(cmd string) map[string]string { return c.merged("cli:" + cmd) }

func (c *Config) merged(section string) map[string]string {
	out := map[string]string{}
	if c == nil {
		return out
	}
	for _, f := range c.files {
		if s := f.Section(section); s != nil {
			for _, e := range s.Entries {
				if _, ok := out[e.Key]; !ok {
					out[e.Key] = e.Value
				}
			}
		}
	}
	return out
}

// Where returns "PATH:LINE" of key in section as it applies (the first file that
// sets it), for an error about its value; "" if no file sets it.
func (c *Config) Where(section, key string) string {
	if c == nil {
		return ""
	}
	for _, f := range c.files {
		if s := f.Section(section); s != nil {
			for _, e := range s.Entries {
				if e.Key == key {
					return fmt.Sprintf("%s:%d", f.Path, e.Line)
				}
			}
		}
	}
	return ""
}

// SectionAt is a section's name and where its header is.
type SectionAt struct {
	Name string // without its prefix: "dist.ddp" of [component:dist.ddp]
	Path string // the file
	Line int    // of the header, from 1
}

// ComponentSections returns the [component:NAME] sections of every file, in the
// order the files are read, so that a name that is no component can be warned of:
// TorchX ignores such a section, and the defaults in it apply to nothing.
func (c *Config) ComponentSections() []SectionAt {
	if c == nil {
		return nil
	}
	var out []SectionAt
	for _, f := range c.files {
		for _, s := range f.Sections {
			if name, ok := strings.CutPrefix(s.Name, "component:"); ok {
				out = append(out, SectionAt{Name: name, Path: f.Path, Line: s.Line})
			}
		}
	}
	return out
}

// CheckSections reports the first section that is neither one of the given
// schedulers nor a [component:NAME], [cli:CMD], [torchx:tracker] or [tracker:NAME]
// section: most likely a misspelt scheduler, which would otherwise be ignored.
func (c *Config) CheckSections(schedulers []string) error {
	if c == nil {
		return nil
	}
	for _, f := range c.files {
		for _, s := range f.Sections {
			prefix, _, hasPrefix := strings.Cut(s.Name, ":")
			switch {
			case hasPrefix && (prefix == "component" || prefix == "cli" || prefix == "tracker" || prefix == "wick"),
				s.Name == "torchx:tracker":
				continue
			}
			known := false
			for _, name := range schedulers {
				known = known || name == s.Name
			}
			if !known {
				return fmt.Errorf("%s:%d: unknown section [%s]: not a scheduler%s", f.Path, s.Line, s.Name,
					spec.DidYouMean(s.Name, schedulers))
			}
		}
	}
	return nil
}
