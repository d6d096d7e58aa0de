package ranks

import (
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestCauseApply: the cause becomes the app's message ("rank 3: ..."), and the node it
// happened on carries it and is FAILED, though the stop that followed reached it first
// (CANCELLED); the other nodes and roles keep their own.
func TestCauseApply(t *testing.T) {
	st := &spec.AppStatus{Roles: []spec.RoleStatus{
		{Role: "reader", Replicas: []spec.ReplicaStatus{{ID: 1, State: spec.Cancelled}}},
		{Role: "trainer", Replicas: []spec.ReplicaStatus{{ID: 0, State: spec.Cancelled}, {ID: 1, State: spec.Cancelled}}},
	}}
	c := Cause{Replica: 1, Rank: 3, What: "RuntimeError: boom"}
	c.Apply(st, "trainer")
	if st.Msg != "rank 3: RuntimeError: boom" {
		t.Errorf("message %q", st.Msg)
	}
	if spec.ErrorMessage(st.StructuredError) != st.Msg {
		t.Errorf("structured error %q, want the error file of %q", st.StructuredError, st.Msg)
	}
	node := st.Roles[1].Replicas[1]
	if node.State != spec.Failed || node.StructuredError != st.StructuredError {
		t.Errorf("trainer/1: %s %q, want FAILED with the app's error", node.State, node.StructuredError)
	}
	for _, r := range []spec.ReplicaStatus{st.Roles[0].Replicas[0], st.Roles[1].Replicas[0]} {
		if r.State != spec.Cancelled || r.StructuredError != "" {
			t.Errorf("replica %d: %s %q, want CANCELLED and no error", r.ID, r.State, r.StructuredError)
		}
	}
}
