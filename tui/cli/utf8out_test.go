package cli

import (
	"bytes"
	"testing"
)

// TestValidUTF8: bytes that are not UTF-8 reach the text output of wick log as U+FFFD,
// one per byte (Python's errors="replace", which TorchX's log reading uses, gives
// "\ufffd\ufffd" for b"\xff\xfe"); valid text, a multi-byte rune cut between two
// writes included, passes as it is.
func TestValidUTF8(t *testing.T) {
	for _, tc := range []struct {
		writes [][]byte
		want   string
	}{
		{[][]byte{[]byte("loss=0.5 \xff\xfe ok\n")}, "loss=0.5 \ufffd\ufffd ok\n"},
		{[][]byte{[]byte("caf\xc3"), []byte("\xa9 \xe2\x82"), []byte("\xac\n")}, "café €\n"},
		{[][]byte{[]byte("a\xc3")}, "a\ufffd"},                 // cut and never completed: flush
		{[][]byte{[]byte("\xc3("), []byte("\n")}, "\ufffd(\n"}, // an invalid continuation
		{[][]byte{[]byte("plain ascii\n")}, "plain ascii\n"},
	} {
		var out bytes.Buffer
		v := &validUTF8{w: &out}
		for _, w := range tc.writes {
			if n, err := v.Write(w); err != nil || n != len(w) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if err := v.flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("%q: got %q, want %q", tc.writes, out.String(), tc.want)
		}
	}
}
