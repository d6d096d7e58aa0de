package kubernetes

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The summary of node 1 of a real 2x2 run of examples/ddp/train.py (@record) where
// rank 3 raised and rank 2 failed in gloo after it (engine/ranks/testdata, torch
// 1.13's own output): each error file's exception line is its rank's.
func TestSummaryRanks(t *testing.T) {
	b, err := os.ReadFile("../ranks/testdata/record_node1.stderr")
	if err != nil {
		t.Fatal(err)
	}
	sr := summaryRanks{rank: -1}
	for _, l := range strings.Split(string(b), "\n") {
		sr.feed(l)
	}
	sr.end()
	if got := sr.byException["InjectedFailure: rank 3 fails on purpose at step 3"]; !slices.Equal(got, []int{3}) {
		t.Errorf("InjectedFailure's ranks %v, want [3] (all: %v)", got, sr.byException)
	}
	if got := sr.byException["RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4316"]; !slices.Equal(got, []int{2}) {
		t.Errorf("the gloo error's ranks %v, want [2] (all: %v)", got, sr.byException)
	}
}
