package render

import (
	"github.com/wick-dev/wick/engine/metrics"

	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// node is a JSON value with object keys kept in the order they were written, so that
// structs print in field order.
type node struct {
	scalar string // for scalars: the text to print
	isStr  bool
	keys   []string
	vals   []*node
	items  []*node
	kind   byte // 's' scalar, 'o' object, 'a' array
}

// toNode marshals v to JSON and reads it back as an ordered tree, so that the text and
// the --json renderings come from the same marshaling (names, omitted fields).
func toNode(v any) (*node, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return readNode(dec)
}

func readNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			n := &node{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, kt.(string))
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		}
		n := &node{kind: 'a'}
		for dec.More() {
			v, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
		_, err := dec.Token()
		return n, err
	case string:
		return &node{kind: 's', scalar: t, isStr: true}, nil
	case nil:
		return &node{kind: 's', scalar: "null"}, nil
	default:
		return &node{kind: 's', scalar: fmt.Sprint(t)}, nil
	}
}

// TreeOptions shape a tree rendering.
type TreeOptions struct {
	// MaskSecrets hides the values of env variables whose names look secret (see
	// IsSecretName).
	MaskSecrets bool
	// Alarms are the app's metric alarms, listed by Describe under ALARMS after the
	// status (nil: not read; none found lists nothing).
	Alarms *metrics.Found
	// Width, when not 0, is the width Describe fits the replica table into (the
	// UI's describe view); `wick describe` prints it whole.
	Width int
}

// Tree writes v (anything JSON-marshalable) as an indented, aligned, YAML-like tree.
func Tree(w io.Writer, v any, st Styler, opts TreeOptions) error {
	n, err := toNode(v)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	var b strings.Builder
	writeNode(&b, n, 0, st, opts, false, false)
	_, err = io.WriteString(w, b.String())
	return err
}

// inlineWidth is the widest list of scalars printed on one line.
const inlineWidth = 72

// writeNode writes n; masked hides every value below, env says n is an env object.
func writeNode(b *strings.Builder, n *node, indent int, st Styler, opts TreeOptions, masked, env bool) {
	pad := strings.Repeat(" ", indent)
	switch n.kind {
	case 'o':
		width := 0
		for i, k := range n.keys {
			n.keys[i] = Escape(k) // a key from a file or label must not drive the terminal
			k = n.keys[i]
			if n.vals[i].kind == 's' || inlineable(n.vals[i]) {
				width = max(width, utf8.RuneCountInString(k))
			}
		}
		for i, k := range n.keys {
			v := n.vals[i]
			secret := opts.MaskSecrets && env && IsSecretName(k)
			b.WriteString(pad)
			switch {
			case v.kind == 's' || inlineable(v):
				b.WriteString(st.Key(k + ":"))
				b.WriteString(strings.Repeat(" ", width-utf8.RuneCountInString(k)+1))
				b.WriteString(inline(v, st, secret || masked, opts.MaskSecrets))
				b.WriteByte('\n')
			default:
				b.WriteString(st.Key(k + ":"))
				b.WriteByte('\n')
				writeNode(b, v, indent+2, st, opts, secret || masked, isEnvKey(k))
			}
		}
	case 'a':
		for _, item := range n.items {
			if item.kind == 's' || inlineable(item) {
				b.WriteString(pad + "- " + inline(item, st, masked, opts.MaskSecrets) + "\n")
				continue
			}
			var sub strings.Builder
			writeNode(&sub, item, indent+2, st, opts, masked, false)
			s := sub.String()
			// Replace the first line's indentation with the "- " marker.
			b.WriteString(pad + "- " + strings.TrimPrefix(s, pad+"  "))
		}
	default:
		b.WriteString(pad + inline(n, st, masked, opts.MaskSecrets) + "\n")
	}
}

// inlineable reports whether a container prints on one line: empty, or a short list of
// scalars.
func inlineable(n *node) bool {
	switch n.kind {
	case 'o':
		return len(n.keys) == 0
	case 'a':
		if len(n.items) == 0 {
			return true
		}
		width := 0
		for _, it := range n.items {
			if it.kind != 's' {
				return false
			}
			width += len(scalarText(it)) + 2
		}
		return width <= inlineWidth
	}
	return false
}

// inline renders n on one line: masked hides it whole, scrub masks the secrets its
// strings hold (MaskValue).
func inline(n *node, st Styler, masked, scrub bool) string {
	switch n.kind {
	case 'o':
		return st.Dim("{}")
	case 'a':
		parts := make([]string, len(n.items))
		for i, it := range n.items {
			if it.isStr && !masked && strings.Contains(it.scalar, " ") {
				// In a one-line list a space would read as two items.
				parts[i] = st.Value(strconv.Quote(scrubbed(it.scalar, scrub)))
				continue
			}
			parts[i] = inline(it, st, masked, scrub)
		}
		return st.Dim("[") + strings.Join(parts, st.Dim(", ")) + st.Dim("]")
	}
	if masked {
		return st.Dim(Masked)
	}
	if n.isStr && scrub {
		return st.Value(Quote(MaskValue("", n.scalar)))
	}
	return st.Value(scalarText(n))
}

// scrubbed is s with its secrets masked when scrub.
func scrubbed(s string, scrub bool) string {
	if scrub {
		return MaskValue("", s)
	}
	return s
}

// scalarText quotes strings only where a plain rendering would be ambiguous.
func scalarText(n *node) string {
	if !n.isStr {
		return n.scalar
	}
	return Quote(n.scalar)
}

// Quote returns s as is when it reads unambiguously, and Go-quoted otherwise (empty,
// spaces at the ends, commas, brackets, quotes or control characters).
func Quote(s string) string {
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s, ",[]{}\"'#\n\r\t\\") || s == "null" || s == "true" || s == "false" {
		return strconv.Quote(s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}
