package spec

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func FuzzParseHandle(f *testing.F) {
	for _, s := range []string{
		"local_cwd://wick/echo-kf2vb0x9qwm3", "local_docker:///app", "k8s://a/b/c", "x://", "://a/b",
		"local_cwd://wick/../../etc", "local_cwd://wick/a\x00b", "a://b/" + strings.Repeat("x", 200),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHandle(s)
		if err != nil {
			return
		}
		// Every part is a safe name, and the handle formats back to itself.
		// The app id may be kubernetes' NAMESPACE:APP_ID: each of the two is a name.
		for _, part := range append([]string{h.Session}, strings.SplitN(h.AppID, ":", 2)...) {
			if ValidateName("part", part) != nil || strings.Contains(part, "..") && strings.Trim(part, ".") == "" {
				t.Errorf("ParseHandle(%q) = %+v: unsafe part %q", s, h, part)
			}
		}
		again, err := ParseHandle(h.String())
		if err != nil || again != h {
			t.Errorf("round trip of %q: %+v, %v", s, again, err)
		}
	})
}

func FuzzParseLogID(f *testing.F) {
	for _, s := range []string{
		"local_cwd://wick/app", "local_cwd:///app/trainer", "local_cwd://s/app/trainer/0,2,", "local_cwd://s/app/r/-1",
		"local_cwd://s/app/r/0,,1", "x://s/a/r/1/2", "local_cwd://s/app/r/99999999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLogID(s)
		if err != nil {
			return
		}
		if l.Role != "" && ValidateName("role", l.Role) != nil {
			t.Errorf("ParseLogID(%q): unsafe role %q", s, l.Role)
		}
		for _, id := range l.Replicas {
			if id < 0 {
				t.Errorf("ParseLogID(%q): replica %d", s, id)
			}
		}
		again, err := ParseLogID(formatLogID(l))
		if err != nil || !reflect.DeepEqual(again, l) {
			t.Errorf("round trip of %q: %+v, %v (was %+v)", s, again, err, l)
		}
	})
}

func FuzzParseMounts(f *testing.F) {
	for _, s := range []string{
		"type=bind,src=/host,dst=/job,readonly",
		"type=volume,src=vol,destination=/v,type=device,src=/dev/fuse",
		"type=device,src=/dev/nvidia0,dst=/dev/gpu,perm=rw",
		"type=bind,source=~/data,target=/data,read_only=false",
		"src=/a", "type", "type=bind,src=/a,dst=/b,readonly=maybe", ",,,", "type=device,src=/x,perm=rwx",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mounts, err := ParseMounts(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "malformed mount") {
				t.Errorf("ParseMounts(%q): error %q does not say malformed mount", s, err)
			}
			return
		}
		parts := make([]string, len(mounts))
		for i, m := range mounts {
			if m.Src == "" || !strings.HasPrefix(m.Dst, "/") {
				t.Errorf("ParseMounts(%q): %+v", s, m)
			}
			parts[i] = m.String()
		}
		again, err := ParseMounts(strings.Join(parts, ","))
		if err != nil || !reflect.DeepEqual(again, mounts) {
			t.Errorf("round trip of %q via %q: %+v, %v (was %+v)", s, strings.Join(parts, ","), again, err, mounts)
		}
	})
}

func FuzzSplitCfg(f *testing.F) {
	for _, s := range []string{
		"a=b,c=d", "FOO=v1,v2,BAR=v3", "FOO=v1;v2;BAR=v3", "a='x=1,y',b=\"c;d\"", "a='',b=\"\"", "abc", "=x",
		"a==b", "a='unterminated", "env=A:1;B:2,copy=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kvs, err := SplitCfg(s)
		if err != nil {
			return
		}
		for _, kv := range kvs {
			if kv.Key == "" {
				t.Errorf("SplitCfg(%q): empty key in %q", s, kvs)
			}
		}
		// Values free of separators and quotes survive a round trip.
		var parts []string
		plain := true
		for _, kv := range kvs {
			plain = plain && !strings.ContainsAny(kv.Key+kv.Value, ",;='\"") && kv.Value == strings.TrimSpace(kv.Value) && kv.Value != ""
			parts = append(parts, kv.Key+"="+kv.Value)
		}
		if plain && len(kvs) > 0 {
			again, err := SplitCfg(strings.Join(parts, ","))
			if err != nil || !reflect.DeepEqual(again, kvs) {
				t.Errorf("round trip of %q: %q, %v (was %q)", s, again, err, kvs)
			}
		}
	})
}

