package ranks

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in    string
		local int
		rest  string
		ok    bool
	}{
		{"[0]:rank 0 ready", 0, "rank 0 ready", true},
		{"[12]:", 12, "", true},
		{"[trainer3]:loss 1.0", 3, "loss 1.0", true},
		{"[default0]:x", 0, "x", true},
		{"[]:x", 0, "[]:x", false},
		{"[a]:x", 0, "[a]:x", false},
		{"[0] x", 0, "[0] x", false},
		{"[0]", 0, "[0]", false},
		{"x[0]:y", 0, "x[0]:y", false},
		{"[1234567]:x", 0, "[1234567]:x", false},
		{"[a b1]:x", 0, "[a b1]:x", false},
		{"INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous", 0, "INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous", false},
	} {
		local, rest, ok := Parse(c.in)
		if local != c.local || rest != c.rest || ok != c.ok {
			t.Errorf("Parse(%q) = %d, %q, %v; want %d, %q, %v", c.in, local, rest, ok, c.local, c.rest, c.ok)
		}
	}
}

// rendezvous is what torchrun 1.13 prints on stderr (LOGLEVEL=INFO), one line at a
// time as wick stores it.
const rendezvous = `INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous'ing worker group
INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:
  restart_count=0
  master_addr=localhost
  master_port=41113
  group_rank=1
  group_world_size=2
  local_ranks=[0, 1]
  role_ranks=[2, 3]
  global_ranks=[2, 3]
  role_world_sizes=[4, 4]
  global_world_sizes=[4, 4]

INFO:torch.distributed.elastic.agent.server.api:[] Starting worker group`

func TestNodeLearnsGroupRank(t *testing.T) {
	// Replica 0 joined second: c10d made it group rank 1.
	n := NewNode(0, 2)
	if g, _, ok := n.Attribute("[1]:hello"); !ok || g != 1 || n.exact {
		t.Fatalf("before the rendezvous: rank %d ok %v exact %v; want the guess 1", g, ok, n.exact)
	}
	changed := false
	for _, l := range strings.Split(rendezvous, "\n") {
		changed = n.Observe(l) || changed
	}
	if !changed || !n.exact || n.groupRank != 1 {
		t.Fatalf("after the rendezvous: changed %v exact %v group rank %d", changed, n.exact, n.groupRank)
	}
	if g, rest, ok := n.Attribute("[1]:hello"); !ok || g != 3 || rest != "hello" {
		t.Fatalf("Attribute = %d %q %v; want 3 hello", g, rest, ok)
	}
	if got := []int{n.Global(0), n.Global(1)}; !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("global ranks = %v", got)
	}
	if _, _, ok := n.Attribute("INFO:torch.distributed.elastic.agent.server.api:[] Starting worker group"); ok {
		t.Fatal("an agent line was attributed to a worker")
	}
}

func TestNodeBlockSurvivesWorkerLine(t *testing.T) {
	n := NewNode(1, 0)
	lines := strings.Split(rendezvous, "\n")
	for i, l := range lines {
		switch i {
		case 4:
			n.Observe("[0]:a worker line in between")
		case 6:
			n.Observe("W20261123 13:50:59.379546  9965 socket.cpp:426] [c10d] a warning from another thread")
		}
		n.Observe(l)
	}
	if !n.exact || n.Global(0) != 2 || n.Global(1) != 3 {
		t.Fatalf("exact %v, globals %d %d", n.exact, n.Global(0), n.Global(1))
	}
}

func TestNodeGarbageBlock(t *testing.T) {
	n := NewNode(2, 4)
	for _, l := range []string{rendezvous[:200], "  group_rank=x", "  local_ranks=[0,", "done"} {
		n.Observe(l)
	}
	if n.exact || n.Global(1) != 9 {
		t.Fatalf("a broken block was learned: exact %v global %d", n.exact, n.Global(1))
	}
}

func TestAttributeStripsTeeGlue(t *testing.T) {
	n := NewNode(0, 2)
	if _, rest, _ := n.Attribute("[0]:epoch 0  25%|###   |[0]:"); rest != "epoch 0  25%|###   |" {
		t.Fatalf("rest = %q", rest)
	}
}

