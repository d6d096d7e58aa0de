package viewtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Golden compares a screen with an annotated golden file, written by hand from the
// code that draws the screen: each of its rows is a line "|ROW" (the row as the
// screen shows it, trailing spaces cut), and the lines starting with "#" say what the
// rows below them mean and why they are so. Other lines are blank or an error.
//
// There is no flag to rewrite the file from what is drawn: a golden pinned from the
// output would hold whatever the code does, right or wrong. On a difference the test
// fails showing the rows that differ and the screen in the file's form, for a human to
// check against the code and the notes before editing the file.
func Golden(t testing.TB, path, screen string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden screen: %v", err)
	}
	var want []string
	for i, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "|"):
			want = append(want, strings.TrimRight(l[1:], " "))
		case l == "", strings.HasPrefix(l, "#"):
		default:
			t.Fatalf("%s:%d: a line is a row (|ROW), a note (# ...) or blank: %q", path, i+1, l)
		}
	}
	got := strings.Split(screen, "\n")
	for i := range got {
		got[i] = strings.TrimRight(got[i], " ")
	}
	// Blank rows at the bottom of a screen are no row of the file's.
	for len(got) > 0 && got[len(got)-1] == "" && len(got) > len(want) {
		got = got[:len(got)-1]
	}
	var diff strings.Builder
	for i := range max(len(got), len(want)) {
		g, w := row(got, i), row(want, i)
		if g != w {
			fmt.Fprintf(&diff, "row %d:\n  want |%s\n  got  |%s\n", i+1, w, g)
		}
	}
	if diff.Len() == 0 {
		return
	}
	var as strings.Builder
	for _, g := range got {
		as.WriteString("|" + g + "\n")
	}
	t.Errorf("%s: the screen differs from the golden rows (check against the code and the file's notes; the file is edited by hand):\n%s\nthe screen, as rows:\n%s", path, diff.String(), as.String())
}

func row(rows []string, i int) string {
	if i < len(rows) {
		return rows[i]
	}
	return "(none)"
}
