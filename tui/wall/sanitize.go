package wall

import "github.com/wick-dev/wick/tui/render"

// maxLineBytes bounds the text of one line the wall keeps and draws. A 1 MB line (a
// JSON dump, a progress bar redrawn for an hour without a newline) would otherwise
// cost a megabyte per frame to measure and wrap; 16 KB is a couple hundred rows of a
// wide pane, more than anyone reads in place. The files keep the whole line.
const maxLineBytes = 16 << 10

// Sanitize makes a log line safe to draw in a pane (see render.Sanitize), cut at
// maxLineBytes.
func Sanitize(s string) string { return render.Sanitize(s, maxLineBytes) }

// searchable is the text of a line as search sees it: sanitized as Sanitize does, but
// whole, so that a match past the cut of a long line is found.
func searchable(s string) string { return render.Sanitize(s, max(len(s), maxLineBytes)) }
