package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/render"
)

// writeRun writes the lines of a run (each ended by a newline but a partial last one)
// as writeText writes them one by one, building the output in one buffer.
func (p *linePrinter) writeRun(prefix, text string) error {
	out := p.scratch[:0]
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if prefix != "" && strings.IndexByte(line, '\r') >= 0 {
			p.w.Write(out)
			out = out[:0]
			p.writeText(prefix, line)
			continue
		}
		out = append(out, prefix...)
		out = append(out, line...)
		out = append(out, '\n')
	}
	_, err := p.w.Write(out)
	p.scratch = out[:0]
	return err
}

// linePrinter writes log lines as `role/k text`, with optional timestamps, or as JSON.
type linePrinter struct {
	w          *bufio.Writer
	st         interface{ Prefix(int, string) string }
	timestamps bool
	asJSON     bool
	prefix     bool
	index      map[string]int
	prefixes   map[replicaRef]string // styled "role/k " by replica, made once
	scratch    []byte                // writeRun's output buffer, reused
	// sanitize drops the escape sequences other than SGR (for a terminal).
	sanitize bool
}

// prefixOf returns the styled "role/k " prefix of a replica, or "".
func (p *linePrinter) prefixOf(role string, k int) string {
	if !p.prefix {
		return ""
	}
	ref := replicaRef{role, k}
	if s, ok := p.prefixes[ref]; ok {
		return s
	}
	if p.prefixes == nil {
		p.prefixes = map[replicaRef]string{}
	}
	name := role + "/" + strconv.Itoa(k)
	// The role name comes from the app's state file: escaped as every name is, so that a
	// tampered one cannot drive the terminal (render.Escape).
	s := p.st.Prefix(p.index[name], render.Escape(name)) + " "
	p.prefixes[ref] = s
	return s
}

// rawBlock is the read size of copyRaw.
const rawBlock = 256 << 10

