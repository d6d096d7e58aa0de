package spec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// AppState is the state of an app or of one replica, with TorchX's numeric codes.
type AppState int

// The states, in TorchX's order and with its codes.
const (
	Unsubmitted AppState = iota
	Submitted
	Pending
	Running
	Succeeded
	Failed
	Cancelled
	UnknownState
	// Queued is wick's own: an app of a sweep waiting in the sweep's local queue for
	// a free slot (or free GPUs); no scheduler has seen it yet.
	Queued
)

var stateNames = [...]string{"UNSUBMITTED", "SUBMITTED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "UNKNOWN", "QUEUED"}

// String returns the state's name, e.g. "FAILED".
func (s AppState) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("AppState(%d)", int(s))
	}
	return stateNames[s]
}

// Terminal reports whether the state is final: SUCCEEDED, FAILED or CANCELLED.
func (s AppState) Terminal() bool { return s == Succeeded || s == Failed || s == Cancelled }

// Started reports whether the app has run: RUNNING or terminal.
func (s AppState) Started() bool { return s == Running || s.Terminal() }

// ParseAppState reads a state name such as "RUNNING".
func ParseAppState(name string) (AppState, error) {
	for i, n := range stateNames {
		if n == upper(name) {
			return AppState(i), nil
		}
	}
	return 0, fmt.Errorf("unknown app state %q", name)
}

