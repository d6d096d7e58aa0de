// Package ranks attributes the log lines of torchrun nodes to global ranks.
//
// A replica of a dist.ddp role is a torchrun node: one agent that starts
// nproc_per_node workers. wick reads what torchrun itself writes to the node's
// output, which every scheduler captures with times and streams:
//
//   - With --tee 1 (or 2, 3) torchrun copies each worker's stdout (stderr) to the node's,
//     each line prefixed "[<role><local_rank>]:"; dist.ddp passes --role ”, so the
//     prefix is "[0]:", "[1]:", ... Parse reads it.
//   - Its INFO log (LOGLEVEL=INFO) prints, after each rendezvous, a block
//     "Rendezvous complete for workers. Result:" with group_rank, local_ranks and
//     global_ranks. Node.Observe learns the node's ranks from it. With c10d rendezvous
//     the group rank is the order in which nodes joined, not the replica index.
//
// The per-worker files torchrun writes under PET_LOG_DIR with PET_REDIRECTS are not
// used: they carry no times, nodes that share a PET_LOG_DIR cannot be told apart by
// their directory names, they exist only where the node's file system is readable
// (not inside a container), and following them would need a second reader beside the
// node's own indexed logs. The tee prefixes arrive in the logs wick already follows.
//
// Lines without a prefix (the agent's own messages, and a worker's stream that is not
// teed) are the node's own lines. Everything here is pure: no I/O, no clock.
package ranks

import (
	"strconv"
	"strings"
)

// maxRankDigits bounds the local rank read from a prefix: no node runs a million
// workers, and a longer number is text, not a prefix.
const maxRankDigits = 6

// Parse reads torchrun's tee prefix "[<role><local_rank>]:" at the start of text. It
// returns the local rank and the text after the prefix; ok is false when text has no
// such prefix. The role is any text without brackets, colons or spaces.
func Parse(text string) (local int, rest string, ok bool) {
	if len(text) < 4 || text[0] != '[' {
		return 0, text, false
	}
	end := strings.IndexByte(text, ']')
	if end < 2 || end+1 >= len(text) || text[end+1] != ':' {
		return 0, text, false
	}
	inner := text[1:end]
	d := len(inner)
	for d > 0 && inner[d-1] >= '0' && inner[d-1] <= '9' {
		d--
	}
	digits := inner[d:]
	if digits == "" || len(digits) > maxRankDigits || strings.ContainsAny(inner[:d], "[: \t") {
		return 0, text, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, text, false
	}
	return n, text[end+2:], true
}

// Node follows one torchrun node (one replica) and maps its workers' local ranks to
// global ranks. Feed it the node's committed lines in order with Observe; Attribute
// then says which global rank wrote a line. The zero value is not usable: call
// NewNode. A Node is not safe for concurrent use.
type Node struct {
	replica, nproc int

	// What the latest complete rendezvous said. known is set once the group rank is
	// learned (a rendezvous block, a failure summary, the scheduler's word) rather
	// than assumed from the replica index.
	known       bool
	exact       bool
	groupRank   int
	localRanks  []int
	globalRanks []int

	// A rendezvous block being read.
	inBlock    bool
	block      map[string]string
	blockLines int

	// blame is the traceback that the app's root cause puts on one of the node's
	// ranks (see Blame).
	blame *Blame
}

// SetGroupRank sets the node's group rank, as the scheduler learned it from the
// node's workers (spec.ReplicaStatus.GroupRank). A rendezvous block read later still
// wins: it is torchrun's own word on the latest rendezvous. It reports whether the
// node's ranks changed.
func (n *Node) SetGroupRank(g int) bool {
	if g < 0 || n.exact {
		return false
	}
	n.known = true
	if n.groupRank == g {
		return false
	}
	n.groupRank = g
	return true
}

// Known reports whether the node's group rank was learned (SetGroupRank, a rendezvous
// block, a failure summary), not assumed from its replica index.
func (n *Node) Known() bool { return n.known }

// GroupRank is the node's group rank as last learned (or assumed: its replica index).
func (n *Node) GroupRank() int { return n.groupRank }

