package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	units "github.com/docker/go-units"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Request is what Schedule submits to the Engine: an optional workspace build, the
// network, and one container per replica. DryRun returns it; its fields are in the
// order they are printed.
type Request struct {
	AppID   string `json:"app_id"`
	Session string `json:"session"`
	Network string `json:"network"`
	// Build lays the workspace over roles[0]'s image before anything runs.
	Build      *Build      `json:"build,omitempty"`
	Containers []Container `json:"containers"`
	// Warnings are things the user should know that do not stop the launch.
	Warnings []string `json:"warnings,omitempty"`
	// GPUs are the devices of this machine leased to the app at launch (every
	// container's GPUDevices), given to no other app until its containers exit.
	GPUs []string `json:"gpus,omitempty"`

	// record is the LabelApp value every container gets.
	record string
}

// Build is the workspace image build of a Request.
type Build struct {
	// Role is the role whose image the workspace is laid over (roles[0], as in TorchX).
	Role string `json:"role"`
	// Context is the workspace directory; Dockerfile is "Dockerfile.torchx" when the
	// workspace has one, else "" for wick's: FROM the base image, COPY the workspace
	// into its working directory.
	Context    string `json:"context"`
	Dockerfile string `json:"dockerfile,omitempty"`
	BaseImage  string `json:"base_image"`
	// Tag names the image by the content of the workspace and the base image, so an
	// unchanged workspace is not built again.
	Tag string `json:"tag"`
	// Files counts the files sent to the Engine, after .dockerignore.
	Files int  `json:"files"`
	Quiet bool `json:"quiet,omitempty"`
}

// Container is one replica's container.
type Container struct {
	Name     string   `json:"name"`
	Hostname string   `json:"hostname"`
	Role     string   `json:"role"`
	Replica  int      `json:"replica"`
	Image    string   `json:"image"`
	Command  []string `json:"command"`
	// Env is the container's whole environment (nothing else is inherited from the
	// host): copy_env matches, then the env option, the role's env and the variables
	// wick and TorchX set, later ones winning.
	Env       map[string]string `json:"env"`
	Labels    map[string]string `json:"labels"`
	Mounts    []MountSpec       `json:"mounts,omitempty"`
	Devices   []DeviceSpec      `json:"devices,omitempty"`
	Resources Resources         `json:"resources"`
	// GPUDevices are the very GPUs the container gets (indexes, GPU or MIG UUIDs),
	// its own (see assignGPUs); Resources.GPUs is then 0.
	GPUDevices []string    `json:"gpu_devices,omitempty"`
	Ports      []PortSpec  `json:"ports,omitempty"`
	Network    string      `json:"network"`
	Restart    RestartSpec `json:"restart"`
	Init       bool        `json:"init"`
	Privileged bool        `json:"privileged,omitempty"`
	// StopTimeout is the grace, in seconds, between SIGTERM and SIGKILL on stop.
	StopTimeout int `json:"stop_timeout"`
	// Log is the container's log: always json-file, which wick reads back.
	Log LogSpec `json:"log"`
}

// LogSpec is a container's log driver and its options.
type LogSpec struct {
	Driver  string            `json:"driver"`
	Options map[string]string `json:"options,omitempty"`
}

// logDriver is the log driver of wick's containers: the Engine keeps its log, which
// wick reads back (other drivers may not keep one).
const logDriver = "json-file"

// unrotated is the json-file max-size that keeps a container's whole log: 4 EiB (the
// Engine refuses zero or less, and parses sizes as floats, so MaxInt64 overflows).
// The Engine's follow stream skips and repeats lines where it rotates a log (Engine
// 20.10 with max-size 10m: lines 0 to 76,486 of 200,000 were followed, then 152,489 to
// 199,999 twice), and a rotated log loses its oldest lines: wick keeps a docker app's
// log whole, as it keeps a local app's, until the app is deleted, unless log_opts
// says otherwise.
var unrotated = strconv.FormatInt(1<<62, 10)

