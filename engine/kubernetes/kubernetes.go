// Package kubernetes is wick's kubernetes scheduler: an AppDef runs on a Kubernetes
// cluster as one Indexed Job per role (parallelism = completions = the role's
// replicas, completionMode Indexed: each pod's completion index is its replica id)
// and one headless Service that gives each pod a stable name, <job>-<index>.<service>,
// for the rank-0 address. The first role's Job owns the Service and the other Jobs
// (ownerReferences), so that deleting it deletes the whole app; cancel releases the
// running pods from their Jobs and sets their deadline (the kubelet stops them, their
// logs kept), then suspends every Job, so that nothing starts again: the cluster
// finishes the stop on its own.
//
// The app's handle is kubernetes://SESSION/APP_ID, or kubernetes://SESSION/NAMESPACE:APP_ID
// as TorchX writes it (an app of another namespace, or of another WICK_HOME). Every object wick makes is labelled
// with the app id, the session and the role (labels below); the owner Job also holds
// the AppDef and the run options in an annotation, so that describe rebuilds the app
// from the cluster alone. The namespace is the namespace run option, else the current
// context's (as kubectl takes it); wick records it under
// $WICK_HOME/kubernetes/apps/APP_ID, so that later verbs find the app.
//
// The client is client-go, configured as kubectl is: KUBECONFIG, ~/.kube/config or
// the in-cluster service account. Logs are the pods' logs, with their timestamps;
// a retried replica's earlier attempts are its earlier pods (restartPolicy Never).
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Name is the scheduler's registry name.
const Name = remote.Name

// Run option names, as TorchX's kubernetes scheduler has them where it has them
// (package remote holds them, for wick, which does not link this package).
const (
	OptNamespace       = remote.OptNamespace
	OptServiceAccount  = remote.OptServiceAccount
	OptPriorityClass   = remote.OptPriorityClass
	OptImagePullPolicy = remote.OptImagePullPolicy
	OptSchedulerName   = remote.OptSchedulerName
	OptQueue           = remote.OptQueue
	OptContext         = remote.OptContext
	OptClusterDomain   = remote.OptClusterDomain
)

// Labels and annotations wick puts on what it creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "wick"
	LabelAppID     = "wick.dev/app-id"
	LabelSession   = "wick.dev/session"
	LabelRole      = "wick.dev/role"
	// LabelQueue is Kueue's queue label, set from the queue run option.
	LabelQueue = "kueue.x-k8s.io/queue-name"
	// AnnotationApp holds the AppDef and run options on the owner Job (JSON).
	AnnotationApp = "wick.dev/app"
	// AnnotationCancelled marks an app cancelled by wick.
	AnnotationCancelled = "wick.dev/cancelled"
	// AnnotationStopped marks a pod wick stopped (its activeDeadlineSeconds set), and
	// says why: "cancelled", or the role whose failure stopped the app.
	AnnotationStopped = "wick.dev/stopped"
	// AnnotationDeleted marks a pod that wick saw deleted while it ran (its logs'
	// keeper, keep.go): it ends FAILED, but did not fail on its own.
	AnnotationDeleted = "wick.dev/deleted-running"
	// labelCompletionIndex is the Job controller's label of a pod's completion index.
	labelCompletionIndex = "batch.kubernetes.io/job-completion-index"
	// annotationCompletionIndex is the same, as an annotation (for the downward API).
	annotationCompletionIndex = "batch.kubernetes.io/job-completion-index"
)

// Errors a caller may decide on.
var (
	// ErrNoConfig is wrapped when no kubeconfig and no in-cluster account are found.
	ErrNoConfig = errors.New("no Kubernetes configuration")
	// ErrUnreachable is wrapped when the API server does not answer.
	ErrUnreachable = sched.Unreachable("the Kubernetes API server does not answer")
)

// callTimeout bounds each call to the API server that is not a watch or a log stream.
const callTimeout = 30 * time.Second

// Scheduler is the kubernetes scheduler. It holds a client, made on first use; apps
// live in the cluster and in the small records under StateDir. It is safe for
// concurrent use.
type Scheduler struct {
	cfg sched.Config

	mu     sync.Mutex // guards conns
	conns  map[string]*conn
	loader func(kubeContext string) clientcmd.ClientConfig
	// failures remembers what ended torchrun nodes wrote of their failure.
	failures failuresCache
	// noJobSet makes apps of Jobs even where the cluster has JobSet (the tests of
	// the path a cluster without its CRD takes).
	noJobSet bool
	// keeper, when set, starts the keeper of a launched app instead of startKeeper's
	// own way (the tests).
	keeper func(appID string) error
}

// conn is a client of one kubeconfig context and its namespace.
type conn struct {
	batch     batchv1client.BatchV1Interface
	core      corev1client.CoreV1Interface
	dyn       dynamic.Interface
	namespace string
	host      string
	jobSet    jobSetCache
}

