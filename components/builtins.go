package components

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/wick-dev/wick/engine/spec"
)

// DefaultImage is the image of the builtins that take one (TorchX's torchx.IMAGE at
// the TorchX version wick follows, 0.8.0dev0). wick publishes no image of its own;
// keeping TorchX's means a TorchX user's dry runs read the same, local_cwd ignores it,
// and local_docker runs what TorchX would. Override it per run with --image, or per
// project in .torchxconfig ([component:dist.ddp] image = ...).
const DefaultImage = "ghcr.io/pytorch/torchx:0.8.0dev0"

// Builtins returns wick's builtin components, sorted by name: demo.train, dist.ddp,
// dist.spmd, utils.binary, utils.copy, utils.echo, utils.python, utils.sh,
// utils.touch. Each call builds fresh values, so callers may modify them.
func Builtins() []*Component { return builtins("") }

// builtinNames are the names of the builtins, in builtins' order: what IsExternal
// looks a name up in without making the builtins (parsing builtins/utils.yaml was a
// tenth of the CPU of a `wick run` before it forks the supervisor, and FindContext
// parses it again). TestBuiltinNames keeps it in step with builtins.
var builtinNames = []string{"demo.train", "dist.ddp", "dist.spmd", "utils.binary", "utils.copy", "utils.echo", "utils.python", "utils.sh", "utils.touch"}

// builtins makes the builtins; demo.train runs the wick binary self ("" for
// os.Executable()).
func builtins(self string) []*Component {
	t := templateBuiltins()
	return []*Component{
		demoTrain(self),
		ddpComponent(),
		spmdComponent(),
		t["utils.binary"],
		t["utils.copy"],
		t["utils.echo"],
		python(),
		sh(),
		t["utils.touch"],
	}
}

// utilsYAML holds the builtins that are templates, as component files are written.
//
//go:embed builtins/utils.yaml
var utilsYAML []byte

// templateBuiltins parses utilsYAML into fresh components, by name. The file is part of
// the program (a test parses it), so a failure is wick's bug, not the user's input.
func templateBuiltins() map[string]*Component {
	comps, err := ParseFile("", utilsYAML) // no path: errors name the component, not the file
	if err != nil {
		panic(fmt.Sprintf("components: the builtin templates do not parse: %v", err))
	}
	out := make(map[string]*Component, len(comps))
	for _, c := range comps {
		c.Source = "" // a builtin: not found in, nor run from, a file of the user's
		out[c.Name] = c
	}
	return out
}

// Shared parameters of the builtins, spelled as TorchX spells them.
func imageParam() Param {
	return Param{Name: "image", Type: String, Default: DefaultImage, Help: "image to use (local_cwd ignores it)"}
}

func numReplicasParam() Param {
	return Param{Name: "num_replicas", Type: Int, Default: "1", Help: "number of replicas to run"}
}

func resourceParams(cpu string) []Param {
	return []Param{
		{Name: "cpu", Type: Int, Default: cpu, Help: "number of cpus per replica"},
		{Name: "gpu", Type: Int, Default: "0", Help: "number of gpus per replica"},
		{Name: "memMB", Type: Int, Default: "1024", Help: "cpu memory in MB per replica"},
		hParam(""),
	}
}

func hParam(def string) Param {
	return Param{Name: "h", Type: String, Default: def, Optional: def == "",
		Help: "a named resource, e.g. gpu.small (if given, it wins over cpu, gpu and memMB)"}
}

func mountsParam() Param {
	return Param{Name: "mounts", Type: List, Optional: true,
		Help: "mounts for the replicas, e.g. type=bind,src=/host,dst=/job[,readonly] (docker only)"}
}

func envParam() Param {
	return Param{Name: "env", Type: Map, Optional: true, Help: "environment variables for the replicas, e.g. ENV1=v1,ENV2=v2"}
}

// resourceOf reads cpu, gpu, memMB and h the way TorchX's specs.resource does.
func resourceOf(a Args) (spec.Resource, error) {
	return a.resource(a.Int("cpu"), a.Int("gpu"), a.Int("memMB"), a.String("h"))
}

// resource is spec.ResourceOf with h looked up by namedResource.
func (a Args) resource(cpu, gpu, memMB int, h string) (spec.Resource, error) {
	if h != "" {
		return a.namedResource(h)
	}
	return spec.ResourceOf(cpu, gpu, memMB, "")
}

// namedResource looks h up as TorchX's specs.named_resources does: the entry points
// of a.Named first (they win over the builtin names), then wick's own table.
func (a Args) namedResource(h string) (spec.Resource, error) {
	if a.Named != nil {
		r, ok, err := a.Named(h)
		if err != nil {
			return spec.Resource{}, err
		}
		if ok {
			return r, nil
		}
	}
	return spec.NamedResource(h)
}

