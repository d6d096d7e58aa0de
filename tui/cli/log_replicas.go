package cli

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// replicaRef is one replica whose logs are printed.
type replicaRef struct {
	role string
	k    int
}

// selectReplicas resolves a log identifier against the app's roles.
func selectReplicas(id spec.LogID, st *spec.AppStatus, app *spec.AppDef) ([]replicaRef, error) {
	counts := map[string]int{}
	var order []string
	add := func(role string, n int) {
		if _, ok := counts[role]; !ok {
			order = append(order, role)
		}
		counts[role] = max(counts[role], n)
	}
	if app != nil {
		for _, r := range app.Roles {
			add(r.Name, r.NumReplicas)
		}
	}
	for _, r := range st.Roles {
		n := 0
		for _, rep := range r.Replicas {
			n = max(n, rep.ID+1)
		}
		add(r.Role, n)
	}
	var refs []replicaRef
	for _, role := range order {
		if id.Role != "" && role != id.Role {
			continue
		}
		if len(id.Replicas) == 0 {
			for k := range counts[role] {
				refs = append(refs, replicaRef{role, k})
			}
			continue
		}
		for _, k := range id.Replicas {
			if k >= counts[role] {
				return nil, fmt.Errorf("role %q of %s has no replica %d (it has %d)", role, id.Handle, k, counts[role])
			}
			refs = append(refs, replicaRef{role, k})
		}
	}
	if id.Role != "" && len(refs) == 0 {
		return nil, fmt.Errorf("no role %q in %s%s", id.Role, id.Handle, spec.DidYouMean(id.Role, order))
	}
	return refs, nil
}

// attemptDividers puts a divider line before the first line of each later attempt of
// a replica that was restarted, as the wall does: "── attempt 2, previous exit 3 ──".
// It reports whether any selected replica was restarted (the lines must then be read
// one by one, not copied from the file).
func attemptDividers(st *spec.AppStatus, refs []replicaRef, emit func(sched.Line) error) (func(sched.Line) error, bool) {
	reps := map[replicaRef]*spec.ReplicaStatus{}
	retried := false
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			r := &st.Roles[i].Replicas[j]
			ref := replicaRef{r.Role, r.ID}
			if !slices.Contains(refs, ref) {
				continue
			}
			reps[ref] = r
			retried = retried || r.Restarts > 0 || len(r.Attempts) > 0
		}
	}
	if !retried {
		return emit, false
	}
	last := map[replicaRef]int{}
	return func(l sched.Line) error {
		ref := replicaRef{l.Role, l.Replica}
		if l.Attempt > last[ref] {
			last[ref] = l.Attempt
			text := fmt.Sprintf("── attempt %d", l.Attempt+1)
			if r := reps[ref]; r != nil {
				if a, ok := r.Attempt(l.Attempt - 1); ok && a.ExitCode != nil {
					text += fmt.Sprintf(", previous exit %d", *a.ExitCode)
				}
			}
			div := sched.Line{Role: l.Role, Replica: l.Replica, Stream: l.Stream, Time: l.Time, Attempt: l.Attempt, Text: text + " ──"}
			if err := emit(div); err != nil {
				return err
			}
		}
		return emit(l)
	}, true
}

func prefixIndex(refs []replicaRef) map[string]int {
	m := map[string]int{}
	for i, r := range refs {
		m[r.role+"/"+strconv.Itoa(r.k)] = i
	}
	return m
}