func FuzzParseCfg(f *testing.F) {
	for _, s := range []string{
		"log_dir=/tmp/x,prepend_cwd=Yes,copy_env=A_*;B_*,env=A:1;B:x:y,n=3,ratio=0.5",
		"n=1,n=2", "env=A", "prepend_cwd=maybe", "log_dri=/x", "queue=q",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := testOpts.ParseCfg(s)
		if err != nil {
			return
		}
		for k, v := range cfg {
			opt, ok := testOpts.Get(k)
			if !ok || !opt.Type.holds(v) {
				t.Errorf("ParseCfg(%q): %s=%#v", s, k, v)
			}
			// What FormatValue writes, Cast reads back (for values it can write).
			if back, err := opt.Cast(FormatValue(v)); err == nil && opt.Type != OptMap && opt.Type != OptList && !reflect.DeepEqual(back, v) {
				if opt.Type != OptString || strings.TrimSpace(FormatValue(v)) == FormatValue(v) {
					t.Errorf("%s: Cast(FormatValue(%#v)) = %#v", k, v, back)
				}
			}
		}
		if _, err := testOpts.Resolve(cfg); err != nil && cfg["queue"] != nil {
			t.Errorf("Resolve(%v): %v", cfg, err)
		}
	})
}

// templatePattern is Python's string.Template pattern (flags IGNORECASE, ASCII
// identifiers): the reference for Substitute.
var templatePattern = regexp.MustCompile(`\$(?:(\$)|([_a-zA-Z][_a-zA-Z0-9]*)|\{([_a-zA-Z][_a-zA-Z0-9]*)\}|())`)

// safeSubstitute is Python's Template.safe_substitute, written out.
func safeSubstitute(s string, values map[string]string) string {
	return templatePattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := templatePattern.FindStringSubmatch(m)
		switch {
		case sub[1] != "":
			return "$"
		case sub[2] != "":
			if v, ok := values[sub[2]]; ok {
				return v
			}
		case sub[3] != "":
			if v, ok := values[sub[3]]; ok {
				return v
			}
		}
		return m
	})
}

func FuzzMacrosSubstitute(f *testing.F) {
	for _, s := range []string{
		"${app_id}", "$app_id/x", "$${${rank0_env}:=localhost}:29500", "$$", "${a ${app_id}", "${", "$", "$1",
		"'${app_id}' --node_rank ${replica_id}", "${{ x }}", "$img_root$replica_id", "${APP_ID}",
	} {
		f.Add(s, "echo-abc", "1")
	}
	f.Fuzz(func(t *testing.T, s, appID, replica string) {
		m := Macros{AppID: appID, ReplicaID: replica, ImgRoot: "/img", Rank0Env: Rank0Env}
		want := safeSubstitute(s, map[string]string{
			MacroAppID: appID, MacroReplicaID: replica, MacroImgRoot: "/img", MacroRank0Env: Rank0Env,
		})
		if got := m.Substitute(s); got != want {
			t.Errorf("Substitute(%q) = %q, Python's safe_substitute gives %q", s, got, want)
		}
	})
}

func FuzzMakeAppID(f *testing.F) {
	for _, s := range []string{"echo", "My App!", "", "..", "-x", "é", strings.Repeat("b", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if id := MakeAppID(name); ValidateName("app id", id) != nil || len(id) > 60 {
			t.Errorf("MakeAppID(%q) = %q", name, id)
		}
	})
}

// formatLogID writes a log identifier back, as `wick log` takes it.
func formatLogID(l LogID) string {
	s := l.Handle.String()
	if l.Role != "" {
		s += "/" + l.Role
		if len(l.Replicas) > 0 {
			ids := make([]string, len(l.Replicas))
			for i, k := range l.Replicas {
				ids[i] = strconv.Itoa(k)
			}
			s += "/" + strings.Join(ids, ",")
		}
	}
	return s
}
