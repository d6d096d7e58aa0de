package logs

import "github.com/wick-dev/wick/engine/sched"

// A Tap sees the complete lines of one stream of a replica as Copy records them:
// lines is one or more whole lines (each ending with its newline, but a final line
// without one, which the stream's end delivers), read from the attempt given.
// It returns false to be removed. It is called from Copy's goroutine and must not
// block or keep lines, whose buffer is reused.
type Tap func(attempt int, lines []byte) bool

// Tap makes Copy hand stream s's lines to fn from now on, in the order read,
// replacing any earlier tap of s; nil removes it. The supervisor uses it to read
// the few lines that say a node's fate (a rendezvous port it could not bind) as
// they arrive, without reading the logs back. A line longer than Copy buffers is
// handed over in part: its last bytes only.
func (w *Writer) Tap(s sched.Stream, fn Tap) {
	code := streamCode(s)
	if fn == nil {
		w.taps[code].Store(nil)
		return
	}
	w.taps[code].Store(&fn)
}

// tap hands lines of stream code to its tap, if any, and removes a tap that is done.
func (w *Writer) tap(code uint8, attempt int, lines []byte) {
	p := w.taps[code].Load()
	if p != nil && len(lines) > 0 && !(*p)(attempt, lines) {
		w.taps[code].CompareAndSwap(p, nil)
	}
}