// NewNode returns the tracker of replica's node, which runs nproc workers
// (nproc_per_node; 0 if unknown). Until a rendezvous block is seen it assumes the
// node's group rank is its replica index, which is exact for one node or static
// rendezvous.
func NewNode(replica, nproc int) *Node {
	return &Node{replica: replica, nproc: nproc, groupRank: replica}
}

// Global returns the global rank of a local rank under the latest rendezvous:
// torchrun's own global_ranks when learned, else group_rank * nproc_per_node +
// local_rank. Without a known nproc_per_node the guess is the local rank itself on
// replica 0 and -1 elsewhere.
func (n *Node) Global(local int) int {
	if n.exact {
		for i, l := range n.localRanks {
			if l == local && i < len(n.globalRanks) {
				return n.globalRanks[i]
			}
		}
	}
	if n.nproc > 0 {
		return n.groupRank*n.nproc + local
	}
	if n.groupRank == 0 {
		return local
	}
	return -1
}

// Attribute says which worker wrote a line of the node: its global rank and the text
// without torchrun's prefix, or ok false for the node's own lines. It does not learn
// from the line (see Observe), so pending lines may be attributed too.
func (n *Node) Attribute(text string) (global int, rest string, ok bool) {
	local, rest, ok := Parse(text)
	if !ok {
		return -1, text, false
	}
	g := n.Global(local)
	if g < 0 {
		return -1, text, false
	}
	// torchrun's tee copies a partial line as it is read and prefixes the rest again
	// when it comes: a frame of a \r progress bar ends with its own prefix glued on.
	if p := text[:len(text)-len(rest)]; strings.HasSuffix(rest, p) {
		rest = rest[:len(rest)-len(p)]
	}
	return g, rest, true
}

// rendezvousMark starts torchrun's rendezvous result block (torch 1.9 and later).
const rendezvousMark = "Rendezvous complete for workers. Result:"

// maxBlockLines bounds the keys kept from one rendezvous block.
const maxBlockLines = 32

// Observe learns from one committed line of the node, in order. It reports whether the
// node's ranks changed (a rendezvous completed, possibly after a restart).
//
// The block's lines are "  key=value"; it is applied when global_ranks, the last key
// needed, arrives. Other lines in between (a worker's, a C++ warning written by
// another thread) are skipped; a block that is not complete within maxBlockLines
// lines is dropped.
func (n *Node) Observe(text string) bool {
	if !n.exact && n.nproc > 0 && strings.HasPrefix(text, "  rank      : ") {
		// torchrun's failure summary: "  rank      : 3 (local_rank: 1)".
		f := Failures{sum: &summaryReader{}}
		f.sum.blocks = []Failure{{Rank: -1, Local: -1}}
		f.sum.cur = &f.sum.blocks[0]
		f.readSummary(text)
		if g, l := f.sum.cur.Rank, f.sum.cur.Local; g >= l && l >= 0 && l < n.nproc {
			return n.SetGroupRank((g - l) / n.nproc)
		}
		return false
	}
	if strings.Contains(text, rendezvousMark) {
		n.inBlock, n.block, n.blockLines = true, map[string]string{}, 0
		return false
	}
	if !n.inBlock {
		return false
	}
	n.blockLines++
	if n.blockLines > maxBlockLines {
		n.inBlock, n.block = false, nil
		return false
	}
	k, v, ok := strings.Cut(strings.TrimSpace(text), "=")
	if !ok || !strings.HasPrefix(text, "  ") {
		return false
	}
	n.block[k] = v
	if k != "global_ranks" {
		return false
	}
	return n.endBlock()
}

// endBlock applies a finished rendezvous block.
func (n *Node) endBlock() bool {
	n.inBlock = false
	b := n.block
	n.block = nil
	g, err := strconv.Atoi(b["group_rank"])
	if err != nil {
		return false
	}
	locals, ok1 := parseList(b["local_ranks"])
	globals, ok2 := parseList(b["global_ranks"])
	if !ok1 || !ok2 || len(locals) != len(globals) {
		return false
	}
	// A block that confirms the ranks the node had (assumed from its replica index,
	// or learned before) changes nothing: a wall that reads the node's lines again
	// when its ranks change must not read them again for a block it has seen.
	changed := g != n.groupRank
	for i, l := range locals {
		changed = changed || n.Global(l) != globals[i]
	}
	n.known, n.exact, n.groupRank, n.localRanks, n.globalRanks = true, true, g, locals, globals
	if n.nproc <= 0 {
		n.nproc = len(locals)
	}
	return changed
}