// mountsOf parses the mounts parameter: its list items are joined back with ',' and
// read with spec.ParseMounts, where every type= starts a new mount.
func mountsOf(a Args) ([]spec.Mount, error) {
	l := a.List("mounts")
	if len(l) == 0 {
		return nil, nil
	}
	m, err := spec.ParseMounts(strings.Join(l, ","))
	if err != nil {
		return nil, fmt.Errorf("--mounts: %w", err)
	}
	return m, nil
}

// logLevel is TorchX's os.getenv("LOGLEVEL", "WARNING"), read when the app is built.
func logLevel() string {
	if v, ok := os.LookupEnv("LOGLEVEL"); ok {
		return v
	}
	return "WARNING"
}

// app makes a one-role AppDef; args and env are never nil, as in TorchX (they print
// as [] and {}).
func app(name string, role spec.Role) *spec.AppDef {
	if role.Args == nil {
		role.Args = []string{}
	}
	if role.Env == nil {
		role.Env = map[string]string{}
	}
	return &spec.AppDef{Name: name, Roles: []spec.Role{role}}
}

func sh() *Component {
	params := []Param{imageParam(), numReplicasParam()}
	params = append(params, resourceParams("1")...)
	params = append(params,
		envParam(),
		Param{Name: "max_retries", Type: Int, Default: "0", Help: "the number of scheduler retries allowed"},
		mountsParam(),
		Param{Name: "entrypoint", Type: String, Optional: true, Help: "the program to run the arguments with (default: sh -c)"},
	)
	return &Component{
		Name:    "utils.sh",
		Summary: "Runs a command through sh -c.",
		Help: "Each argument is shell-quoted, so $VARS are not expanded: the command runs as\n" +
			"written. With --entrypoint, the quoted arguments are passed to that program instead.",
		Params:      params,
		Varargs:     "args",
		VarargsHelp: "the command and its arguments",
		Example:     []string{"echo", "hello"},
		Build: func(a Args) (*spec.AppDef, error) {
			quoted := make([]string, len(a.Varargs))
			for i, s := range a.Varargs {
				quoted[i] = ShellQuote(s)
			}
			entrypoint, args := "sh", []string{"-c", strings.Join(quoted, " ")}
			if a.Has("entrypoint") {
				entrypoint, args = a.String("entrypoint"), quoted
			}
			res, err := resourceOf(a)
			if err != nil {
				return nil, err
			}
			mounts, err := mountsOf(a)
			if err != nil {
				return nil, err
			}
			r := spec.NewRole("sh", a.String("image"), entrypoint, args...)
			r.NumReplicas = a.Int("num_replicas")
			r.Resource = res
			r.Env = copyEnv(a.Map("env"))
			if _, ok := r.Env["LOGLEVEL"]; !ok {
				r.Env["LOGLEVEL"] = logLevel()
			}
			r.MaxRetries = a.Int("max_retries")
			r.Mounts = mounts
			return app("sh", r), nil
		},
	}
}

func copyEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func python() *Component {
	params := []Param{
		{Name: "m", Type: String, Optional: true, Help: "run library module as a script"},
		{Name: "c", Type: String, Optional: true, Help: "program passed as string"},
		{Name: "script", Type: String, Optional: true, Help: ".py script to run"},
		imageParam(),
		{Name: "name", Type: String, Default: "torchx_utils_python", Help: "name of the job"},
	}
	params = append(params, resourceParams("1")...)
	params = append(params, numReplicasParam(), mountsParam())
	return &Component{
		Name:    "utils.python",
		Summary: "Runs python with a module (-m), a command (-c) or a script (--script).",
		Help: "Exactly one of -m, -c and --script is needed. Use -- to separate the component's\n" +
			"arguments from the program's: wick run utils.python -m foo.main -- --args to --main",
		Params:      params,
		Varargs:     "args",
		VarargsHelp: "arguments passed to the program in sys.argv[1:]",
		Example:     []string{"-c", "print(42)"},
		Build: func(a Args) (*spec.AppDef, error) {
			n := 0
			for _, k := range []string{"m", "c", "script"} {
				if a.Has(k) {
					n++
				}
			}
			if n != 1 {
				return nil, errors.New("exactly one of -m, -c and --script needs to be specified")
			}
			var cmd []string
			env := map[string]string{}
			switch {
			case a.Has("script"):
				cmd = []string{a.String("script")}
			case a.Has("m"):
				cmd = []string{"-m", a.String("m")}
				env["HYDRA_MAIN_MODULE"] = a.String("m")
			default:
				cmd = []string{"-c", a.String("c")}
			}
			res, err := resourceOf(a)
			if err != nil {
				return nil, err
			}
			mounts, err := mountsOf(a)
			if err != nil {
				return nil, err
			}
			r := spec.NewRole("python", a.String("image"), "python", append(cmd, a.Varargs...)...)
			r.NumReplicas = a.Int("num_replicas")
			r.Resource = res
			r.Env = env
			r.Mounts = mounts
			return app(a.String("name"), r), nil
		},
	}
}
