package pystack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NodeVerb is wick's hidden verb that reads, where it runs (a Slurm replica's node,
// within the replica's job), the stacks of a replica's Python processes: those whose
// environment has the replica's WICK_APP_ID, WICK_ROLE and WICK_REPLICA_ID. It reads
// CPython 3.11's stacks itself (ReadStack: milliseconds) and others with the node's
// sampler (Find), and prints them as WriteNode writes them. It replaces NodeScript,
// which sampled with gdb (tens of seconds of CPU per torch process), where wick can be
// run on the node.
const NodeVerb = "__stack-node"

// ReplicaPIDs returns the processes of this machine that run a Python interpreter
// (their executable's name starts with "python") and whose environment names replica
// k of role of app appID, in the order of their pids.
func ReplicaPIDs(appID, role string, k int) []int {
	want := [][]byte{
		[]byte("WICK_APP_ID=" + appID),
		[]byte("WICK_ROLE=" + role),
		[]byte("WICK_REPLICA_ID=" + strconv.Itoa(k)),
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		if exe, err := os.Readlink(dir + "/exe"); err != nil || !strings.HasPrefix(filepath.Base(exe), "python") {
			continue
		}
		env, err := os.ReadFile(dir + "/environ")
		if err == nil && hasAll(env, want) {
			out = append(out, pid)
		}
	}
	return out
}

// hasAll reports whether the NUL-separated environment env holds every one of kvs.
func hasAll(env []byte, kvs [][]byte) bool {
	n := 0
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		for _, w := range kvs {
			if bytes.Equal(kv, w) {
				n++
			}
		}
	}
	return n == len(kvs)
}

// DumpReplica reads the stacks of replica k of role of app appID where it runs
// (ReplicaPIDs), all at once, each within ctx: NodeVerb's work.
func DumpReplica(ctx context.Context, appID, role string, k int) []NodeDump {
	pids := ReplicaPIDs(appID, role, k)
	targets := make([]Target, len(pids))
	for i, pid := range pids {
		targets[i] = Target{PID: pid}
	}
	tool, _ := Find()
	dumps := Sample(ctx, tool, targets)
	out := make([]NodeDump, len(dumps))
	for i, d := range dumps {
		out[i] = NodeDump{PID: d.PID, Rank: RankOf(d.PID), Frames: d.Frames, Err: d.Err, Tool: d.Tool}
	}
	return out
}

// nodeJSON is a NodeDump as NodeVerb prints it.
type nodeJSON struct {
	PID    int     `json:"pid"`
	Rank   int     `json:"rank"`
	Tool   string  `json:"tool,omitempty"`
	Frames []Frame `json:"frames,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// nodeHeader starts NodeVerb's output: a caller tells its output from anything else
// a command on the node printed (a wick too old to know the verb).
const nodeHeader = "wick-stack-node 1\n"

// WriteNode writes dumps as NodeVerb prints them: nodeHeader, then one JSON object.
func WriteNode(w io.Writer, dumps []NodeDump) error {
	out := struct {
		Dumps []nodeJSON `json:"dumps"`
	}{Dumps: make([]nodeJSON, len(dumps))}
	for i, d := range dumps {
		out.Dumps[i] = nodeJSON{PID: d.PID, Rank: d.Rank, Tool: d.Tool, Frames: d.Frames}
		if d.Err != nil {
			out.Dumps[i].Error = d.Err.Error()
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, nodeHeader+string(b)+"\n")
	return err
}

// ReadNode reads what WriteNode wrote.
func ReadNode(b []byte) ([]NodeDump, error) {
	rest, ok := bytes.CutPrefix(b, []byte(nodeHeader))
	if !ok {
		return nil, errors.New("not the output of wick " + NodeVerb)
	}
	var in struct {
		Dumps []nodeJSON `json:"dumps"`
	}
	if err := json.Unmarshal(rest, &in); err != nil {
		return nil, fmt.Errorf("wick %s: %w", NodeVerb, err)
	}
	out := make([]NodeDump, len(in.Dumps))
	for i, d := range in.Dumps {
		out[i] = NodeDump{PID: d.PID, Rank: d.Rank, Tool: d.Tool, Frames: d.Frames}
		if d.Error != "" {
			out[i].Err = errors.New(d.Error)
		}
	}
	return out, nil
}
