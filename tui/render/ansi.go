package render

import (
	"github.com/wick-dev/wick/engine/spec"
)

// ANSI is the Styler of the one-shot verbs on a terminal: the 16 basic colors, which
// every terminal theme maps to something readable.
type ANSI struct{}

func sgr(code, s string) string { return "\x1b[" + code + "m" + s + "\x1b[0m" }

func (ANSI) Header(s string) string { return sgr("1", s) }
func (ANSI) Key(s string) string    { return sgr("36", s) }
func (ANSI) Value(s string) string  { return s }
func (ANSI) Dim(s string) string    { return sgr("2", s) }
func (ANSI) Stderr(s string) string { return sgr("33", s) }
func (ANSI) Error(s string) string  { return sgr("31", s) }

// State colors a state: green for success, red for failure, yellow for cancelled,
// blue while running.
func (ANSI) State(st spec.AppState, s string) string {
	switch st {
	case spec.Succeeded:
		return sgr("32", s)
	case spec.Failed:
		return sgr("31;1", s)
	case spec.Cancelled:
		return sgr("33", s)
	case spec.Running:
		return sgr("34;1", s)
	}
	return sgr("2", s)
}

var prefixColors = [...]string{"32", "35", "36", "34", "33", "92", "95", "96", "94", "93"}

// Prefix colors a log prefix, rotating through colors by i.
func (ANSI) Prefix(i int, s string) string {
	return sgr(prefixColors[(i%len(prefixColors)+len(prefixColors))%len(prefixColors)], s)
}
