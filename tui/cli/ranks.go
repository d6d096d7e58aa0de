package cli

import (
	"slices"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// rankFilter wraps emit so that only the lines of the given global ranks pass: each
// replica is a torchrun node whose ranks are learned from its own lines (see package
// ranks). Lines are passed as stored, torchrun's "[local_rank]:" prefix included.
// prefixed reports whether any line carried such a prefix: without one (torchrun run
// without --tee) no line can be told to be a rank's.
func rankFilter(app *spec.AppDef, want []int, emit func(sched.Line) error) (filtered func(sched.Line) error, prefixed func() bool) {
	nproc := map[string]int{}
	if app != nil {
		for _, r := range app.Roles {
			nproc[r.Name] = ranks.NProcPerNode(append([]string{r.Entrypoint}, r.Args...))
		}
	}
	nodes := map[replicaRef]*ranks.Node{}
	seen := false
	return func(l sched.Line) error {
		ref := replicaRef{l.Role, l.Replica}
		n := nodes[ref]
		if n == nil {
			n = ranks.NewNode(l.Replica, nproc[l.Role])
			nodes[ref] = n
		}
		if !l.Pending {
			n.Observe(l.Text)
		}
		g, _, ok := n.Attribute(l.Text)
		seen = seen || ok
		if ok && slices.Contains(want, g) {
			return emit(l)
		}
		return nil
	}, func() bool { return seen }
}
