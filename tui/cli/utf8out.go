package cli

import (
	"io"
	"unicode/utf8"
)

// validUTF8 is the text output of `wick log`: bytes that are not UTF-8 are written as
// U+FFFD, one per byte, as TorchX's log_lines gives them (it reads the files with
// errors="replace"), so that a binary byte in a log reaches neither the terminal nor
// a pipe raw. A sequence cut between two writes is held until the next one; flush
// writes what is held at the end. --raw and --json do not use it (JSON escapes
// invalid bytes as \ufffd itself).
type validUTF8 struct {
	w       io.Writer
	pending []byte // the start of a sequence cut by the end of a write (< 4 bytes)
	out     []byte
}

func (v *validUTF8) Write(p []byte) (int, error) {
	n := len(p)
	data := p
	if len(v.pending) > 0 {
		data = append(append([]byte(nil), v.pending...), p...)
		v.pending = v.pending[:0]
	}
	// Hold back a sequence that the next write may complete.
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	v.pending = append(v.pending, data[cut:]...)
	body := data[:cut]
	if utf8.Valid(body) {
		_, err := v.w.Write(body)
		return n, err
	}
	v.out = v.out[:0]
	for len(body) > 0 {
		r, size := utf8.DecodeRune(body)
		if r == utf8.RuneError && size == 1 {
			v.out = utf8.AppendRune(v.out, utf8.RuneError)
		} else {
			v.out = append(v.out, body[:size]...)
		}
		body = body[size:]
	}
	_, err := v.w.Write(v.out)
	return n, err
}

// flush writes a sequence still held (never completed) as U+FFFD per byte.
func (v *validUTF8) flush() error {
	if len(v.pending) == 0 {
		return nil
	}
	out := make([]byte, 0, 3*len(v.pending))
	for range v.pending {
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	v.pending = v.pending[:0]
	_, err := v.w.Write(out)
	return err
}
