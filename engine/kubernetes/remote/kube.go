package remote

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Name is the kubernetes scheduler's registry name.
const Name = "kubernetes"

// Helper is the name of the kubernetes scheduler's helper binary, which `make build`
// puts beside wick.
const Helper = "wick-kubernetes"

// Run option names, as TorchX's kubernetes scheduler has them where it has them.
const (
	OptNamespace       = "namespace"
	OptServiceAccount  = "service_account"
	OptPriorityClass   = "priority_class"
	OptImagePullPolicy = "image_pull_policy"
	OptSchedulerName   = "scheduler_name"
	OptQueue           = "queue"
	OptContext         = "context"
	OptClusterDomain   = "cluster_domain"
)

// DefaultClusterDomain is the cluster DNS domain of nearly every cluster (the
// kubelet's clusterDomain, kubeadm's default).
const DefaultClusterDomain = "cluster.local"

// RunOpts lists the kubernetes run options, and the commands of engine/alerts
// (on_end, on_alarm), which the alerts' watcher runs on the launching machine.
func RunOpts() spec.RunOpts {
	return append(spec.RunOpts{
		{Name: OptNamespace, Type: spec.OptString, Help: "namespace to run the app in (default: the current context's, as kubectl takes it)"},
		{Name: OptServiceAccount, Type: spec.OptString, Help: "service account the pods run as (default: the namespace's default)"},
		{Name: OptPriorityClass, Type: spec.OptString, Help: "priority class name of the pods"},
		{Name: OptImagePullPolicy, Type: spec.OptString, Default: "IfNotPresent", Help: "when the node pulls the image: Always, IfNotPresent or Never"},
		{Name: OptSchedulerName, Type: spec.OptString, Help: "pod scheduler to use (e.g. volcano); default: the cluster's"},
		{Name: OptQueue, Type: spec.OptString, Help: "Kueue local queue to submit the Jobs to (label kueue.x-k8s.io/queue-name)"},
		{Name: OptContext, Type: spec.OptString, Help: "kubeconfig context to use (default: the current context)"},
		{Name: OptClusterDomain, Type: spec.OptString, Default: DefaultClusterDomain, Help: "the cluster's DNS domain (the kubelets' clusterDomain): rank 0's address is its pod's fully qualified name in it, which torchrun on that pod knows as its own"},
	}, alerts.RunOpts()...)
}

// RecordDir is where the kubernetes scheduler keeps a record of each app launched
// with the state directory stateDir (one file per app id: its namespace and context).
func RecordDir(stateDir string) string { return filepath.Join(stateDir, "kubernetes", "apps") }

// Register adds the kubernetes scheduler to r, as a client of its helper.
func Register(r *sched.Registry) { r.Register(Name, New) }

// New makes the kubernetes scheduler of wick: a Client of the helper found beside
// wick's own binary (cfg.Self), else on PATH. It starts nothing.
func New(cfg sched.Config) (sched.Scheduler, error) {
	if cfg.Session == "" {
		cfg.Session = spec.DefaultSession
	}
	if cfg.StateDir != "" && !filepath.IsAbs(cfg.StateDir) {
		abs, err := filepath.Abs(cfg.StateDir)
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		cfg.StateDir = abs
	}
	return NewClient(Name, RunOpts(), cfg, func() ([]string, error) {
		path, err := findHelper(cfg.Self)
		if err != nil {
			return nil, err
		}
		return HelperArgs(path, cfg), nil
	}, func() bool { return hasRecords(cfg.StateDir) }), nil
}

// NewClient makes a client of a helper whose command line command gives. hasApps,
// when not nil, tells List whether there could be anything to list, without the
// helper.
func NewClient(name string, runOpts spec.RunOpts, cfg sched.Config, command func() ([]string, error), hasApps func() bool) *Client {
	return &Client{name: name, runOpts: runOpts, cfg: cfg, command: command, hasApps: hasApps}
}

// HelperArgs is the command line that runs the helper at path for cfg.
func HelperArgs(path string, cfg sched.Config) []string {
	return []string{path, "serve", "--session", cfg.Session, "--state-dir", cfg.StateDir, "--work-dir", cfg.WorkDir}
}

// findHelper looks for the helper beside the wick binary self[0], then on PATH.
func findHelper(self []string) (string, error) {
	var beside string
	if len(self) > 0 && self[0] != "" {
		beside = filepath.Join(filepath.Dir(self[0]), Helper)
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, nil
		}
	}
	if path, err := exec.LookPath(Helper); err == nil {
		return path, nil
	}
	where := "on PATH"
	if beside != "" {
		where = "at " + beside + " nor on PATH"
	}
	return "", errors.New("wick runs its Kubernetes client in the helper " + Helper + ", which is not " + where + ": `make build` builds it beside wick (go install github.com/wick-dev/wick/cmd/" + Helper + " installs it on its own)")
}

// hasRecords says whether stateDir records a kubernetes app.
func hasRecords(stateDir string) bool {
	if stateDir == "" {
		return false
	}
	entries, err := os.ReadDir(RecordDir(stateDir))
	if err != nil {
		// Unreadable for another reason than absence: let the helper say why.
		return !errors.Is(err, os.ErrNotExist)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			return true
		}
	}
	return false
}
