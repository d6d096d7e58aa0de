package local

import (
	"bytes"
	"errors"
)

// errSkim says that a state file is not as skimming expects it: the caller reads
// the file whole instead, which says what is wrong with it if anything is.
var errSkim = errors.New("not skimmed")

// skimmer walks the JSON of an app's state files without decoding it, to find the
// few values a reader of some replicas needs (see readReplicas): a thousand-replica
// app's files are 2 MB, which encoding/json decodes in tens of milliseconds, and
// which skipping costs about one. It checks only what it walks through: brackets
// that match, strings that end. What it hands on is decoded by encoding/json.
type skimmer struct {
	b []byte
	i int
}

func (s *skimmer) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *skimmer) peek() byte {
	s.ws()
	if s.i == len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// expect consumes c, after white space.
func (s *skimmer) expect(c byte) error {
	if s.peek() != c {
		return errSkim
	}
	s.i++
	return nil
}

// str skips a string, its opening quote at s.i, and returns its content as written
// (escapes not undone).
func (s *skimmer) str() ([]byte, error) {
	start := s.i + 1
	j := start
	for {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, errSkim
		}
		j += k
		// The quote is escaped if an odd number of backslashes precede it.
		n := 0
		for j-1-n >= start && s.b[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			s.i = j + 1
			return s.b[start:j], nil
		}
		j++
	}
}

// value skips the next value and returns it as written.
func (s *skimmer) value() ([]byte, error) {
	s.ws()
	start := s.i
	if s.i == len(s.b) {
		return nil, errSkim
	}
	switch s.b[s.i] {
	case '"':
		if _, err := s.str(); err != nil {
			return nil, err
		}
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, err := s.str(); err != nil {
					return nil, err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return s.b[start:s.i], nil
			}
		}
		return nil, errSkim
	default: // a number, true, false or null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.b[start:s.i], nil
			}
			s.i++
		}
	}
	return s.b[start:s.i], nil
}

// object walks the members of the object at s.i: member is called with each key (as
// written) and must consume its value.
func (s *skimmer) object(member func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return errSkim
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(string(key)); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSkim
		}
	}
}

// array walks the elements of the array at s.i: elem is called with each one's index
// and must consume it.
func (s *skimmer) array(elem func(i int) error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSkim
		}
	}
}

// skip consumes a value.
func (s *skimmer) skip() error {
	_, err := s.value()
	return err
}
