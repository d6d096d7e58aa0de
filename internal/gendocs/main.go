// Command gendocs writes the documents generated from the code: docs/keys.md, from
// the UI's action table. `make docs` runs it from the repository's root; a test in
// package tui fails when the file is stale.
package main

import (
	"fmt"
	"os"

	"github.com/wick-dev/wick/tui"
)

func main() {
	if err := os.WriteFile(tui.KeysDocPath, tui.KeysDoc(), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
}
