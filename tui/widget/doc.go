// Package widget is the kit wick's views draw with: a one-line text Input, a Pager over
// pre-rendered lines, a Table that measures once and draws any window, a list Cursor,
// the Fuzzy matcher of the picker and the palette, and layout helpers that cut and pad
// to exact sizes. It knows nothing of views, actions or the engine.
package widget
