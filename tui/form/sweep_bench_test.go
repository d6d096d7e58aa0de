package form

import (
	"testing"

	"github.com/wick-dev/wick/components"
)

// BenchmarkSweptFieldCheck is the check of a swept int argument of 10,000 values (a
// range), done at each key typed in it, and its type label, drawn at each frame.
func BenchmarkSweptFieldCheck(b *testing.B) {
	p := &components.Param{Name: "n", Type: components.Int, Default: "1"}
	f := paramField(p, "", false)
	f.swept = true
	f.input.SetValue("1..10000")
	b.Run("check", func(b *testing.B) {
		for range b.N {
			f.check()
		}
		if f.err != "" {
			b.Fatal(f.err)
		}
	})
	b.Run("label", func(b *testing.B) {
		for range b.N {
			_ = f.typeLabel()
		}
	})
}