func TestNProcPerNode(t *testing.T) {
	ddp := []string{"-c", "torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0 --rdzv_id 'x' --nnodes 1 --nproc_per_node 4 --tee 1 --role '' train.py"}
	if got := NProcPerNode(ddp); got != 4 {
		t.Fatalf("NProcPerNode = %d", got)
	}
	for _, argv := range [][]string{{"--nproc-per-node=3"}, {"--nproc_per_node", "'3'"}} {
		if got := NProcPerNode(argv); got != 3 {
			t.Fatalf("NProcPerNode(%q) = %d", argv, got)
		}
	}
	for _, argv := range [][]string{{"--nproc_per_node", "gpu"}, {"--nproc_per_node"}, {"echo", "hi"}, {"--nproc_per_node", "99999999999"}} {
		if got := NProcPerNode(argv); got != 0 {
			t.Fatalf("NProcPerNode(%q) = %d", argv, got)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("[0]:x")
	f.Add("[role12]:")
	f.Fuzz(func(t *testing.T, s string) {
		local, rest, ok := Parse(s)
		if ok && (local < 0 || !strings.HasSuffix(s, rest)) {
			t.Fatalf("Parse(%q) = %d %q", s, local, rest)
		}
		n := NewNode(1, 2)
		n.Observe(s)
		n.Attribute(s)
	})
}

func TestHint(t *testing.T) {
	// The error file torchrun 1.13 writes when --tee 3 crashes it (abridged).
	crash := `{"message": {"message": "AttributeError: 'NoneType' object has no attribute 'get'", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/__init__.py\", line 207, in start_processes\n    redirs = to_map(redirects, nprocs)\n  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/api.py\", line 162, in to_map\n    map[i] = val_or_map.get(i, Std.NONE)\nAttributeError: 'NoneType' object has no attribute 'get'\n"}}}`
	if Hint(crash) != TeeWorkaround {
		t.Fatal("no hint for the --tee 3 crash")
	}
	if Hint(`{"message": {"message": "AttributeError: 'NoneType' object has no attribute 'get'"}}`) != "" {
		t.Fatal("a hint for a user's own AttributeError")
	}
}

// TestNodeRendezvousThatConfirms: a rendezvous block that says what the node assumed
// (replica 0 of one node: group rank 0) or had learned reports no change, so that a
// reader that reads the node's lines again when its ranks change (the wall) does not
// do so forever; one that moves the ranks reports it.
func TestNodeRendezvousThatConfirms(t *testing.T) {
	block := func(g int, globals string) []string {
		return []string{
			"INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for workers. Result:",
			"  group_rank=" + strconv.Itoa(g),
			"  local_ranks=[0, 1]",
			"  global_ranks=" + globals,
		}
	}
	observe := func(n *Node, lines []string) (changed bool) {
		for _, l := range lines {
			changed = n.Observe(l) || changed
		}
		return changed
	}
	n := NewNode(0, 2)
	if observe(n, block(0, "[0, 1]")) {
		t.Error("a block confirming the assumed ranks 0, 1 reported a change")
	}
	if observe(n, block(0, "[0, 1]")) {
		t.Error("the same block seen again reported a change")
	}
	if !observe(n, block(1, "[2, 3]")) || n.Global(1) != 3 {
		t.Errorf("a block moving the node to ranks 2, 3 reported no change (rank of local 1: %d)", n.Global(1))
	}
	// A node read again knows its group rank (SetGroupRank) before its block comes.
	again := NewNode(0, 2)
	again.SetGroupRank(1)
	if observe(again, block(1, "[2, 3]")) {
		t.Error("a block confirming the group rank learned before reported a change")
	}
}

// Glued splits a line of torchrun's tee where it glued another worker's line to a
// partial one (see Node.Glued), and nothing else.
func TestGlued(t *testing.T) {
	n := NewNode(1, 2)
	for text, want := range map[string][]string{
		"[0]:rank 2/4 ready[1]:rank 3/4 ready": {"[0]:rank 2/4 ready", "[1]:rank 3/4 ready"},
		"[1]:rank 3/4 ready[0]:rank 2/4 ready": {"[1]:rank 3/4 ready", "[0]:rank 2/4 ready"},
		"[0]:a[1]:b[0]:c":                      {"[0]:a", "[1]:b", "[0]:c"},
		"[0]:step 3 loss 0.5[1]:":              {"[0]:step 3 loss 0.5", "[1]:"},
		"[0]:x[0]: 5":                          nil, // its own prefix: its own text
		"[0]:x[2]: 5":                          nil, // no such local rank on the node
		"[0]:x[a1]: 5":                         nil, // another role's
		"[0]:no glue":                          nil,
		"plain [1]:x":                          nil, // not a worker's line
		"[0]:50%|█████     | 5/10 [00:01<00:01]": nil,
	} {
		if got := n.Glued(text); !slices.Equal(got, want) {
			t.Errorf("Glued(%q) = %q, want %q", text, got, want)
		}
	}
	if got := NewNode(1, 0).Glued("[0]:a[1]:b"); got != nil {
		t.Errorf("split without a known nproc: %q", got)
	}
	if got := NewNode(0, 2).Glued("[trainer0]:a[trainer1]:b"); !slices.Equal(got, []string{"[trainer0]:a", "[trainer1]:b"}) {
		t.Errorf("a role's prefixes: %q", got)
	}
}
