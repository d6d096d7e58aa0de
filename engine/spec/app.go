// Package spec is wick's data model: the AppDef of roles and replicas, resources,
// mounts, run options, app states and statuses, macros and app handles. It is pure
// data plus parsing; nothing here launches or observes anything.
package spec

import (
	"errors"
	"fmt"
	"sort"
)

// Sentinel strings kept from TorchX, so that files and output written by TorchX users
// read the same way.
const (
	Missing = "<MISSING>"
	None    = "<NONE>"
	Unknown = "<UNKNOWN>"
)

// AppDef is an application: a name plus one or more roles, each run as N replicas.
type AppDef struct {
	Name     string            `json:"name"`
	Roles    []Role            `json:"roles"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// RetryPolicy says what is restarted when a replica fails and retries remain.
type RetryPolicy string

// The retry policies of TorchX.
const (
	RetryReplica     RetryPolicy = "REPLICA"     // restart only the failed replica
	RetryRole        RetryPolicy = "ROLE"        // restart every replica of the failed role
	RetryApplication RetryPolicy = "APPLICATION" // restart the whole app
)

// ParseRetryPolicy reads a retry policy name, case-insensitively.
func ParseRetryPolicy(s string) (RetryPolicy, error) {
	switch p := RetryPolicy(upper(s)); p {
	case RetryReplica, RetryRole, RetryApplication:
		return p, nil
	case "":
		return RetryApplication, nil
	}
	return "", fmt.Errorf("unknown retry policy %q (want REPLICA, ROLE or APPLICATION)", s)
}

// Role is a set of identical replicas: one program, its arguments, environment and needs.
type Role struct {
	Name        string            `json:"name"`
	Image       string            `json:"image"`
	Entrypoint  string            `json:"entrypoint"`
	Args        []string          `json:"args"`
	Env         map[string]string `json:"env"`
	NumReplicas int               `json:"num_replicas"`
	// MinReplicas is the elastic lower bound; 0 means unset.
	MinReplicas int               `json:"min_replicas,omitempty"`
	MaxRetries  int               `json:"max_retries"`
	RetryPolicy RetryPolicy       `json:"retry_policy"`
	Resource    Resource          `json:"resource"`
	PortMap     map[string]int    `json:"port_map,omitempty"`
	Mounts      []Mount           `json:"mounts,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// NewRole returns a role with TorchX's defaults: one replica, APPLICATION retries,
// no resource constraint.
func NewRole(name, image, entrypoint string, args ...string) Role {
	return Role{
		Name:        name,
		Image:       image,
		Entrypoint:  entrypoint,
		Args:        append([]string{}, args...),
		Env:         map[string]string{},
		NumReplicas: 1,
		RetryPolicy: RetryApplication,
		Resource:    NullResource,
	}
}

// Validation errors returned by AppDef.Validate.
var (
	ErrNoRoles         = errors.New("app has no roles")
	ErrEmptyEntrypoint = errors.New("empty entrypoint")
	ErrBadReplicas     = errors.New("num_replicas must be at least 1")
	ErrTooManyReplicas = fmt.Errorf("an app has at most %d replicas", MaxReplicas)
	// ErrBadEnvName is an env variable name a process cannot be given.
	ErrBadEnvName = errors.New("invalid env variable name")
	// ErrReplicaBudget is an app whose replicas this machine cannot hold (open files).
	ErrReplicaBudget = errors.New("too many replicas for this machine")
)

// Validate checks what every scheduler needs: at least one role, unique valid role
// names, a non-empty entrypoint and at least one replica per role.
// MaxReplicas is the most replicas an app may have, over all its roles: one machine
// runs them (every replica is processes, pipes and log files), and a preview of a
// million replicas would take gigabytes before anything started.
const MaxReplicas = 4096

func (a *AppDef) Validate() error {
	if err := ValidateName("app name", a.Name); err != nil {
		return err
	}
	if len(a.Roles) == 0 {
		return fmt.Errorf("app %q: %w", a.Name, ErrNoRoles)
	}
	seen := map[string]bool{}
	total := 0
	for _, r := range a.Roles {
		if err := ValidateName("role name", r.Name); err != nil {
			return err
		}
		if seen[r.Name] {
			return fmt.Errorf("app %q: role %q appears twice", a.Name, r.Name)
		}
		seen[r.Name] = true
		if r.Entrypoint == "" || r.Entrypoint == Missing {
			return fmt.Errorf("role %q: %w", r.Name, ErrEmptyEntrypoint)
		}
		if r.NumReplicas < 1 {
			return fmt.Errorf("role %q: %w (got %d)", r.Name, ErrBadReplicas, r.NumReplicas)
		}
		if r.NumReplicas > MaxReplicas || total+r.NumReplicas > MaxReplicas {
			return fmt.Errorf("role %q: %w (got %d)", r.Name, ErrTooManyReplicas, total+r.NumReplicas)
		}
		total += r.NumReplicas
		if r.MinReplicas > r.NumReplicas {
			return fmt.Errorf("role %q: min_replicas %d exceeds num_replicas %d", r.Name, r.MinReplicas, r.NumReplicas)
		}
		if r.MaxRetries < 0 {
			return fmt.Errorf("role %q: max_retries must not be negative (got %d)", r.Name, r.MaxRetries)
		}
		if _, err := ParseRetryPolicy(string(r.RetryPolicy)); err != nil {
			return fmt.Errorf("role %q: %w", r.Name, err)
		}
		for _, k := range SortedKeys(r.Env) {
			if !validEnvName(k) {
				return fmt.Errorf("role %q: %w %q (want letters, digits, _, . and -, not starting with a digit)", r.Name, ErrBadEnvName, k)
			}
		}
	}
	return nil
}

// Clone returns a deep copy, so that schedulers and the runner never mutate the
// caller's AppDef (a TorchX defect).
func (a *AppDef) Clone() *AppDef {
	c := &AppDef{Name: a.Name, Metadata: cloneMap(a.Metadata)}
	for _, r := range a.Roles {
		c.Roles = append(c.Roles, r.Clone())
	}
	return c
}

// Role returns the role with the given name, or nil.
func (a *AppDef) Role(name string) *Role {
	for i := range a.Roles {
		if a.Roles[i].Name == name {
			return &a.Roles[i]
		}
	}
	return nil
}

// RoleNames lists the roles' names in order.
func (a *AppDef) RoleNames() []string {
	names := make([]string, len(a.Roles))
	for i, r := range a.Roles {
		names[i] = r.Name
	}
	return names
}

// Clone returns a deep copy of the role.
func (r Role) Clone() Role {
	c := r
	c.Args = append([]string{}, r.Args...) // [] and not null in JSON, as TorchX prints it
	c.Env = cloneMap(r.Env)
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	c.Metadata = cloneMap(r.Metadata)
	c.Mounts = append([]Mount(nil), r.Mounts...)
	if r.PortMap != nil {
		c.PortMap = make(map[string]int, len(r.PortMap))
		for k, v := range r.PortMap {
			c.PortMap[k] = v
		}
	}
	c.Resource = r.Resource.Clone()
	return c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// SortedKeys returns the keys of m in order; used wherever maps are printed.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// validEnvName reports whether k can name an environment variable everywhere (shells,
// Docker, Slurm): letters, digits, '_', '.' and '-', not starting with a digit. A
// space, '=' or a control character would break the replica's environment.
func validEnvName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '.' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Count writes n and noun, plural unless n is 1: "1 replica", "3 replicas".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
