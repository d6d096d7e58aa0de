// Package render turns engine values (dry runs, statuses, app lists, log lines) into
// text. The UI views and the one-shot verbs print through the same functions, so the
// preview in the UI and `wick run --dryrun` are one rendering.
package render

import "github.com/wick-dev/wick/engine/spec"

// Styler colors the parts of a rendering. Plain is the no-color styler; themes provide
// colored ones.
type Styler interface {
	Header(s string) string
	Key(s string) string
	Value(s string) string
	Dim(s string) string
	State(st spec.AppState, s string) string
	// Prefix colors a "role/k" log prefix; i picks a color from a rotation.
	Prefix(i int, s string) string
	Stderr(s string) string
	Error(s string) string
}

// Plain is the Styler that adds no color.
type Plain struct{}

func (Plain) Header(s string) string                 { return s }
func (Plain) Key(s string) string                    { return s }
func (Plain) Value(s string) string                  { return s }
func (Plain) Dim(s string) string                    { return s }
func (Plain) State(_ spec.AppState, s string) string { return s }
func (Plain) Prefix(_ int, s string) string          { return s }
func (Plain) Stderr(s string) string                 { return s }
func (Plain) Error(s string) string                  { return s }
