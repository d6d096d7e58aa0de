package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
)

// TestBookLeavesAWatchedAppAlone: while a view reads an app's lines itself (the log
// wall), the Book reads none of them; once it lets go, the Book reads the app and
// finds its alarm.
func TestBookLeavesAWatchedAppAlone(t *testing.T) {
	home := t.TempDir()
	r, h := launch(t, home, shRole("tr", 1, `echo "step 1 loss 2.5"; echo "step 2 loss nan"`))
	if st, err := r.Wait(context.Background(), h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("app: %v %v", st, err)
	}
	src := &counting{r: r}
	book := metrics.NewBook(src, metrics.DefaultConfig(), "")
	release := book.Watch(h)
	second := book.Watch(h) // two walls of the same app
	f, err := book.Scan(context.Background(), h, describe(t, r, h))
	if err != nil || f.N != 0 {
		t.Fatalf("scan of a watched app: %+v %v, want nothing found", f, err)
	}
	if n, since := src.reset(); n != 0 || len(since) != 0 {
		t.Fatalf("a watched app was read: %d lines, %d readers", n, len(since))
	}
	release()
	release() // a second call changes nothing
	if _, err := book.Scan(context.Background(), h, describe(t, r, h)); err != nil {
		t.Fatal(err)
	}
	if n, _ := src.reset(); n != 0 {
		t.Fatalf("the app was read while another view still watched it: %d lines", n)
	}
	second()
	f, err = book.Scan(context.Background(), h, describe(t, r, h))
	if err != nil || f.N != 1 || f.Lines[0] != "loss on tr/0 is NaN at step 2" {
		t.Fatalf("after the views let go: %+v %v, want the NaN at step 2", f, err)
	}
	if n, _ := src.reset(); n != 2 {
		t.Errorf("read %d lines, want the 2 of the app", n)
	}
	var none *metrics.Book
	none.Watch(h)() // a nil Book watches nothing
}