// New makes the kubernetes scheduler. It does not contact the cluster.
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
	return &Scheduler{cfg: cfg, conns: map[string]*conn{}, loader: kubeconfig}, nil
}

// kubeconfig loads the configuration as kubectl does: KUBECONFIG (a list), else
// ~/.kube/config, else the in-cluster service account; kubeContext "" is the current
// context.
func kubeconfig(kubeContext string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
}

// Name returns "kubernetes".
func (s *Scheduler) Name() string { return Name }

// RunOpts lists the kubernetes run options.
func (s *Scheduler) RunOpts() spec.RunOpts { return remote.RunOpts() }

// Close does nothing: client-go's connections close with the process.
func (s *Scheduler) Close() error { return nil }

// client returns the client of kubeContext ("" for the current one).
func (s *Scheduler) client(kubeContext string) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.conns[kubeContext]; ok {
		return c, nil
	}
	cc := s.loader(kubeContext)
	rc, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("%w: set KUBECONFIG or write ~/.kube/config (kubectl config view shows what is found)", ErrNoConfig)
		}
		return nil, fmt.Errorf("%w: %v", ErrNoConfig, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig namespace: %w", err)
	}
	if ns == "" {
		ns = "default"
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "wick"
	rc.QPS, rc.Burst = 50, 100
	batch, err := batchv1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	c := &conn{batch: batch, core: core, dyn: dyn, namespace: ns, host: rc.Host}
	s.conns[kubeContext] = c
	return c, nil
}

// apiError words an API error in one line: an unreachable server names its address,
// a forbidden request gives RBAC's reason, the rest keep the server's message.
func (c *conn) apiError(what string, err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", what, err)
	case apierrors.IsForbidden(err):
		// RBAC's own words: `jobs.batch is forbidden: User "..." cannot create ...`.
		return fmt.Errorf("%s: %s", what, statusMessage(err))
	case errors.As(err, &ue) || errors.As(err, &ne) || isConnRefused(err):
		return fmt.Errorf("%w at %s: %s: %v", ErrUnreachable, c.host, what, rootCause(err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// statusMessage is the API server's own message of an error.
func statusMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Message
	}
	return err.Error()
}

func isConnRefused(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host"))
}

// rootCause is the innermost error of a chain.
func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// callCtx bounds one API call.
func callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}

// recordDir is where the scheduler keeps each app's namespace and context.
func (s *Scheduler) recordDir() string { return remote.RecordDir(s.cfg.StateDir) }

// where is an app's place: the kubeconfig context and namespace it was launched in.
type where struct {
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace"`
}

// splitAppID reads an app id as a handle gives it: APP_ID, or NAMESPACE:APP_ID as
// TorchX's kubernetes handles have it.
func splitAppID(appID string) (ns, id string) {
	if ns, id, ok := strings.Cut(appID, ":"); ok {
		return ns, id
	}
	return "", appID
}

// locate returns the client and namespace of appID, and its id without a namespace:
// the namespace appID names, else its record's, else the current context's.
func (s *Scheduler) locate(appID string) (*conn, string, string, error) {
	ns, id := splitAppID(appID)
	w := where{}
	if s.cfg.StateDir != "" && spec.ValidateName("app id", id) == nil {
		if b, err := os.ReadFile(filepath.Join(s.recordDir(), id)); err == nil && len(b) < 4096 {
			w = parseWhere(string(b))
		}
	}
	c, err := s.client(w.Context)
	if err != nil {
		return nil, "", "", err
	}
	switch {
	case ns != "":
		w.Namespace = ns
	case w.Namespace == "":
		w.Namespace = c.namespace
	}
	return c, w.Namespace, id, nil
}

// parseWhere reads a record: "namespace\ncontext\n".
func parseWhere(s string) where {
	lines := strings.Split(s, "\n")
	w := where{Namespace: strings.TrimSpace(lines[0])}
	if len(lines) > 1 {
		w.Context = strings.TrimSpace(lines[1])
	}
	return w
}

// remember writes appID's record.
func (s *Scheduler) remember(appID string, w where) error {
	if s.cfg.StateDir == "" {
		return nil
	}
	dir := s.recordDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kubernetes: recording the app: %w", err)
	}
	tmp := filepath.Join(dir, "."+appID+".tmp")
	if err := os.WriteFile(tmp, []byte(w.Namespace+"\n"+w.Context+"\n"), 0o644); err != nil {
		return fmt.Errorf("kubernetes: recording the app: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, appID))
}

// forget removes appID's record.
func (s *Scheduler) forget(appID string) {
	if s.cfg.StateDir != "" {
		_ = os.Remove(filepath.Join(s.recordDir(), appID))
	}
}
