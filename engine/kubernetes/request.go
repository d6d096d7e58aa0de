package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Request is what Schedule submits: the headless Service and one Indexed Job per role,
// the first Job owning the rest. DryRun returns it; its fields are in the order they
// are printed.
type Request struct {
	AppID     string `json:"app_id"`
	Session   string `json:"session"`
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace"`
	// JobSet, on a cluster that has JobSet's CRD, is the app: it holds the roles' Jobs
	// and the headless Service, which its controller makes (Service and Jobs are then
	// nil).
	JobSet *JobSet `json:"jobset,omitempty"`
	// Service gives each pod the name <job>-<index>.<service>.
	Service *corev1.Service `json:"service,omitempty"`
	// Jobs are the roles' Jobs, in the app's order; Jobs[0] owns the others and the
	// Service once created.
	Jobs []*batchv1.Job `json:"jobs,omitempty"`
	// Warnings are things the user should know that do not stop the launch.
	Warnings []string `json:"warnings,omitempty"`
}

// appRecord is what AnnotationApp holds: enough to rebuild the AppDef and run options.
type appRecord struct {
	App      *spec.AppDef      `json:"app"`
	Cfg      map[string]string `json:"cfg,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
}

// maxRecord bounds the owner's annotation (the API server allows 256 KiB of
// annotations per object).
const maxRecord = 200 << 10

// The environment wick sets in every container unless the user set it.
const (
	envUnbuffered = "PYTHONUNBUFFERED"
	// envErrorFile is where torchelastic writes the exception that ended the replica:
	// the container's termination message, which the kubelet keeps in the pod's status.
	envErrorFile       = "TORCHELASTIC_ERROR_FILE"
	terminationLog     = "/dev/termination-log"
	envReplicaID       = "WICK_REPLICA_ID"
	replicaPlaceholder = "\x00wick-replica-id\x00"
)

// containerName is the name of every pod's one container.
const containerName = "main"

// DryRun plans sub without creating anything: it reads the kubeconfig for the
// namespace when the namespace option is not set.
func (s *Scheduler) DryRun(ctx context.Context, sub sched.Submission) (any, error) {
	return s.plan(ctx, sub, true)
}

// looseDiscovery bounds how long a dry run asks the cluster whether it has JobSet.
const looseDiscovery = 3 * time.Second

// plan builds the request: a JobSet where the cluster has its CRD, else Jobs and a
// Service. With loose (a dry run), a missing kubeconfig plans into "default", and a
// cluster that does not answer gets Jobs.
func (s *Scheduler) plan(ctx context.Context, sub sched.Submission, loose bool) (*Request, error) {
	if sub.App == nil {
		return nil, fmt.Errorf("kubernetes: no app to plan")
	}
	req := &Request{AppID: sub.AppID, Session: sub.Session, Context: sub.Cfg.String(OptContext), Namespace: sub.Cfg.String(OptNamespace)}
	set, err := s.planPlace(ctx, req, loose)
	if err != nil {
		return nil, err
	}
	return s.planApp(sub, req, set)
}

// planPlace sets the request's namespace where the run option did not, and says
// whether the app goes into a JobSet.
func (s *Scheduler) planPlace(ctx context.Context, req *Request, loose bool) (bool, error) {
	c, err := s.client(req.Context)
	if req.Namespace == "" {
		switch {
		case err == nil:
			req.Namespace = c.namespace
		case loose:
			req.Namespace = "default"
		default:
			return false, err
		}
	}
	if err != nil {
		return false, nil // loose: planned without a cluster
	}
	if loose {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, looseDiscovery)
		defer cancel()
	}
	set, err := s.useJobSet(ctx, c)
	if err != nil && !loose {
		return false, err
	}
	return set && err == nil, nil
}

// planApp plans the app's objects in req's namespace.
func (s *Scheduler) planApp(sub sched.Submission, req *Request, set bool) (*Request, error) {
	app := sub.App.Clone()
	if errs := validation.IsDNS1123Label(req.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("%w %s=%q: not a namespace name Kubernetes takes: %s", spec.ErrInvalidRunOpt, OptNamespace, req.Namespace, strings.Join(errs, "; "))
	}
	pull := corev1.PullPolicy(sub.Cfg.String(OptImagePullPolicy))
	switch pull {
	case "":
		pull = corev1.PullIfNotPresent
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return nil, fmt.Errorf("%w %s=%q: want Always, IfNotPresent or Never", spec.ErrInvalidRunOpt, OptImagePullPolicy, pull)
	}
	svc, err := serviceName(sub.AppID)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, r := range app.Roles {
		if r.Image == "" || r.Image == spec.None {
			return nil, fmt.Errorf("role %q has no image: kubernetes runs every role in a container of its image (--image)", r.Name)
		}
		name, err := jobName(sub.AppID, r.Name, r.NumReplicas, set)
		if err != nil {
			return nil, err
		}
		if other, ok := seen[name]; ok {
			return nil, fmt.Errorf("roles %q and %q make the same Kubernetes name %q: rename one", other, r.Name, name)
		}
		seen[name] = r.Name
	}
	labels := func(role string) map[string]string {
		l := map[string]string{LabelManagedBy: managedBy, LabelAppID: sub.AppID, LabelSession: sub.Session}
		if role != "" {
			l[LabelRole] = role
		}
		if q := sub.Cfg.String(OptQueue); q != "" {
			l[LabelQueue] = q
		}
		return l
	}
	req.Service = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: req.Namespace, Labels: labels("")},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{LabelAppID: sub.AppID},
			PublishNotReadyAddresses: true,
		},
	}
	domain := sub.Cfg.String(OptClusterDomain)
	if domain == "" {
		domain = remote.DefaultClusterDomain
	}
	if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
		return nil, fmt.Errorf("%w %s=%q: not a DNS domain: %s", spec.ErrInvalidRunOpt, OptClusterDomain, domain, strings.Join(errs, "; "))
	}
	// Rank 0's fully qualified name, as its pod's /etc/hosts gives it first (the
	// kubelet writes "IP <hostname>.<subdomain>.<namespace>.svc.<domain> <hostname>"):
	// torchrun's c10d rendezvous hosts the store on the pod whose canonical name is the
	// endpoint's host (torch/distributed/elastic/rendezvous/utils.py,
	// _matches_machine_hostname); the Service's short name would make no pod host it.
	job0, _ := jobName(sub.AppID, app.Roles[0].Name, app.Roles[0].NumReplicas, set)
	rank0 := job0 + "-0." + svc + "." + req.Namespace + ".svc." + domain
	for _, role := range app.Roles {
		name, _ := jobName(sub.AppID, role.Name, role.NumReplicas, set)
		job, warn, err := planJob(sub, role, name, req.Namespace, svc, rank0, pull, labels(role.Name))
		if err == nil && s.cfg.StateDir != "" {
			// wick keeps each pod's log and end before the cluster may let it go (keep.go).
			job.Spec.Template.Finalizers = []string{FinalizerLogs}
		}
		if err != nil {
			return nil, err
		}
		req.Warnings = append(req.Warnings, warn...)
		req.Jobs = append(req.Jobs, job)
	}
	rec, err := json.Marshal(appRecord{App: app, Cfg: spec.CfgStrings(sub.Cfg), Warnings: req.Warnings})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: encoding the app: %w", err)
	}
	if len(rec) > maxRecord {
		return nil, fmt.Errorf("kubernetes: the app's definition is %d bytes, more than the %d an annotation holds (a very large env?)", len(rec), maxRecord)
	}
	req.Jobs[0].Annotations = map[string]string{AnnotationApp: string(rec)}
	if set {
		roles := make([]string, len(app.Roles))
		for i, r := range app.Roles {
			roles[i] = r.Name
		}
		req.JobSet = planJobSet(req, roles)
		req.Jobs, req.Service = nil, nil
	}
	return req, nil
}

// dnsName makes s a DNS-1123 label's characters: lowercase, '_' and '.' to '-'.
func dnsName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-")
}

// serviceName is the app's headless Service: its id as a DNS-1035 label.
func serviceName(appID string) (string, error) {
	name := dnsName(appID)
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return "", fmt.Errorf("app id %q makes the Service name %q, which Kubernetes refuses (%s): name the app with a letter first and at most 63 characters", appID, name, strings.Join(errs, "; "))
	}
	return name, nil
}

// jobName is role's Job: app id and role as DNS-1123 characters; in a JobSet (set),
// the name its controller gives the replicated Job's one Job, <jobset>-<role>-0. Its
// pods' host names, <job>-<index>, must be DNS-1123 labels too.
func jobName(appID, role string, replicas int, set bool) (string, error) {
	name := dnsName(appID) + "-" + dnsName(role)
	if set {
		name += "-0"
	}
	host := name + "-" + strconv.Itoa(replicas-1)
	if errs := validation.IsDNS1123Label(host); len(errs) > 0 {
		return "", fmt.Errorf("app %q role %q: the pods' host name %q is not one Kubernetes takes (%s): shorten the app or role name", appID, role, host, strings.Join(errs, "; "))
	}
	return name, nil
}

// escape keeps s as it is through the kubelet's $(VAR) expansion ($$ reads as $),
// then puts the replica id's expansion where the macro was.
func escape(s string) string {
	s = strings.ReplaceAll(s, "$", "$$")
	return strings.ReplaceAll(s, replicaPlaceholder, "$("+envReplicaID+")")
}

// planJob is role's Indexed Job.
func planJob(sub sched.Submission, role spec.Role, name, ns, svc, rank0 string, pull corev1.PullPolicy, labels map[string]string) (*batchv1.Job, []string, error) {
	var warnings []string
	r := spec.Macros{AppID: sub.AppID, ReplicaID: replicaPlaceholder, ImgRoot: "", Rank0Env: spec.Rank0Env}.Apply(role)
	res, err := resources(role)
	if err != nil {
		return nil, nil, err
	}
	volumes, mounts, err := planMounts(role)
	if err != nil {
		return nil, nil, err
	}
	ports, err := planPorts(role)
	if err != nil {
		return nil, nil, err
	}
	args := make([]string, len(r.Args))
	for i, a := range r.Args {
		args[i] = escape(a)
	}
	c := corev1.Container{
		Name:                     containerName,
		Image:                    role.Image,
		ImagePullPolicy:          pull,
		Command:                  []string{escape(r.Entrypoint)},
		Args:                     args,
		Env:                      containerEnv(sub, r, rank0),
		Resources:                res,
		VolumeMounts:             mounts,
		Ports:                    ports,
		TerminationMessagePath:   terminationLog,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if len(role.Resource.Devices) > 0 || hasDevice(role) {
		priv := true
		c.SecurityContext = &corev1.SecurityContext{Privileged: &priv}
	}
	n := int32(role.NumReplicas)
	mode := batchv1.IndexedCompletion
	noLinks := false
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: batchv1.JobSpec{
			Parallelism:    &n,
			Completions:    &n,
			CompletionMode: &mode,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					Subdomain:          svc,
					Containers:         []corev1.Container{c},
					Volumes:            volumes,
					ServiceAccountName: sub.Cfg.String(OptServiceAccount),
					PriorityClassName:  sub.Cfg.String(OptPriorityClass),
					SchedulerName:      sub.Cfg.String(OptSchedulerName),
					EnableServiceLinks: &noLinks,
				},
			},
		},
	}
	retries := int32(role.MaxRetries)
	if rp, _ := spec.ParseRetryPolicy(string(role.RetryPolicy)); rp == spec.RetryReplica {
		// Each index has its own retries; the Job fails once one has none left.
		zero := int32(0)
		job.Spec.BackoffLimitPerIndex = &retries
		job.Spec.MaxFailedIndexes = &zero
	} else {
		job.Spec.BackoffLimit = &retries
		if role.MaxRetries > 0 && (role.NumReplicas > 1 || len(sub.App.Roles) > 1) {
			warnings = append(warnings, fmt.Sprintf("role %q: retry_policy %s: Kubernetes restarts the failed pod only, up to max_retries failures of the role's Job in all", role.Name, rp))
		}
	}
	if role.MinReplicas > 0 && role.MinReplicas < role.NumReplicas {
		warnings = append(warnings, fmt.Sprintf("role %q: min_replicas %d is not used: the Job runs %d pods", role.Name, role.MinReplicas, role.NumReplicas))
	}
	return job, warnings, nil
}

// containerEnv is the container's environment: first the replica id from the pod's completion
// index (so that later values may use it), then wick's defaults, the env run option...
// the role's own (which wins) and the names TorchX sets.
func containerEnv(sub sched.Submission, r spec.Role, rank0 string) []corev1.EnvVar {
	vars := map[string]string{envUnbuffered: "1", envErrorFile: terminationLog}
	if ranks.RunsTorchrun(roleArgv(r)) {
		// torchrun copies a failed worker's error file to its own by removing that
		// first (torch/distributed/elastic/multiprocessing/errors/error_handler.py,
		// dump_error_file, _rm): the termination log, a mount point, cannot be
		// removed (EBUSY), and torchrun would end on that OSError. Its workers get
		// error files of their own from torchrun; the root cause of a torchrun node
		// comes from its log (ranks.go).
		delete(vars, envErrorFile)
	}
	for k, v := range r.Env {
		vars[k] = v
	}
	vars[spec.Rank0Env] = rank0
	vars["TORCHX_IMAGE"] = r.Image
	vars["WICK_APP_ID"] = sub.AppID
	vars["WICK_ROLE"] = r.Name
	out := []corev1.EnvVar{{Name: envReplicaID, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotationCompletionIndex + "']"},
	}}}
	for _, k := range spec.SortedKeys(vars) {
		if k == envReplicaID {
			continue
		}
		out = append(out, corev1.EnvVar{Name: k, Value: escape(vars[k])})
	}
	return out
}

// resources are the container's requests and limits: cpu, memory (MB as MiB, as
// TorchX), GPUs as nvidia.com/gpu and named devices as extended resources.
func resources(role spec.Role) (corev1.ResourceRequirements, error) {
	rr := role.Resource
	list := corev1.ResourceList{}
	if rr.CPU > 0 {
		list[corev1.ResourceCPU] = *resource.NewQuantity(int64(rr.CPU), resource.DecimalSI)
	}
	if rr.MemMB > 0 {
		list[corev1.ResourceMemory] = *resource.NewQuantity(int64(rr.MemMB)<<20, resource.BinarySI)
	}
	if rr.GPU > 0 {
		list["nvidia.com/gpu"] = *resource.NewQuantity(int64(rr.GPU), resource.DecimalSI)
	}
	for _, name := range spec.SortedKeys(rr.Devices) {
		if errs := validation.IsQualifiedName(name); len(errs) > 0 {
			return corev1.ResourceRequirements{}, fmt.Errorf("role %q: device %q is not a resource name Kubernetes takes: %s", role.Name, name, strings.Join(errs, "; "))
		}
		list[corev1.ResourceName(name)] = *resource.NewQuantity(int64(rr.Devices[name]), resource.DecimalSI)
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	return corev1.ResourceRequirements{Limits: list, Requests: list.DeepCopy()}, nil
}

func hasDevice(role spec.Role) bool {
	for _, m := range role.Mounts {
		if m.Type == spec.MountDevice {
			return true
		}
	}
	return false
}

// planMounts turns the role's mounts into volumes: bind and device as hostPath, volume
// as a PersistentVolumeClaim of that name.
func planMounts(role spec.Role) ([]corev1.Volume, []corev1.VolumeMount, error) {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for i, m := range role.Mounts {
		name := "mount-" + strconv.Itoa(i)
		var src corev1.VolumeSource
		switch m.Type {
		case spec.MountBind:
			src.HostPath = &corev1.HostPathVolumeSource{Path: m.Src}
		case spec.MountDevice:
			t := corev1.HostPathCharDev
			src.HostPath = &corev1.HostPathVolumeSource{Path: m.Src, Type: &t}
		case spec.MountVolume:
			src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.Src, ReadOnly: m.ReadOnly}
		default:
			return nil, nil, fmt.Errorf("role %q: mount %s: unknown type", role.Name, m)
		}
		dst := m.Dst
		if dst == "" {
			dst = m.Src
		}
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: src})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: dst, ReadOnly: m.ReadOnly})
	}
	return vols, mounts, nil
}

// planPorts are the role's port_map as container ports, named when the name is one
// Kubernetes takes (at most 15 characters, lowercase).
func planPorts(role spec.Role) ([]corev1.ContainerPort, error) {
	var ports []corev1.ContainerPort
	for _, name := range spec.SortedKeys(role.PortMap) {
		port := role.PortMap[name]
		if port < 1 || port > 65535 {
			return nil, fmt.Errorf("role %q: port_map %s=%d is not a port number", role.Name, name, port)
		}
		p := corev1.ContainerPort{ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}
		if len(validation.IsValidPortName(name)) == 0 {
			p.Name = name
		}
		ports = append(ports, p)
	}
	return ports, nil
}
