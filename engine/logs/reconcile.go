package logs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// reconcileBuf is the buffer reconcile reads stream files with: the bytes a dead
// writer left unindexed are at most a few reads' worth, except for a long line that
// was spilled to disk, which is streamed through it.
const reconcileBuf = 64 << 10

// reconcile brings combined.log and the index of a writer that died (kill -9) in line
// with stdout.log and stderr.log, which it wrote first: bytes of combined.log that
// no record describes are cut; bytes of a stream file that no record covers are
// appended to combined.log as one run of whole lines and, for a last line without
// a newline, one partial run, each with a record. Every reader then sees the same
// lines, and a torn last line once, as a partial line. idx is the index, opened for
// appending, whose complete records end at size.
func reconcile(dir string, idx *os.File, size int64) error {
	var (
		last    record
		hasLast bool
		lastOf  [3]*record // per stream code
	)
	b := make([]byte, recordBatch*recordSize)
	for end := size/recordSize - 1; end > 0 && (lastOf[codeStdout] == nil || lastOf[codeStderr] == nil); {
		start := max(end-recordBatch, 0)
		chunk := b[:(end-start)*recordSize]
		if _, err := idx.ReadAt(chunk, (start+1)*recordSize); err != nil {
			return err
		}
		for i := end - 1; i >= start; i-- {
			r := decodeRecord(chunk[(i-start)*recordSize:])
			if r.end() {
				continue
			}
			if !hasLast {
				last, hasLast = r, true
			}
			if (r.stream == codeStdout || r.stream == codeStderr) && lastOf[r.stream] == nil {
				rr := r
				lastOf[r.stream] = &rr
			}
		}
		end = start
	}
	comb, err := os.OpenFile(filepath.Join(dir, CombinedFile), os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer comb.Close()
	st, err := comb.Stat()
	if err != nil {
		return err
	}
	combEnd := int64(0)
	if hasLast {
		combEnd = last.combOff + last.combLen() // with the newline after a partial run
	}
	switch {
	case st.Size() > combEnd:
		if err := comb.Truncate(combEnd); err != nil {
			return err
		}
	case st.Size() < combEnd:
		// A partial run whose newline did not make it (or an index from a writer
		// that wrote none): the file ends at the run.
		combEnd = st.Size()
	}
	t := last.time
	for _, code := range []uint8{codeStdout, codeStderr} {
		covered := int64(0)
		attempt := last.attempt
		if r := lastOf[code]; r != nil {
			covered, attempt = r.streamOff+r.length, r.attempt
		}
		f, err := os.OpenFile(filepath.Join(dir, streamFileName(code)), os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		fst, err := f.Stat()
		if err != nil || fst.Size() <= covered {
			f.Close()
			if err != nil {
				return err
			}
			continue
		}
		t = max(t, fst.ModTime().UnixNano())
		runs, err := leftoverRuns(f, covered, fst.Size())
		if err == nil {
			for _, r := range runs {
				r.time, r.attempt, r.stream, r.combOff = t, attempt, code, combEnd
				if combEnd, err = appendRun(comb, idx, f, r, combEnd); err != nil {
					break
				}
			}
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// leftoverRuns splits bytes [from, to) of a stream file into a run of whole lines and
// a partial run for what follows the last newline.
func leftoverRuns(f *os.File, from, to int64) ([]record, error) {
	buf := make([]byte, reconcileBuf)
	lastNL, lines := int64(-1), int64(0)
	for off := from; off < to; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		if n == 0 && err != nil {
			return nil, err
		}
		c := buf[:n]
		if i := bytes.LastIndexByte(c, '\n'); i >= 0 {
			lastNL = off + int64(i)
			lines += int64(bytes.Count(c, []byte{'\n'}))
		}
		off += int64(n)
	}
	var runs []record
	if lastNL >= 0 {
		runs = append(runs, record{streamOff: from, length: lastNL + 1 - from, lines: lines})
		from = lastNL + 1
	}
	if from < to {
		runs = append(runs, record{streamOff: from, length: to - from, lines: 1, flags: flagPartial})
	}
	return runs, nil
}

// appendRun copies run r of stream file f to combined.log at off, with the newline
// after a partial run, and appends its record to the index. It returns where
// combined.log ends now.
func appendRun(comb, idx, f *os.File, r record, off int64) (int64, error) {
	w := io.NewOffsetWriter(comb, off)
	if _, err := io.Copy(w, io.NewSectionReader(f, r.streamOff, r.length)); err != nil {
		return off, fmt.Errorf("write %s: %w", comb.Name(), err)
	}
	end := off + r.length
	if r.partial() {
		if _, err := comb.WriteAt([]byte{'\n'}, end); err != nil {
			return off, fmt.Errorf("write %s: %w", comb.Name(), err)
		}
		end++
	}
	var b [recordSize]byte
	r.encode(&b)
	if _, err := idx.Write(b[:]); err != nil {
		return off, fmt.Errorf("write %s: %w", idx.Name(), err)
	}
	return end, nil
}
