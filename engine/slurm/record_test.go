package slurm

import (
	"os"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestEndedRecord: whether a job has ended for good is read from the record file's
// first key, as saveRecord writes it, without decoding the rest; a record that does
// not say so first (written before the field, damaged, or not a record) is not ended.
func TestEndedRecord(t *testing.T) {
	s, err := New(sched.Config{Session: "t", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sc := s.(*Scheduler)
	app := &spec.AppDef{Name: "a", Roles: []spec.Role{spec.NewRole("r", "true", spec.Unknown)}}
	for _, c := range []struct {
		ended bool
		state spec.AppState
		want  bool
	}{{true, spec.Failed, true}, {false, spec.Failed, false}, {true, spec.Running, false}} {
		rec := &record{JobID: "7", App: app, Ended: c.ended, Last: &spec.AppStatus{State: c.state}}
		if err := sc.saveRecord(rec); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(sc.recordPath("7"))
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeRecord("7", b)
		if err != nil {
			t.Fatal(err)
		}
		if endedRecord(b) != c.ended || back.ended() != c.want {
			t.Errorf("Ended %v, last %s: endedRecord %v, ended() %v; want %v, %v", c.ended, c.state, endedRecord(b), back.ended(), c.ended, c.want)
		}
	}
	for _, b := range []string{
		`{"job_id":"7","ended":true}`, // written before Ended came first: asked again, then rewritten
		`{"ended":"true"}`, `{"ended":1}`, `["ended",true]`, `{"ended"`, ``, `nonsense`,
	} {
		if endedRecord([]byte(b)) {
			t.Errorf("endedRecord(%q) = true", b)
		}
	}
}
