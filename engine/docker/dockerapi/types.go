package dockerapi

import "time"

// The Engine's objects, with the fields wick reads or sends. Their JSON is the
// Engine API's (https://docs.docker.com/reference/api/engine/), from 1.40 on.

// Container states, as the Engine names them.
const (
	StateCreated    = "created"
	StateRunning    = "running"
	StatePaused     = "paused"
	StateRestarting = "restarting"
	StateRemoving   = "removing"
	StateExited     = "exited"
	StateDead       = "dead"
)

// ContainerSummary is one item of a container list.
type ContainerSummary struct {
	ID      string            `json:"Id"`
	Names   []string          `json:"Names"`
	Image   string            `json:"Image"`
	Created int64             `json:"Created"` // Unix seconds
	State   string            `json:"State"`
	Status  string            `json:"Status"`
	Labels  map[string]string `json:"Labels"`
	// HostConfig holds the network the container was created on.
	HostConfig struct {
		NetworkMode string `json:"NetworkMode"`
	} `json:"HostConfig"`
}

// Container is what the Engine says of one container (inspect).
type Container struct {
	ID           string          `json:"Id"`
	Created      string          `json:"Created"` // RFC 3339, nanoseconds
	Name         string          `json:"Name"`
	Image        string          `json:"Image"`
	RestartCount int             `json:"RestartCount"`
	State        *ContainerState `json:"State"`
	Config       *Config         `json:"Config"`
	HostConfig   *HostConfig     `json:"HostConfig"`
}

// ContainerState is a container's state.
type ContainerState struct {
	Status     string `json:"Status"`
	Running    bool   `json:"Running"`
	Paused     bool   `json:"Paused"`
	Restarting bool   `json:"Restarting"`
	OOMKilled  bool   `json:"OOMKilled"`
	Dead       bool   `json:"Dead"`
	Pid        int    `json:"Pid"`
	ExitCode   int    `json:"ExitCode"`
	Error      string `json:"Error"`
	StartedAt  string `json:"StartedAt"`
	FinishedAt string `json:"FinishedAt"`
}

// Config is a container's configuration that does not depend on the host.
type Config struct {
	Hostname     string              `json:"Hostname,omitempty"`
	User         string              `json:"User,omitempty"`
	Tty          bool                `json:"Tty,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"` // "80/tcp"
	Env          []string            `json:"Env,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	Image        string              `json:"Image,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
	StopTimeout  *int                `json:"StopTimeout,omitempty"`
}

// HostConfig is a container's configuration that depends on the host.
type HostConfig struct {
	NetworkMode    string                   `json:"NetworkMode,omitempty"`
	RestartPolicy  RestartPolicy            `json:"RestartPolicy"`
	Privileged     bool                     `json:"Privileged,omitempty"`
	LogConfig      LogConfig                `json:"LogConfig"`
	ShmSize        int64                    `json:"ShmSize,omitempty"`
	Init           *bool                    `json:"Init,omitempty"`
	NanoCPUs       int64                    `json:"NanoCpus,omitempty"`
	Memory         int64                    `json:"Memory,omitempty"`
	DeviceRequests []DeviceRequest          `json:"DeviceRequests,omitempty"`
	Devices        []DeviceMapping          `json:"Devices,omitempty"`
	Mounts         []Mount                  `json:"Mounts,omitempty"`
	PortBindings   map[string][]PortBinding `json:"PortBindings,omitempty"` // by "80/tcp"
}

// RestartPolicy is what the Engine does when a container exits.
type RestartPolicy struct {
	Name              string `json:"Name,omitempty"` // "", "no", "always", "on-failure", "unless-stopped"
	MaximumRetryCount int    `json:"MaximumRetryCount,omitempty"`
}

// LogConfig is a container's log driver and its options.
type LogConfig struct {
	Type   string            `json:"Type,omitempty"`
	Config map[string]string `json:"Config,omitempty"`
}

