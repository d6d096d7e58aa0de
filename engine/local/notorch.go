package local

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/spec"
)

// noTorchError is what Python prints when the interpreter that ran has no torch.
const noTorchError = "ModuleNotFoundError: No module named 'torch'"

// shebangMax bounds what is read of a program's first line to find its interpreter.
const shebangMax = 256

// noTorchRootCause replaces the app's error ("trainer/0 failed with exit code 1") by
// noTorchCause's, when the replica it names failed for want of torch. It runs once
// the replicas' output is recorded, and only when no error file gave a root cause.
func (sv *supervisor) noTorchRootCause() {
	for _, r := range sv.all {
		if r.st.State != spec.Failed || !strings.HasPrefix(sv.st.Msg, r.name()+" failed") {
			continue
		}
		if msg := noTorchCause(r); msg != "" {
			sv.st.Msg = msg
			if sv.st.StructuredError == "" || !strings.HasPrefix(sv.st.StructuredError, "{") {
				sv.st.StructuredError = msg
			}
			sv.dirty = true
		}
		return
	}
}

// noTorchCause explains a replica that failed because the python3 that ran it has no
// torch (a pyenv shim or a virtualenv first on PATH, where torchrun's workers or the
// script fail deep inside): it names that interpreter. "" when the replica's stderr
// does not end with that error.
func noTorchCause(r *replica) string {
	if !tailContains(filepath.Join(r.req.LogDir, logs.StderrFile), noTorchError) {
		return ""
	}
	py := ""
	if len(r.req.Argv) > 0 {
		// torchrun (or any Python program) runs with the interpreter of its #! line.
		if prog, err := lookPath(r.req.Argv[0], r.req.Env["PATH"], r.req.Cwd); err == nil {
			py = shebangPython(prog, r.req.Env["PATH"], r.req.Cwd)
			if py == "" && isPython(filepath.Base(prog)) {
				py = prog
			}
		}
	}
	if py == "" {
		if p, err := lookPath("python3", r.req.Env["PATH"], r.req.Cwd); err == nil {
			py = p
		}
	}
	if py == "" {
		return fmt.Sprintf("%s failed: %s: no python3 with torch on the replica's PATH", r.name(), noTorchError)
	}
	return fmt.Sprintf("%s failed: %s: the python3 that ran (%s) has no torch; put one that has it first on PATH (%s -c 'import torch' checks)", r.name(), noTorchError, py, py)
}

// isPython reports whether a program's name is a Python interpreter's.
func isPython(name string) bool {
	return name == "python" || name == "python3" || len(name) > 7 && name[:7] == "python3"
}

// shebangPython is the Python interpreter a script's #! line names (for
// "#!/usr/bin/env python3", the python3 found on PATH), or "".
func shebangPython(prog, pathEnv, dir string) string {
	f, err := os.Open(prog)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, shebangMax))
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) {
		return ""
	}
	fields := bytes.Fields(line[2:])
	if len(fields) == 0 {
		return ""
	}
	interp := string(fields[0])
	if filepath.Base(interp) == "env" && len(fields) > 1 {
		p, err := lookPath(string(fields[1]), pathEnv, dir)
		if err != nil {
			return ""
		}
		interp = p
	}
	if !isPython(filepath.Base(interp)) {
		return ""
	}
	return interp
}