// logSpec is the log of every container of an app with these log_opts.
func logSpec(opts map[string]string) LogSpec {
	o := map[string]string{}
	for k, v := range opts {
		o[k] = v
	}
	if _, ok := o["max-size"]; !ok {
		o["max-size"] = unrotated
	}
	return LogSpec{Driver: logDriver, Options: o}
}

// MountSpec is a bind mount or a named volume.
type MountSpec struct {
	Type     spec.MountType `json:"type"`
	Source   string         `json:"source,omitempty"` // none: an anonymous volume
	Target   string         `json:"target"`
	ReadOnly bool           `json:"readonly,omitempty"`
}

// DeviceSpec maps a host device into the container.
type DeviceSpec struct {
	Host        string `json:"host"`
	Container   string `json:"container"`
	Permissions string `json:"permissions"`
}

// Resources are the container's limits; zero means none.
type Resources struct {
	NanoCPUs    int64 `json:"nano_cpus,omitempty"`
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// GPUs is the count of GPUs requested with capabilities [["compute","utility"]].
	GPUs int `json:"gpus,omitempty"`
	// ShmBytes sizes /dev/shm: the shm_size option, else the memory limit (as TorchX
	// does: PyTorch's DataLoader workers share tensors there, and Docker's 64 MB is
	// too small for them).
	ShmBytes int64 `json:"shm_bytes,omitempty"`
}