// MarshalText writes the state by name (TorchX wrote replica states as integers, which
// nobody could read).
func (s AppState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state name, or a TorchX numeric code.
func (s *AppState) UnmarshalText(b []byte) error {
	var code int
	if _, err := fmt.Sscanf(string(b), "%d", &code); err == nil && code >= 0 && code < len(stateNames) {
		*s = AppState(code)
		return nil
	}
	v, err := ParseAppState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// AppStatus is the observed status of an app.
type AppStatus struct {
	Handle      string   `json:"handle,omitempty"`
	AppID       string   `json:"app_id"`
	Scheduler   string   `json:"scheduler,omitempty"`
	Name        string   `json:"name,omitempty"`
	State       AppState `json:"state"`
	NumRestarts int      `json:"num_restarts"`
	Msg         string   `json:"msg,omitempty"`
	// StructuredError is the first replica error (torchelastic JSON or plain text).
	StructuredError string       `json:"structured_error_msg,omitempty"`
	UIURL           string       `json:"ui_url,omitempty"`
	Created         time.Time    `json:"created,omitzero"`
	Ended           time.Time    `json:"ended,omitzero"`
	Roles           []RoleStatus `json:"roles"`
	// Warnings are problems that did not decide the app's state but that its user must
	// know of, one line each: output that could not be recorded (a full disk, a
	// process that escaped its replica and held its output open).
	Warnings []string `json:"warnings,omitempty"`
	// Hang is the hang alarm of a running app whose progress stopped, when the
	// caller asked for it (engine/hang); nil otherwise. Schedulers never set it.
	Hang *Hang `json:"hang,omitempty"`
	// LastKnown marks a state the scheduler could not be asked for (a Slurm controller
	// that is down): it is the last one seen, and views say so.
	LastKnown bool `json:"last_known,omitempty"`
	// Foreign marks an app another WICK_HOME launched (a local_docker app of a shared
	// Engine, or one of an older wick without the home label): lists show it only
	// when asked for all apps.
	Foreign bool `json:"foreign,omitempty"`
	// Sweep names the sweep the app belongs to and its swept values, when it was
	// launched by `wick run --sweep`; nil otherwise.
	Sweep *SweepRef `json:"sweep,omitempty"`
}

// SweepRef ties an app to its sweep: the sweep's id and the values of the swept
// names for this app (Names keeps the order they were given in).
type SweepRef struct {
	ID     string            `json:"id"`
	Names  []string          `json:"names"`
	Values map[string]string `json:"values"`
}

// Label is the app's swept values as "name=value" pairs, in the sweep's order.
func (r *SweepRef) Label() string {
	if r == nil {
		return ""
	}
	parts := make([]string, 0, len(r.Names))
	for _, n := range r.Names {
		parts = append(parts, n+"="+r.Values[n])
	}
	return strings.Join(parts, " ")
}

// RoleStatus is the status of every replica of one role.
type RoleStatus struct {
	Role     string          `json:"role"`
	Replicas []ReplicaStatus `json:"replicas"`
}

// ReplicaStatus is the status of one replica (its node index, not a worker rank).
type ReplicaStatus struct {
	ID       int      `json:"id"`
	Role     string   `json:"role"`
	State    AppState `json:"state"`
	Hostname string   `json:"hostname,omitempty"`
	// PID is the process id of a local replica; ContainerID identifies a docker one.
	PID         int       `json:"pid,omitempty"`
	ContainerID string    `json:"container_id,omitempty"`
	ExitCode    *int      `json:"exit_code,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	Ended       time.Time `json:"ended,omitzero"`
	Restarts    int       `json:"restarts"`
	// StructuredError is the replica's error: the torchelastic error file's message, an
	// exec error, or a reason such as "supervisor died".
	StructuredError string `json:"structured_error_msg,omitempty"`
	LogDir          string `json:"log_dir,omitempty"`
	// GroupRank is, for a torchrun node, its group rank in the current rendezvous as
	// its workers' environment says (GROUP_RANK), when the scheduler can read it; nil
	// otherwise. With c10d's rendezvous it need not be the replica index.
	GroupRank *int `json:"group_rank,omitempty"`
	// Attempts are the replica's earlier runs, oldest first: one is added each time
	// the replica is restarted, so ExitCode, Started, Ended and StructuredError above
	// are always those of the current (or last) run. At most MaxAttempts are kept.
	// Schedulers that cannot tell leave it empty (local_docker: the Engine keeps only
	// the last run of a container).
	Attempts []Attempt `json:"attempts,omitempty"`
	// Usage is what the running replica used when the status was read, when the caller
	// asked for it (the Runner's AttachUsage) and the scheduler can tell; nil otherwise.
	// Schedulers never store it.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is what one replica costs the machine at a moment: its processes' (or its
// container's) CPU and resident memory.
type Usage struct {
	// CPU is the CPU time used per second of wall time, in cores (1.5 = one and a
	// half cores busy), over the time since the scheduler's previous sample of the
	// same process, or since the process started when there is none.
	CPU float64 `json:"cpu"`
	// RSS is the resident memory in bytes: the sum of the group's processes' resident
	// sets for a local replica, the container's memory use as `docker stats` shows it
	// (usage less inactive file cache) for a container.
	RSS uint64 `json:"rss_bytes"`
	// At is when the sample was taken.
	At time.Time `json:"sampled_at"`
	// GPU is what the replica does on its GPUs (nvidia-smi, package gpus); nil
	// where there is no GPU or no nvidia-smi, or it has none.
	GPU *GPUUse `json:"gpu,omitempty"`
}

// GPUUse is what one replica does on GPUs at a moment.
type GPUUse struct {
	// Devices are its GPUs, by nvidia-smi index: those its environment names
	// (CUDA_VISIBLE_DEVICES, or NVIDIA_VISIBLE_DEVICES in a container) and those its
	// processes hold memory on.
	Devices []string `json:"devices"`
	// Util is the mean utilization.gpu of its devices, in percent; -1 when none
	// can tell.
	Util int `json:"util_pct"`
	// Used and Total are the memory used on its devices (by any process) and
	// theirs in all, in bytes.
	Used  uint64 `json:"mem_used_bytes"`
	Total uint64 `json:"mem_total_bytes"`
	// Own is the GPU memory the replica's own processes hold, in bytes.
	Own uint64 `json:"own_bytes"`
}

// MaxAttempts bounds ReplicaStatus.Attempts: older attempts are dropped. A
// crash-looping replica with a large max_retries would otherwise grow its status
// without end, and the status is rewritten whole on every change (the local
// supervisor's state.json) and read whole on every poll (the UI polls it each tick).
// The last hundred runs are plenty to see a pattern and to label every retry the UI
// shows; Restarts still counts every restart, and Attempt.Attempt says which runs
// were dropped.
const MaxAttempts = 100

// Attempt is how one earlier run of a replica ended, recorded when the replica was
// restarted.
type Attempt struct {
	// Attempt is the run's number, counted from 0 as sched.Line.Attempt counts it:
	// the lines the run wrote carry the same number.
	Attempt int `json:"attempt"`
	// ExitCode is the run's exit status (128+N when signal N ended it), nil when
	// unknown.
	ExitCode *int      `json:"exit_code,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Ended    time.Time `json:"ended,omitzero"`
	// Error is the run's structured error, as ReplicaStatus.StructuredError.
	Error string `json:"structured_error_msg,omitempty"`
}

// AddAttempt records an ended run of the replica, dropping the oldest runs beyond
// MaxAttempts.
func (r *ReplicaStatus) AddAttempt(a Attempt) {
	r.Attempts = append(r.Attempts, a)
	if n := len(r.Attempts) - MaxAttempts; n > 0 {
		r.Attempts = slices.Delete(r.Attempts, 0, n)
	}
}

// Attempt returns the recorded earlier run number n (counted from 0), and false when
// it is not recorded: the current run, a run dropped beyond MaxAttempts, or a
// scheduler that records none.
func (r *ReplicaStatus) Attempt(n int) (Attempt, bool) {
	// Numbers increase along the slice: search from the newest, which is what callers
	// ask for (the run before the current one).
	for i := len(r.Attempts) - 1; i >= 0; i-- {
		switch a := r.Attempts[i]; {
		case a.Attempt == n:
			return a, true
		case a.Attempt < n:
			return Attempt{}, false
		}
	}
	return Attempt{}, false
}

// Replicas counts running and total replicas across roles.
func (s *AppStatus) Replicas() (running, total int) {
	for _, r := range s.Roles {
		for _, rep := range r.Replicas {
			total++
			if rep.State == Running {
				running++
			}
		}
	}
	return running, total
}

// ExitCode returns the app's exit code: that of the replica that failed first (when
// one failure stops the others, theirs are only the signal that stopped them), or 0
// when every replica that ended exited 0, and false when no replica has ended.
func (s *AppStatus) ExitCode() (int, bool) {
	code, ok := 0, false
	var first time.Time
	for _, r := range s.Roles {
		for _, rep := range r.Replicas {
			if rep.ExitCode == nil {
				continue
			}
			ok = true
			if *rep.ExitCode != 0 && (code == 0 || rep.Ended.Before(first)) {
				code, first = *rep.ExitCode, rep.Ended
			}
		}
	}
	return code, ok
}

// Duration is how long the app has run: until it ended, or until now.
func (s *AppStatus) Duration(now time.Time) time.Duration {
	if s.Created.IsZero() {
		return 0
	}
	end := s.Ended
	if end.IsZero() {
		end = now
	}
	return end.Sub(s.Created)
}

// ErrorMessage extracts a readable message from a torchelastic error file's JSON
// ({"message": {"message": "...", "extraInfo": {...}}} or {"message": "..."}); any other
// text is returned as it is.
func ErrorMessage(raw string) string {
	var doc struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal([]byte(raw), &doc) != nil || doc.Message == nil {
		return raw
	}
	var s string
	if json.Unmarshal(doc.Message, &s) == nil {
		return s
	}
	var inner struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(doc.Message, &inner) == nil && inner.Message != "" {
		return inner.Message
	}
	return raw
}

// IntPtr returns a pointer to v, for optional exit codes.
func IntPtr(v int) *int { return &v }
