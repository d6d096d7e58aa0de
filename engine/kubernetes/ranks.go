package kubernetes

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// torchrun roles on Kubernetes: which group rank each node got, and why a failed app
// failed, as the other schedulers say them (engine/ranks), from what the API server
// keeps.
//
//   - Group ranks. Under c10d's rendezvous (dist.ddp's) torch 1.13 gives the nodes
//     their group ranks in the sorted order of their descriptors, (fqdn, agent pid,
//     local id): dynamic_rendezvous.py's _mark_rendezvous_complete enumerates
//     sorted(state.participants) (as engine/docker/ranks.go reads it). Each pod is a
//     host of its own, whose fully qualified name the Job controller and the headless
//     Service give it: <job>-<index>.<service>.<namespace>.svc.<cluster domain>. The
//     pods of a role share all but their host name, so the sorted order of
//     "<hostname>.<subdomain>.<namespace>" is the order of the group ranks, known from
//     the pods' specs at any time, even after the app ended.
//   - The root cause of a failed app: the workers' tracebacks and torchrun's summary
//     in each node's log (stdout and stderr are one stream on Kubernetes, each line
//     timed by the kubelet), ranks.RootCause; a plain replica's end is its container's
//     exit code. A plain replica whose error file (@record, TORCHELASTIC_ERROR_FILE is
//     its termination log) holds torchelastic's JSON keeps that error, as on local.

// causeTailLines bounds the log lines of a node read for its failure: its summary and
// its workers' tracebacks are at the end.
const causeTailLines = 4000

// causeTimeout bounds the reading of the nodes' logs for one Describe.
const causeTimeout = 10 * time.Second

// maxFailuresCache bounds the nodes' failures remembered across Describe calls.
const maxFailuresCache = 1024

// failuresCache remembers what the log of an ended pod said of its failure, by pod
// UID and the container's end (its log does not change any more).
type failuresCache struct {
	mu sync.Mutex
	m  map[string]*nodeLog
}

// nodeLog is what a node's log tail says of its failure: what ranks.Failures reads,
// and the ranks torchrun's summary gives each exception line of an error file.
type nodeLog struct {
	f   *ranks.Failures
	sum map[string][]int
}

func (c *failuresCache) get(key string) (*nodeLog, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.m[key]
	return f, ok
}

func (c *failuresCache) put(key string, f *nodeLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxFailuresCache {
		c.m = map[string]*nodeLog{}
	}
	c.m[key] = f
}

// roleArgv is a role's command: entrypoint and arguments.
func roleArgv(r spec.Role) []string { return append([]string{r.Entrypoint}, r.Args...) }

// newestPods returns the newest pod of each replica of the app, by "ROLE/INDEX".
func newestPods(o *appObjects) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for i := range o.pods {
		p := &o.pods[i]
		key := p.Labels[LabelRole] + "/" + p.Labels[labelCompletionIndex]
		if q, ok := out[key]; !ok || q.CreationTimestamp.Before(&p.CreationTimestamp) {
			out[key] = p
		}
	}
	return out
}

// groupRanks sets the group rank of each replica of the app's torchrun roles that
// rendezvous with c10d across several pods: the place of its pod's name among its
// role's (see above).
func groupRanks(st *spec.AppStatus, app *spec.AppDef, newest map[string]*corev1.Pod) {
	for _, role := range app.Roles {
		argv := roleArgv(role)
		if role.NumReplicas < 2 || !ranks.RunsTorchrun(argv) || ranks.Flag(argv, "rdzv_backend") != "c10d" {
			continue
		}
		names := make([]string, role.NumReplicas)
		for k := range names {
			p := newest[role.Name+"/"+strconv.Itoa(k)]
			if p == nil || p.Spec.Hostname == "" {
				names = nil // a pod not made yet: the order is not known
				break
			}
			names[k] = p.Spec.Hostname + "." + p.Spec.Subdomain + "." + p.Namespace
		}
		if names == nil {
			continue
		}
		sorted := slices.Clone(names)
		sort.Strings(sorted)
		if len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
			continue
		}
		for i := range st.Roles {
			if st.Roles[i].Role != role.Name {
				continue
			}
			for j := range st.Roles[i].Replicas {
				r := &st.Roles[i].Replicas[j]
				if r.ID >= 0 && r.ID < len(names) {
					g, _ := slices.BinarySearch(sorted, names[r.ID])
					r.GroupRank = spec.IntPtr(g)
				}
			}
		}
	}
}