// DeviceRequest asks a device driver for devices (GPUs).
type DeviceRequest struct {
	Driver       string            `json:"Driver,omitempty"`
	Count        int               `json:"Count,omitempty"` // -1 for all
	DeviceIDs    []string          `json:"DeviceIDs,omitempty"`
	Capabilities [][]string        `json:"Capabilities,omitempty"`
	Options      map[string]string `json:"Options,omitempty"`
}

// DeviceMapping maps a host device into a container.
type DeviceMapping struct {
	PathOnHost        string `json:"PathOnHost"`
	PathInContainer   string `json:"PathInContainer"`
	CgroupPermissions string `json:"CgroupPermissions"`
}

// Mount is a bind mount, a volume or a tmpfs of a container.
type Mount struct {
	Type     string `json:"Type"` // bind, volume, tmpfs
	Source   string `json:"Source,omitempty"`
	Target   string `json:"Target"`
	ReadOnly bool   `json:"ReadOnly,omitempty"`
}

// PortBinding publishes a container port on the host.
type PortBinding struct {
	HostIP   string `json:"HostIp,omitempty"`
	HostPort string `json:"HostPort,omitempty"`
}

// EndpointSettings are a container's settings on one network.
type EndpointSettings struct {
	Aliases []string `json:"Aliases,omitempty"`
}

// NetworkingConfig are a container's networks at create.
type NetworkingConfig struct {
	EndpointsConfig map[string]*EndpointSettings `json:"EndpointsConfig,omitempty"`
}

// CreateRequest is the body of a container create.
type CreateRequest struct {
	*Config
	HostConfig       *HostConfig       `json:"HostConfig,omitempty"`
	NetworkingConfig *NetworkingConfig `json:"NetworkingConfig,omitempty"`
}

// CreateResponse is the Engine's answer to a create.
type CreateResponse struct {
	ID       string   `json:"Id"`
	Warnings []string `json:"Warnings"`
}

// PathStat is what the Engine says of a path in a container.
type PathStat struct {
	Name       string    `json:"name"`
	Size       int64     `json:"size"`
	Mode       uint32    `json:"mode"`
	Mtime      time.Time `json:"mtime"`
	LinkTarget string    `json:"linkTarget"`
}

// Stats is one sample of a container's resource use.
type Stats struct {
	Read        time.Time   `json:"read"`
	CPUStats    CPUStats    `json:"cpu_stats"`
	MemoryStats MemoryStats `json:"memory_stats"`
}

// CPUStats is a container's CPU use.
type CPUStats struct {
	CPUUsage struct {
		TotalUsage uint64 `json:"total_usage"` // nanoseconds
	} `json:"cpu_usage"`
}

// MemoryStats is a container's memory use.
type MemoryStats struct {
	Usage uint64            `json:"usage"`
	Stats map[string]uint64 `json:"stats"`
}

// Image is what the Engine says of an image (inspect).
type Image struct {
	ID       string       `json:"Id"`
	RepoTags []string     `json:"RepoTags"`
	Config   *ImageConfig `json:"Config"`
}

// ImageConfig is the part of an image's configuration wick reads.
type ImageConfig struct {
	User   string            `json:"User"`
	Labels map[string]string `json:"Labels"`
}

// Network is what the Engine says of a network (inspect, list).
type Network struct {
	Name       string                     `json:"Name"`
	ID         string                     `json:"Id"`
	Created    time.Time                  `json:"Created"`
	Driver     string                     `json:"Driver"`
	Labels     map[string]string          `json:"Labels"`
	Containers map[string]NetworkEndpoint `json:"Containers"`
}

// NetworkEndpoint is a container on a network.
type NetworkEndpoint struct {
	Name string `json:"Name"`
}

// NetworkCreate is the body of a network create.
type NetworkCreate struct {
	Name   string            `json:"Name"`
	Driver string            `json:"Driver,omitempty"`
	Labels map[string]string `json:"Labels,omitempty"`
}

// NetworkCreateResponse is the Engine's answer to a network create.
type NetworkCreateResponse struct {
	ID      string `json:"Id"`
	Warning string `json:"Warning"`
}
