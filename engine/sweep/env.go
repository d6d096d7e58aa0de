package sweep

import (
	"slices"
	"strings"
)

// volatileEnv are variables a shell changes on its own: a resume from another shell
// that differs only in these changes nothing an app would see as its environment.
var volatileEnv = []string{"PWD", "OLDPWD", "SHLVL", "_", "WICK_HOME"}

// RecordEnv is environ as a sweep records it (Sweep.Env): without the volatile
// variables of a shell and those named in drop (the queue's own).
func RecordEnv(environ []string, drop ...string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(volatileEnv, k) && !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}

// EnvChanges names the variables whose values differ between the environment recorded
// with a sweep and environ (set in one only, or to another value), sorted; the volatile
// ones of a shell are left out.
func EnvChanges(recorded, environ []string) []string {
	toMap := func(env []string) map[string]string {
		m := make(map[string]string, len(env))
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if !slices.Contains(volatileEnv, k) {
				m[k] = v
			}
		}
		return m
	}
	a, b := toMap(recorded), toMap(environ)
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