// parseList reads a Python list of ints such as "[0, 1]".
func parseList(s string) ([]int, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	if s == "" {
		return nil, true
	}
	parts := strings.Split(s, ",")
	if len(parts) > 1<<16 {
		return nil, false
	}
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// NProcPerNode reads torchrun's --nproc_per_node (or --nproc-per-node) from a role's
// entrypoint and arguments, also inside a "bash -c" command line as dist.ddp builds
// it. It returns 0 when there is none or it is not a number ("gpu", "auto").
func NProcPerNode(argv []string) int {
	if n, err := strconv.Atoi(Flag(argv, "nproc_per_node")); err == nil && n > 0 && n <= 1<<20 {
		return n
	}
	return 0
}

// Flag reads the value of torchrun's option --name (spelled with _ or -, "--name V"
// or "--name=V") from a role's entrypoint and arguments, also inside a "bash -c"
// command line; "" when there is none.
func Flag(argv []string, name string) string {
	var words []string
	for _, a := range argv {
		words = append(words, strings.Fields(a)...)
	}
	dashed := strings.ReplaceAll(name, "_", "-")
	for i, w := range words {
		w = strings.Trim(w, `'"`)
		switch {
		case w == "--"+name || w == "--"+dashed:
			if i+1 < len(words) {
				return strings.Trim(words[i+1], `'"`)
			}
			return ""
		case strings.HasPrefix(w, "--"+name+"="), strings.HasPrefix(w, "--"+dashed+"="):
			_, val, _ := strings.Cut(w, "=")
			return val
		}
	}
	return ""
}

// RunsTorchrun reports whether a replica's command runs torchrun (dist.ddp's does,
// inside bash -c).
func RunsTorchrun(argv []string) bool {
	for _, a := range argv {
		if strings.Contains(a, "torchrun") || strings.Contains(a, "torch.distributed.run") {
			return true
		}
	}
	return false
}

// Glued returns where torchrun's tee glued other workers' lines to this line of the
// node, split there: each part with its prefix, in order; nil when there is no glue.
//
// torchrun's tee (torch.distributed.elastic.multiprocessing.tail_log.tail_logfile)
// copies each worker's output file a line at a time, from one thread per worker, and
// copies a partial line as it finds it, prefixed; the rest of that line comes later,
// prefixed again. Python's print writes its text and its newline in two writes, so a
// worker caught between them (a loaded machine, all ranks printing at one barrier)
// leaves its text without a newline, and the next worker's line is glued on:
// "[0]:rank 2/4 ready[1]:rank 3/4 ready" then "[0]:". Read whole, rank 3's line would
// be rank 2's. A glue is told by the prefix of another local rank of the node (below
// nproc, the same role) in the line's text; the same worker's own prefix glued on is
// its own line's rest (see Attribute). Without a known nproc nothing is split.
func (n *Node) Glued(text string) []string {
	local, rest, ok := Parse(text)
	if !ok || n.nproc <= 0 || strings.IndexByte(rest, '[') < 0 {
		return nil
	}
	role := prefixRole(text[:len(text)-len(rest)])
	var parts []string
	start := 0 // of the current part in text
	for i := len(text) - len(rest); i < len(text); i++ {
		if text[i] != '[' {
			continue
		}
		l, r, ok := Parse(text[i:])
		if !ok || l == local || l >= n.nproc || prefixRole(text[i:len(text)-len(r)]) != role {
			continue
		}
		parts = append(parts, text[start:i])
		start, local = i, l
		i = len(text) - len(r) - 1
	}
	if parts == nil {
		return nil
	}
	return append(parts, text[start:])
}

// prefixRole is the role of a tee prefix "[<role><local_rank>]:".
func prefixRole(prefix string) string {
	inner := prefix[1 : len(prefix)-2]
	return strings.TrimRight(inner, "0123456789")
}