// PortSpec publishes a container port on the host's loopback address, only when the
// publish_ports option asks for it (replicas reach each other by name on the network
// without it, as in TorchX). Replica 0 of a role binds the port_map's port on the
// host; other replicas get an ephemeral host port, since two containers cannot bind
// the same one.
type PortSpec struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"container_port"`
	// HostPort 0 means an ephemeral port chosen by the Engine.
	HostPort int `json:"host_port"`
}

// RestartSpec is the container's restart policy: on-failure with max_retries when the
// role has retries, else none. Docker restarts the failed container only (REPLICA).
type RestartSpec struct {
	Policy     string `json:"policy"`
	MaxRetries int    `json:"max_retries,omitempty"`
}

// appRecord is what LabelApp holds: enough to rebuild the AppDef and the run options.
type appRecord struct {
	App *spec.AppDef      `json:"app"`
	Cfg map[string]string `json:"cfg,omitempty"`
	// Workspace is the directory laid over roles[0]'s image, if any.
	Workspace string `json:"workspace,omitempty"`
	// Warnings are the plan's, shown again by describe.
	Warnings []string `json:"warnings,omitempty"`
}

// The environment wick sets in every container unless the user set it.
const (
	// envUnbuffered makes Python write its output as it goes, as on local_cwd:
	// otherwise a replica's log is not live.
	envUnbuffered = "PYTHONUNBUFFERED"
	// envErrorFile is where torchelastic (and any program using its record
	// decorator) writes the exception that ended the replica.
	envErrorFile = "TORCHELASTIC_ERROR_FILE"
	// envPetLogDir is torchrun's --log_dir, where it keeps each worker's error file.
	envPetLogDir = "PET_LOG_DIR"
)

// errorDir is where each container's error file lives: an anonymous volume of the
// container, so that it survives the container's restarts, is readable from any
// process that reaches the Engine once the container has stopped, and goes with the
// container on delete. Launch makes it writable for every user of the image.
const (
	errorDir  = "/run/wick"
	errorFile = errorDir + "/error.json"
	petLogDir = errorDir + "/torchelastic"
)

// expandDevice expands TorchX's named resource devices into device paths.
func expandDevice(name string, n int) ([]string, bool) {
	switch name {
	case "vpc.amazonaws.com/efa":
		return numbered("/dev/infiniband/uverbs", n), true
	case "aws.amazon.com/neurondevice":
		return numbered("/dev/neuron", n), true
	}
	return nil, false
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// DryRun plans the containers of sub without touching the Engine. With a workspace it
// reads the workspace to name the image it would build.
func (s *Scheduler) DryRun(ctx context.Context, sub sched.Submission) (any, error) {
	return s.plan(ctx, sub)
}

func (s *Scheduler) plan(ctx context.Context, sub sched.Submission) (*Request, error) {
	if sub.App == nil {
		return nil, fmt.Errorf("local_docker: no app to plan")
	}
	// The Runner has validated the app and the names and resolved the run options
	// (sched.Scheduler.DryRun).
	session := sub.Session // the Runner's (sched.Submission)
	app := sub.App.Clone()
	for _, r := range app.Roles {
		if r.Image == "" || r.Image == spec.None {
			// A role with no image runs a program of this machine (demo.train runs the
			// wick binary): there is nothing to start a container from.
			return nil, fmt.Errorf("role %q has no image: local_docker runs every role in a container of its image; run it on local_cwd or local_dir", r.Name)
		}
		if err := checkImage(r.Name, r.Image); err != nil {
			return nil, err
		}
	}
	opts, err := runOptions(sub.Cfg)
	if err != nil {
		return nil, err
	}
	req := &Request{AppID: sub.AppID, Session: session, Network: opts.network}
	// Each container its own GPUs, leased at launch (assignGPUs).
	devs, leased, warnings, err := s.assignGPUs(ctx, sub.AppID, app, sub.Devices)
	if err != nil {
		return nil, err
	}
	req.GPUs = leased
	req.Warnings = append(req.Warnings, warnings...)
	if sub.Workspace != "" {
		b, err := planBuild(ctx, sub.Workspace, app.Roles[0], sub.Cfg)
		if err != nil {
			return nil, err
		}
		req.Build = b
	}
	p := planner{req: req, opts: opts, app: app, session: session, ver: version(), devs: devs,
		base: copyEnv(sub.Cfg.List(OptCopyEnv), os.Environ()), rank0: containerName(sub.AppID, app.Roles[0].Name, 0)}
	_, p.hostCuda = p.base[gpus.EnvVisible] // copied from this machine by copy_env
	maps.Copy(p.base, sub.Cfg.Map(OptEnv))
	if _, set := sub.Cfg.Map(OptEnv)[gpus.EnvVisible]; set {
		p.hostCuda = false
	}
	for i, role := range app.Roles {
		image := role.Image
		if i == 0 && req.Build != nil {
			image = req.Build.Tag
		}
		if err := p.role(role, image); err != nil {
			return nil, err
		}
	}
	// The record carries the plan's warnings, for describe.
	record, err := json.Marshal(appRecord{App: app, Cfg: spec.CfgStrings(sub.Cfg), Workspace: sub.Workspace, Warnings: req.Warnings})
	if err != nil {
		return nil, fmt.Errorf("local_docker: encoding the app: %w", err)
	}
	req.record = string(record)
	return req, nil
}

// runOpts are the run options that shape every container, checked.
type runOpts struct {
	network     string
	shm         int64 // 0: the container's memory, else Docker's default
	stopTimeout int
	publish     bool
	privileged  bool
	logs        LogSpec
}

// runOptions reads and checks the run options of cfg.
func runOptions(cfg spec.Cfg) (runOpts, error) {
	o := runOpts{network: cfg.String(OptNetwork), stopTimeout: DefaultStopTimeout,
		publish: cfg.Bool(OptPublishPorts), privileged: cfg.Bool(OptPrivileged), logs: logSpec(cfg.Map(OptLogOpts))}
	if o.network == "" {
		o.network = DefaultNetwork
	}
	if v := strings.TrimSpace(cfg.String(OptShmSize)); v != "" {
		n, err := units.RAMInBytes(v)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("%w %s=%q: want a size such as 2g or 512m", spec.ErrInvalidRunOpt, OptShmSize, v)
		}
		o.shm = n
	}
	if v, ok := cfg[OptStopTimeout].(int); ok {
		if v < 0 || v > spec.MaxStopTimeout {
			return o, fmt.Errorf("%w %s=%d: must be between 0 and %d seconds", spec.ErrInvalidRunOpt, OptStopTimeout, v, spec.MaxStopTimeout)
		}
		o.stopTimeout = v
	}
	return o, nil
}

// planner adds the containers of an app's roles to a request.
type planner struct {
	req     *Request
	opts    runOpts
	app     *spec.AppDef
	session string
	ver     string
	base    map[string]string     // the environment of every container: copy_env, env
	rank0   string                // the host name of roles[0]'s replica 0
	devs    map[string][][]string // role -> replica -> its GPUs, when the app has a pool
	// hostCuda: base's CUDA_VISIBLE_DEVICES is this machine's, copied by copy_env.
	hostCuda bool
	// warnedCuda: the warning about it was given.
	warnedCuda bool
}

// role adds the containers of role, each from image.
func (p *planner) role(role spec.Role, image string) error {
	if image == "" {
		return fmt.Errorf("role %q: no image (local_docker runs every role in a container)", role.Name)
	}
	mounts, devices, err := planMounts(role)
	if err != nil {
		return err
	}
	devices = append(devices, p.devices(role)...)
	restart := p.restart(role)
	for k := range role.NumReplicas {
		name := containerName(p.req.AppID, role.Name, k)
		r := spec.Macros{AppID: p.req.AppID, ReplicaID: strconv.Itoa(k), ImgRoot: "", Rank0Env: spec.Rank0Env}.Apply(role)
		env, cmounts := p.env(r, image, k, mounts)
		ports, err := p.ports(role, k)
		if err != nil {
			return err
		}
		res := resources(role.Resource, p.opts.shm)
		var gpuIDs []string
		if d := p.devs[role.Name]; d != nil {
			res.GPUs, gpuIDs = 0, d[k]
		}
		if _, own := role.Env[gpus.EnvVisible]; len(gpuIDs) > 0 && p.hostCuda && !own {
			// This machine's entries name its devices; inside, the container's own
			// devices count from 0, and CUDA would find none of those it names.
			delete(env, gpus.EnvVisible)
			if !p.warnedCuda {
				p.warnedCuda = true
				p.req.Warnings = append(p.req.Warnings, fmt.Sprintf("copy_env's %s (this machine's devices) is not given to containers that get GPUs of their own: inside, theirs count from 0", gpus.EnvVisible))
			}
		}
		p.req.Containers = append(p.req.Containers, Container{
			Name:        name,
			Hostname:    name,
			Role:        role.Name,
			Replica:     k,
			Image:       image,
			Command:     wrapCommand(append([]string{r.Entrypoint}, r.Args...), env),
			Env:         env,
			Labels:      p.labels(role.Name, k),
			Mounts:      cmounts,
			Devices:     devices,
			Resources:   res,
			GPUDevices:  gpuIDs,
			Ports:       ports,
			Network:     p.opts.network,
			Restart:     restart,
			Init:        true,
			Privileged:  p.opts.privileged,
			StopTimeout: p.opts.stopTimeout,
			Log:         p.opts.logs,
		})
	}
	return nil
}

// devices are the device paths of role's named resource devices; a name local_docker
// does not know is warned about and left out.
func (p *planner) devices(role spec.Role) []DeviceSpec {
	var out []DeviceSpec
	for _, name := range spec.SortedKeys(role.Resource.Devices) {
		paths, ok := expandDevice(name, role.Resource.Devices[name])
		if !ok {
			p.req.Warnings = append(p.req.Warnings, fmt.Sprintf("role %q: device %q is not known to local_docker and is ignored", role.Name, name))
			continue
		}
		for _, path := range paths {
			out = append(out, DeviceSpec{Host: path, Container: path, Permissions: "rwm"})
		}
	}
	return out
}

// resources are a container's limits from its role's resource; the shared memory is
// shm when set, else the memory limit.
func resources(rr spec.Resource, shm int64) Resources {
	res := Resources{ShmBytes: shm}
	if rr.CPU > 0 {
		res.NanoCPUs = int64(rr.CPU) * 1e9
	}
	if rr.MemMB > 0 {
		res.MemoryBytes = int64(rr.MemMB) << 20
		if shm == 0 {
			res.ShmBytes = res.MemoryBytes
		}
	}
	if rr.GPU > 0 {
		res.GPUs = rr.GPU
	}
	return res
}

// restart is the restart policy of role's containers: Docker restarts the failed
// container only, which a retry policy other than REPLICA is warned about.
func (p *planner) restart(role spec.Role) RestartSpec {
	if role.MaxRetries <= 0 {
		return RestartSpec{Policy: "no"}
	}
	if rp, _ := spec.ParseRetryPolicy(string(role.RetryPolicy)); rp != spec.RetryReplica && (role.NumReplicas > 1 || len(p.app.Roles) > 1) {
		p.req.Warnings = append(p.req.Warnings, fmt.Sprintf("role %q: retry_policy %s is applied per replica on local_docker (only the failed container restarts)", role.Name, rp))
	}
	return RestartSpec{Policy: "on-failure", MaxRetries: role.MaxRetries}
}

// env is the environment of replica k of role r (its macros applied) and its mounts:
// wick's variables, the run options', the role's own (which win), then the names
// TorchX sets. The error file's volume is mounted when the error file is wick's.
func (p *planner) env(r spec.Role, image string, k int, mounts []MountSpec) (map[string]string, []MountSpec) {
	env := make(map[string]string, len(p.base)+len(r.Env)+7)
	env[envUnbuffered] = "1"
	env[envErrorFile] = errorFile
	env[envPetLogDir] = petLogDir
	maps.Copy(env, p.base)
	maps.Copy(env, r.Env) // the role's own env wins over the run options'.
	if env[envErrorFile] != errorFile && env[envPetLogDir] == petLogDir {
		delete(env, envPetLogDir) // no volume for it
	}
	if env[envErrorFile] == errorFile {
		mounts = append(slices.Clip(mounts), MountSpec{Type: spec.MountVolume, Target: errorDir})
	}
	env[spec.Rank0Env] = p.rank0
	env["TORCHX_IMAGE"] = image
	env["WICK_APP_ID"] = p.req.AppID
	env["WICK_ROLE"] = r.Name
	env["WICK_REPLICA_ID"] = strconv.Itoa(k)
	return env, mounts
}

// ports are the ports replica k of role publishes: none unless publish_ports is on;
// replica 0 on the same host port, the others on ports the Engine chooses. Every
// port is checked either way.
func (p *planner) ports(role spec.Role, k int) ([]PortSpec, error) {
	var ports []PortSpec
	for _, pname := range spec.SortedKeys(role.PortMap) {
		port := role.PortMap[pname]
		if port < 1 || port > 65535 {
			return nil, fmt.Errorf("role %q: port_map %s=%d is not a port number", role.Name, pname, port)
		}
		if !p.opts.publish {
			continue
		}
		host := port
		if k > 0 {
			host = 0
		}
		ports = append(ports, PortSpec{Name: pname, ContainerPort: port, HostPort: host})
	}
	return ports, nil
}

// labels are the labels of replica k of role: wick's and TorchX's.
func (p *planner) labels(role string, k int) map[string]string {
	return map[string]string{
		LabelAppID:           p.req.AppID,
		LabelRole:            role,
		LabelReplicaID:       strconv.Itoa(k),
		LabelSession:         p.session,
		LabelVersion:         p.ver,
		LabelTorchXVersion:   "wick-" + p.ver,
		LabelTorchXAppID:     p.req.AppID,
		LabelTorchXRoleName:  role,
		LabelTorchXReplicaID: strconv.Itoa(k),
	}
}

// containerName is TorchX's container name and hostname: the last 30 characters of the
// app id, the first 30 of the role, and the replica id, with leading characters Docker
// refuses in a name removed.
func containerName(appID, role string, k int) string {
	if len(appID) > 30 {
		appID = appID[len(appID)-30:]
	}
	if len(role) > 30 {
		role = role[:30]
	}
	name := fmt.Sprintf("%s-%s-%d", appID, role, k)
	return strings.TrimLeftFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
}

// copyEnv returns the variables of environ whose names match one of the fnmatch
// patterns.
func copyEnv(patterns, environ []string) map[string]string {
	out := map[string]string{}
	if len(patterns) == 0 {
		return out
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		for _, p := range patterns {
			if ok, _ := path.Match(p, k); ok {
				out[k] = v
				break
			}
		}
	}
	return out
}

// planMounts turns the role's mounts into Docker mounts and device mappings. Relative
// bind sources are made absolute, as Docker requires.
func planMounts(role spec.Role) ([]MountSpec, []DeviceSpec, error) {
	var mounts []MountSpec
	var devices []DeviceSpec
	for _, m := range role.Mounts {
		switch m.Type {
		case spec.MountBind:
			src := m.Src
			if !filepath.IsAbs(src) {
				abs, err := filepath.Abs(src)
				if err != nil {
					return nil, nil, fmt.Errorf("role %q: mount %s: %w", role.Name, m, err)
				}
				src = abs
			}
			mounts = append(mounts, MountSpec{Type: m.Type, Source: src, Target: m.Dst, ReadOnly: m.ReadOnly})
		case spec.MountVolume:
			mounts = append(mounts, MountSpec{Type: m.Type, Source: m.Src, Target: m.Dst, ReadOnly: m.ReadOnly})
		case spec.MountDevice:
			dst, perm := m.Dst, m.Permissions
			if dst == "" {
				dst = m.Src
			}
			if perm == "" {
				perm = "rwm"
			}
			devices = append(devices, DeviceSpec{Host: m.Src, Container: dst, Permissions: perm})
		default:
			return nil, nil, fmt.Errorf("role %q: unknown mount type %q (want bind, volume or device)", role.Name, m.Type)
		}
	}
	return mounts, devices, nil
}

// gpuWarnings says what the user should know about the GPUs the app asks for: Docker
// gives every container that asks for N GPUs the same first N of the machine, so
// replicas share them, and the machine may have fewer than asked.
func gpuWarnings(ctx context.Context, app *spec.AppDef) []string {
	want, most, sharing := 0, 0, 0
	for _, r := range app.Roles {
		if r.Resource.GPU > 0 {
			want += r.NumReplicas * r.Resource.GPU
			most = max(most, r.Resource.GPU)
			sharing += r.NumReplicas
		}
	}
	if want == 0 {
		return nil
	}
	var out []string
	if have := gpus.Count(ctx); have < most {
		out = append(out, fmt.Sprintf("the app asks for %d GPUs per container but %d were found (nvidia-smi -L): the containers will fail to start", most, have))
	} else if have < want {
		out = append(out, fmt.Sprintf("the app asks for %d GPUs in all but %d were found (nvidia-smi -L)", want, have))
	}
	if sharing > 1 {
		out = append(out, fmt.Sprintf("%d containers ask for GPUs: Docker gives each the same first GPUs of the machine, so they share them", sharing))
	}
	return out
}

// checkImage refuses an image that is no image reference before the Engine is asked
// of it (the Engine's answer to GET /images//tmp/json/json is no JSON): a path is
// local_dir's image, not an image of the Engine.
func checkImage(role, image string) error {
	if strings.HasPrefix(image, "/") || strings.HasPrefix(image, "./") || strings.HasPrefix(image, "../") || image == "." {
		return fmt.Errorf("role %q: image %q is a path, not a Docker image: local_docker runs a container of an image (NAME[:TAG], as docker run takes it); a directory is the image of local_dir", role, image)
	}
	if _, err := reference.ParseAnyReference(image); err != nil {
		return fmt.Errorf("role %q: image %q is not a Docker image reference (NAME[:TAG][@DIGEST]): %v", role, image, err)
	}
	return nil
}
