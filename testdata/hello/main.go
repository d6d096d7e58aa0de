// Command hello prints a line: the start-up of any Go program, built as wick is,
// which tui/cli's BenchmarkStartup times `wick --version` beside.
package main

import "os"

func main() { _, _ = os.Stdout.WriteString("hello\n") }