// copyRaw prints a stored log file: as it is when there is no prefix, and otherwise
// with the prefix before each line, building the output in blocks rather than going
// through Line values. The output is what printing the file's lines one by one gives.
func (p *linePrinter) copyRaw(r io.Reader, ref replicaRef) error {
	prefix := p.prefixOf(ref.role, ref.k)
	if prefix == "" {
		return p.copyAsIs(r)
	}
	buf := make([]byte, rawBlock)
	out := make([]byte, 0, 2*rawBlock)
	var carry []byte     // a line begun in an earlier block
	var long *lineStream // a line longer than rawBlock, written as it comes
	for {
		n, err := r.Read(buf)
		block := buf[:n]
		// Progress bars need the per-line treatment of writeText.
		plain := bytes.IndexByte(block, '\r') < 0
		for len(block) > 0 {
			i := bytes.IndexByte(block, '\n')
			if long != nil {
				end := len(block)
				if i >= 0 {
					end = i
				}
				long.write(block[:end])
				if i < 0 {
					break
				}
				long.end()
				long, block = nil, block[i+1:]
				continue
			}
			if i < 0 {
				if len(carry)+len(block) > rawBlock {
					// Memory stays bounded whatever the line's length.
					p.w.Write(out)
					out = out[:0]
					long = p.streamLine(prefix)
					long.write(carry)
					long.write(block)
					carry = carry[:0]
					break
				}
				carry = append(carry, block...)
				break
			}
			line := block[:i]
			block = block[i+1:]
			joined := len(carry) > 0
			if joined {
				line = append(carry, line...)
				carry = carry[:0]
			}
			// A line begun in an earlier block may hold a \r that this block has not.
			if (!plain || joined) && bytes.IndexByte(line, '\r') >= 0 {
				p.w.Write(out)
				out = out[:0]
				p.writeText(prefix, string(line))
				continue
			}
			// Copy by hand: append's checks cost a fifth of the time here.
			need := len(prefix) + len(line) + 1
			if cap(out)-len(out) < need {
				p.w.Write(out)
				out = out[:0]
				if cap(out) < need {
					out = make([]byte, 0, need)
				}
			}
			n := len(out)
			out = out[:n+need]
			copy(out[n+copy(out[n:], prefix):], line)
			out[n+need-1] = '\n'
		}
		if len(out) >= rawBlock {
			p.w.Write(out)
			out = out[:0]
		}
		if err == io.EOF {
			p.w.Write(out)
			if long != nil {
				long.end()
			}
			if len(carry) > 0 {
				p.writeText(prefix, string(carry))
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// print writes one line: as JSON, or after its timestamp and prefix.
func (p *linePrinter) print(l sched.Line) error {
	if p.asJSON {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		p.w.Write(b)
		return p.w.WriteByte('\n')
	}
	prefix := p.prefixOf(l.Role, l.Replica)
	if p.timestamps {
		prefix = sched.Timestamp(l.Time) + " " + prefix
	}
	if p.sanitize {
		text := render.Sanitize(l.Text, 0)
		if l.Cut && !l.Pending {
			text += fmt.Sprintf(" … [line of %d bytes cut; --raw prints it whole]", l.Size)
		}
		return p.writeText(prefix, text)
	}
	if l.Full != nil {
		// A line too long to hold: its bytes as stored, a block at a time.
		ls := p.streamLine(prefix)
		buf := make([]byte, rawBlock)
		for {
			n, err := l.Full.Read(buf)
			ls.write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		return ls.end()
	}
	return p.writeText(prefix, l.Text)
}

// printNamed writes a line whose node's group rank is not known (see rankFilter),
// named by its node and local rank (role/replica:local, as `wick metrics` names it)
// whatever --no-prefix says: without the name it would pass for the asked rank's.
// JSON gives the line with the name as "node".
func (p *linePrinter) printNamed(name string, l sched.Line) error {
	if p.asJSON {
		b, err := json.Marshal(struct {
			sched.Line
			Node string `json:"node"`
		}{l, name})
		if err != nil {
			return err
		}
		p.w.Write(b)
		return p.w.WriteByte('\n')
	}
	prefix := render.Escape(name) + " "
	if p.timestamps {
		prefix = sched.Timestamp(l.Time) + " " + prefix
	}
	_, text, _ := ranks.Parse(l.Text) // the name has its local rank
	if p.sanitize {
		text = render.Sanitize(text, 0)
	}
	if l.Cut {
		text += fmt.Sprintf(" … [line of %d bytes cut]", l.Size)
	}
	return p.writeText(prefix, text)
}

// lineStream writes one line after its prefix as writeText does, a piece at a time,
// for lines too long to hold in memory.
type lineStream struct {
	p       *linePrinter
	prefix  string
	started bool // past the line's leading \r
	crs     int  // \r held back: the line's last one is dropped
}

// streamLine starts a line: its prefix is written at once.
func (p *linePrinter) streamLine(prefix string) *lineStream {
	p.w.WriteString(prefix)
	return &lineStream{p: p, prefix: prefix}
}

func (s *lineStream) write(b []byte) {
	if s.prefix == "" {
		s.p.w.Write(b)
		return
	}
	for len(b) > 0 {
		if !s.started {
			i := 0
			for i < len(b) && b[i] == '\r' {
				i++
			}
			b = b[i:]
			if len(b) == 0 {
				return
			}
			s.started = true
		}
		if b[0] == '\r' {
			s.crs++
			b = b[1:]
			continue
		}
		for ; s.crs > 0; s.crs-- {
			s.p.w.WriteByte('\r')
			s.p.w.WriteString(s.prefix)
		}
		i := bytes.IndexByte(b, '\r')
		if i < 0 {
			i = len(b)
		}
		s.p.w.Write(b[:i])
		b = b[i:]
	}
}

// end ends the line.
func (s *lineStream) end() error {
	for ; s.crs > 1; s.crs-- {
		s.p.w.WriteByte('\r')
		s.p.w.WriteString(s.prefix)
	}
	return s.p.w.WriteByte('\n')
}

// copyAsIs copies a log file unchanged, ending it with a newline if its last line has
// none, as printing its lines would.
func (p *linePrinter) copyAsIs(r io.Reader) error {
	buf := make([]byte, rawBlock)
	last := byte('\n')
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.w.Write(buf[:n])
			last = buf[n-1]
		}
		if err == io.EOF {
			if last != '\n' {
				p.w.WriteByte('\n')
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// writeText writes one line after its prefix.
func (p *linePrinter) writeText(prefix, text string) error {
	// Keep the prefix in place when a progress bar rewrites its line with \r; a
	// leading \r would only print the prefix twice.
	if prefix != "" && strings.Contains(text, "\r") {
		text = strings.TrimLeft(text, "\r")
		text = strings.ReplaceAll(strings.TrimSuffix(text, "\r"), "\r", "\r"+prefix)
	}
	p.w.WriteString(prefix)
	p.w.WriteString(text)
	return p.w.WriteByte('\n')
}
