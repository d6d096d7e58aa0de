package metrics

import "encoding/binary"

// wordTable says what a word written before a value is, in one lookup: a configured
// word (a step key, an ignored name or a metric with its interned name), a stop word,
// a qualifier, or nothing known. The extractor looks a word up for every value it
// reads, and a Go map lookup cost about as much as reading the value. This is an
// open-addressing hash table keyed by the lowercased word, whose first eight bytes
// are taken as a number while the word is lowercased (appendLower): that number and
// the length are the hash, and comparing them settles most lookups at the first slot
// probed. Read-only once built.
type wordTable struct {
	slots  []wordSlot // a power of two, at most a quarter full
	shift  uint       // 64 - log2(len(slots)): the hash's top bits index the slots
	maxLen int        // the longest key: a longer word is nothing known
}

type wordSlot struct {
	head uint64 // the key's first eight bytes
	key  string // "" for an empty slot
	info wordInfo
}

type wordKind uint8

const (
	kindIgnore wordKind = iota
	kindStep
	kindMetric
)

// wordFlags say which of the table's sets a word is in.
type wordFlags uint8

const (
	// flagConfigured marks the words of the configuration: kind says what they are.
	flagConfigured wordFlags = 1 << iota
	// flagStop marks stopWords.
	flagStop
	// flagQualifier marks qualifiers.
	flagQualifier
)

type wordInfo struct {
	name  string // the interned name of a metric (kindMetric)
	kind  wordKind
	flags wordFlags
}

// newWordTable builds the table of the configured words, the stop words and the
// qualifiers.
func newWordTable(configured map[string]wordInfo) wordTable {
	all := make(map[string]wordInfo, len(configured)+len(stopWords)+len(qualifiers))
	for k, w := range configured {
		w.flags |= flagConfigured
		all[k] = w
	}
	for _, k := range stopWords {
		w := all[k]
		w.flags |= flagStop
		all[k] = w
	}
	for _, k := range qualifiers {
		w := all[k]
		w.flags |= flagQualifier
		all[k] = w
	}
	bits := uint(4)
	for 1<<bits < 4*len(all) {
		bits++
	}
	t := wordTable{slots: make([]wordSlot, 1<<bits), shift: 64 - bits}
	mask := uint64(len(t.slots) - 1)
	for k, w := range all {
		if k == "" {
			continue // no word is empty: it could not be found
		}
		head := headOf([]byte(k))
		i := hashWord(head, len(k)) >> t.shift
		for t.slots[i].key != "" {
			i = (i + 1) & mask
		}
		t.slots[i] = wordSlot{head, k, w}
		t.maxLen = max(t.maxLen, len(k))
	}
	return t
}

// headOf returns the first eight bytes of w (zeros past its end) as a number.
func headOf(w []byte) uint64 {
	if len(w) >= 8 {
		return binary.LittleEndian.Uint64(w) // one load: most names are this long
	}
	var h uint64
	for i := range len(w) {
		h |= uint64(w[i]) << (8 * i)
	}
	return h
}

// hashWord mixes a word's head and length: the words of logs mostly differ there, and
// the comparison of the rest settles the others.
func hashWord(head uint64, n int) uint64 {
	return (head ^ uint64(n)<<58) * 0x9e3779b97f4a7c15
}

// lookup returns what the table knows of a lowercased word whose head is head (the
// zero wordInfo when nothing).
func (t *wordTable) lookup(w []byte, head uint64) wordInfo {
	if len(w) == 0 || len(w) > t.maxLen {
		return wordInfo{}
	}
	mask := uint64(len(t.slots) - 1)
	for i := hashWord(head, len(w)) >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.head == head && len(s.key) == len(w) && (len(w) <= 8 || s.key[8:] == string(w[8:])) {
			return s.info
		}
		if s.key == "" {
			return wordInfo{}
		}
	}
}