// torchrunCause names the root cause of a failed app with a torchrun role, as the
// other schedulers do: the first failure by time of its torchrun nodes ("rank 3:
// RuntimeError: ...") and of its other replicas that failed on their own (a plain
// script's traceback, "python/0: ValueError: ...", else its end: "python/0: exit code
// 3", "killed by SIGKILL", the OOM killer as such), whether or not the app runs
// torchrun: its termination message (the log's last lines) is not the cause's name.
// Its message and error become the app's, and the error of the replica where it
// happened; a plain replica's error file (@record) keeps its error, as on local.
func (s *Scheduler) torchrunCause(ctx context.Context, appID string, st *spec.AppStatus, app *spec.AppDef, newest map[string]*corev1.Pod) {
	if st.State != spec.Failed || app == nil {
		return
	}
	torchrun := map[string]spec.Role{}
	for _, role := range app.Roles {
		if ranks.RunsTorchrun(roleArgv(role)) {
			torchrun[role.Name] = role
		}
	}
	ctx, cancel := context.WithTimeout(ctx, causeTimeout)
	defer cancel()
	var best *ranks.Cause
	var bestRole string
	for _, rs := range st.Roles {
		var nodes []ranks.NodeReport
		sums := map[int]map[string][]int{}
		if role, ok := torchrun[rs.Role]; ok {
			nproc := ranks.NProcPerNode(roleArgv(role))
			for _, r := range rs.Replicas {
				p := newest[rs.Role+"/"+strconv.Itoa(r.ID)]
				if p == nil {
					continue
				}
				nl := s.nodeFailures(ctx, appID, rs.Role, r.ID, p)
				sums[r.ID] = nl.sum
				n := ranks.NodeReport{Replica: r.ID, NProc: nproc, GroupRank: -1, Failures: nl.f}
				if r.GroupRank != nil {
					n.GroupRank = *r.GroupRank
				}
				nodes = append(nodes, n)
			}
		} else {
			for _, r := range rs.Replicas {
				p := newest[rs.Role+"/"+strconv.Itoa(r.ID)]
				if r.State != spec.Failed || r.ExitCode == nil || p == nil {
					continue
				}
				if isErrorFile(r.StructuredError) {
					return // its error file (@record) says what failed, as on local
				}
				e := &ranks.Exit{Code: *r.ExitCode, Time: r.Ended, OOM: oomKilled(p)}
				if c := *r.ExitCode; c > 128 && c < 128+65 { // the runtime's 128+N for signal N
					e.Signal = c - 128
				}
				nodes = append(nodes, ranks.NodeReport{Role: rs.Role, Replica: r.ID, GroupRank: -1, Plain: true, Exit: e,
					Failures: s.nodeFailures(ctx, appID, rs.Role, r.ID, p).f})
			}
		}
		c, ok := ranks.RootCause(nodes)
		if ok && c.Rank < 0 && len(c.Ranks) > 1 {
			// Two failed workers of a node, unprefixed tracebacks: the error files'
			// exception lines in torchrun's summary say whose it was (on the other
			// schedulers the oldest file does; a pod's files are not readable).
			var mine []int
			for _, r := range sums[c.Replica][c.What] {
				if slices.Contains(c.Ranks, r) {
					mine = append(mine, r)
				}
			}
			if len(mine) == 1 {
				c.Rank, c.Ranks = mine[0], nil
			}
		}
		if ok && (best == nil || c.Time.Before(best.Time)) {
			best, bestRole = &c, rs.Role
		}
	}
	if best != nil {
		best.Apply(st, bestRole)
	}
}

// oomKilled reports whether the kubelet says the kernel's OOM killer ended the pod's
// container (its reason OOMKilled).
func oomKilled(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == containerName && t != nil {
			return t.Reason == "OOMKilled"
		}
	}
	return false
}

// isErrorFile says whether a termination message is a torchelastic error file's JSON.
func isErrorFile(msg string) bool {
	var doc struct {
		Message json.RawMessage `json:"message"`
	}
	return strings.HasPrefix(msg, "{") && json.Unmarshal([]byte(msg), &doc) == nil && doc.Message != nil
}

// nodeFailures reads the end of a replica's log (its newest pod's, p): what an ended
// pod's says is remembered.
func (s *Scheduler) nodeFailures(ctx context.Context, appID, role string, k int, p *corev1.Pod) *nodeLog {
	_, _, ended, _ := terminated(p)
	key := ""
	if !ended.IsZero() {
		key = string(p.UID) + "@" + ended.Format(time.RFC3339Nano)
		if f, ok := s.failures.get(key); ok {
			return f
		}
	}
	nl := &nodeLog{f: &ranks.Failures{}}
	it, err := s.Logs(ctx, appID, role, k, sched.LogOptions{Tail: causeTailLines})
	if err != nil {
		return nl
	}
	defer it.Close()
	sr := summaryRanks{rank: -1}
	for {
		l, err := it.Next(ctx)
		if err != nil {
			break
		}
		text := strings.TrimSuffix(l.Text, "\r")
		nl.f.Feed(text, l.Time)
		sr.feed(text)
	}
	sr.end()
	nl.sum = sr.byException
	if key != "" && ctx.Err() == nil {
		s.failures.put(key, nl)
	}
	return nl
}

// summaryRanks reads torchrun's failure summary (torch 1.13,
// torch/distributed/elastic/multiprocessing/errors/__init__.py, ChildFailedError's
// format_msg) for the exception line that ends each failure's traceback, which is
// its error file's (@record):
//
//	[1]:
//	  rank      : 3 (local_rank: 1)
//	  error_file: /tmp/torchelastic_.../attempt_0/1/error.json
//	  traceback : Traceback (most recent call last):
//	    File "/ddp/train.py", line 100, in main
//	  InjectedFailure: rank 3 fails on purpose at step 3
type summaryRanks struct {
	byException map[string][]int
	rank        int
	inTraceback bool
	last        string
}

var summaryRank = regexp.MustCompile(`^\s*rank\s*: (\d+) \(local_rank: \d+\)`)

func (s *summaryRanks) feed(line string) {
	trim := strings.TrimSpace(line)
	switch {
	case trim == "" || strings.HasPrefix(trim, "---") || strings.HasPrefix(trim, "===") || (strings.HasPrefix(trim, "[") && strings.HasSuffix(trim, "]:")):
		s.end()
	case summaryRank.MatchString(line):
		s.end()
		s.rank, _ = strconv.Atoi(summaryRank.FindStringSubmatch(line)[1])
	case strings.HasPrefix(trim, "traceback : Traceback"):
		s.inTraceback, s.last = s.rank >= 0, ""
	case s.inTraceback && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
		s.last = trim
	}
}

// end closes the failure block being read.
func (s *summaryRanks) end() {
	if s.inTraceback && s.last != "" {
		if s.byException == nil {
			s.byException = map[string][]int{}
		}
		s.byException[s.last] = append(s.byException[s.last], s.rank)
	}
	s.rank, s.inTraceback, s.last = -1, false, ""
}
