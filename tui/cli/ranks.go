package cli

import (
	"slices"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
)

// rankFilter wraps emit so that only the lines of the given global ranks pass: each
// replica is a torchrun node whose ranks are learned from its status (its workers'
// group rank) and its own lines (see package ranks), and the traceback the app's
// root cause puts on a rank is that rank's. Lines are passed as stored, torchrun's
// "[local_rank]:" prefix included.
// prefixed reports whether any line carried such a prefix: without one (torchrun run
// without --tee) no line can be told to be a rank's.
func rankFilter(d *sched.Description, want []int, emit func(sched.Line) error) (filtered func(sched.Line) error, prefixed func() bool) {
	nproc := map[string]int{}
	if d != nil && d.App != nil {
		for _, r := range d.App.Roles {
			nproc[r.Name] = ranks.NProcPerNode(append([]string{r.Entrypoint}, r.Args...))
		}
	}
	nodes := map[replicaRef]*ranks.Node{}
	seen := false
	return func(l sched.Line) error {
		ref := replicaRef{l.Role, l.Replica}
		n := nodes[ref]
		if n == nil {
			n = ranks.NodeOf(d, l.Role, l.Replica, nproc[l.Role])
			nodes[ref] = n
		}
		if !l.Pending {
			n.Observe(l.Text)
		}
		g, _, ok := n.AttributeLine(&l)
		seen = seen || ok
		if ok && slices.Contains(want, g) {
			return emit(l)
		}
		return nil
	}, func() bool { return seen }
}
