package ranks

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// errorDoc is torchelastic's error file (errors/error_handler.py, torch 1.13):
// {"message": {"message": ..., "extraInfo": {"py_callstack": ..., "timestamp": ...}}},
// which TorchX and spec.ErrorMessage read. A cause found without an error file is
// written in the same form, with what says whose it is beside.
type errorDoc struct {
	Message struct {
		Message   string    `json:"message"`
		ExtraInfo extraInfo `json:"extraInfo"`
	} `json:"message"`
}

type extraInfo struct {
	PyCallstack string `json:"py_callstack,omitempty"`
	// Timestamp is in seconds, "0" when unknown, a string as torchelastic writes it.
	Timestamp string `json:"timestamp"`
	// Rank is the global rank that failed, when known.
	Rank *int `json:"rank,omitempty"`
	// Where is the innermost frame of the original exception, "FILE:LINE in FUNC".
	Where string `json:"where,omitempty"`
	// LinesFrom and LinesTo are when the node wrote the first and the last line of an
	// unprefixed traceback: the lines to show as the rank's (see Blame).
	LinesFrom *time.Time `json:"lines_from,omitempty"`
	LinesTo   *time.Time `json:"lines_to,omitempty"`
}

// JSON is the cause as an error file's JSON: its message is String(), its callstack
// the traceback.
func (c Cause) JSON() string {
	var doc errorDoc
	doc.Message.Message = c.String()
	x := &doc.Message.ExtraInfo
	if len(c.Traceback) > 0 {
		x.PyCallstack = strings.Join(c.Traceback, "\n") + "\n"
	}
	x.Timestamp = "0"
	x.Where = c.Where
	if !c.Time.IsZero() {
		x.Timestamp = strconv.FormatInt(c.Time.Unix(), 10)
	}
	if c.Rank >= 0 {
		x.Rank = &c.Rank
		if len(c.Traceback) > 0 && !c.Prefixed && !c.Began.IsZero() {
			x.LinesFrom, x.LinesTo = &c.Began, &c.Time
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return c.String()
	}
	return string(b)
}

// Blame puts the lines of a traceback that a node wrote unprefixed (torchrun tees
// only the workers' stdout) on the rank that wrote it, as the app's root cause says:
// the node's stderr lines that are not a rank's, written From to To.
type Blame struct {
	Rank     int
	From, To time.Time
}

// BlameOf reads the Blame in a replica's structured error (Cause.JSON); ok is false
// when it has none.
func BlameOf(structuredError string) (Blame, bool) {
	if !strings.Contains(structuredError, `"lines_from"`) {
		return Blame{}, false
	}
	var doc errorDoc
	if json.Unmarshal([]byte(structuredError), &doc) != nil {
		return Blame{}, false
	}
	x := doc.Message.ExtraInfo
	if x.Rank == nil || x.LinesFrom == nil || x.LinesTo == nil || *x.Rank < 0 {
		return Blame{}, false
	}
	return Blame{Rank: *x.Rank, From: *x.LinesFrom, To: *x.LinesTo}, true
}

// SetBlame makes the node attribute the lines b covers to b's rank.
func (n *Node) SetBlame(b Blame) { n.blame = &b }

// AttributeLine is Attribute for a line with its stream and time: an unprefixed
// stderr line the node's Blame covers is its rank's.
func (n *Node) AttributeLine(l *sched.Line) (global int, rest string, ok bool) {
	if g, rest, ok := n.Attribute(l.Text); ok {
		return g, rest, ok
	}
	if b := n.blame; b != nil && l.Stream == sched.Stderr && !l.Time.Before(b.From) && !l.Time.After(b.To) {
		return b.Rank, l.Text, true
	}
	return -1, l.Text, false
}

// NodeOf returns the tracker of replica k of a torchrun role of the app d describes,
// told what the scheduler knows of it: the node's group rank, and the traceback the
// app's root cause puts on one of its ranks. nproc is the role's nproc_per_node.
func NodeOf(d *sched.Description, role string, k, nproc int) *Node {
	n := NewNode(k, nproc)
	if d == nil {
		return n
	}
	for _, rs := range d.Status.Roles {
		if rs.Role != role {
			continue
		}
		for _, r := range rs.Replicas {
			if r.ID == k {
				n.Learn(r)
			}
		}
	}
	return n
}

// Learn tells the node what its replica's status knows (see NodeOf); it reports
// whether the node's ranks changed.
func (n *Node) Learn(st spec.ReplicaStatus) bool {
	changed := false
	if st.GroupRank != nil {
		changed = n.SetGroupRank(*st.GroupRank)
	}
	if b, ok := BlameOf(st.StructuredError); ok {
		n.SetBlame(b)
	}
	return changed
}

// Where is the innermost frame of the exception a cause's JSON (Cause.JSON) records,
// "FILE:LINE in FUNC", or "".
func Where(structuredError string) string {
	if !strings.Contains(structuredError, `"where"`) {
		return ""
	}
	var doc errorDoc
	if json.Unmarshal([]byte(structuredError), &doc) != nil {
		return ""
	}
	return doc.Message.ExtraInfo.Where
}

// Callstack is the py_callstack of a torchelastic error file's JSON, "" if none.
func Callstack(errorFile string) string {
	var doc errorDoc
	if json.Unmarshal([]byte(errorFile), &doc) != nil {
		return ""
	}
	return doc.Message.ExtraInfo.PyCallstack
}

// Blamed returns the Blame the node was told (SetBlame), if any.
func (n *Node) Blamed() (Blame, bool) {
	if n.blame == nil {
		return Blame{}, false
	}
	return *n.blame, true
}

// Apply makes c, found on node c.Replica of role, the app's error in st: c.String()
// as its message, the error file's JSON as the app's and that node's structured
// error. The node is FAILED even if it was being stopped when it exited: it failed
// first, it was not a replica the stop ended.
func (c Cause) Apply(st *spec.AppStatus, role string) {
	text := c.JSON()
	st.Msg, st.StructuredError = c.String(), text
	for i := range st.Roles {
		if st.Roles[i].Role != role {
			continue
		}
		for k := range st.Roles[i].Replicas {
			if r := &st.Roles[i].Replicas[k]; r.ID == c.Replica {
				r.StructuredError = text
				if r.State == spec.Cancelled {
					r.State = spec.Failed
				}
			}
		}
	}
}
