package render

import (
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"API_TOKEN": true, "GITHUB_PAT": true, "DB_PASS": true, "DB_PASSWORD": true, "MYSQL_PWD": true,
		"AWS_SECRET_ACCESS_KEY": true, "GOOGLE_APPLICATION_CREDENTIALS": true, "HF_AUTH": true,
		"SSH_PRIVATE": true, "TLS_CERT": true, "SESSION_COOKIE": true, "WANDB_API_KEY": true,
		"apiKey": true, "ghToken": true, "OPENAI_APIKEY": true, "X-Auth": true,
		"PATH": false, "HOME": false, "PWD": false, "OLDPWD": false, "TORCHX_INTERNAL_SESSION_ID": false,
		"PATTERN": false, "AUTHOR": false, "KEYBOARD": false, "LOGLEVEL": false, "CUDA_VISIBLE_DEVICES": false,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestMaskJSONKeepsOrderAndMasksOnlyEnv: --json masks env values only (a "session"
// field of the status is no secret), in field order.
func TestMaskJSONKeepsOrderAndMasksOnlyEnv(t *testing.T) {
	v := struct {
		Session string            `json:"session"`
		Env     map[string]string `json:"env"`
		Roles   []map[string]any  `json:"roles"`
	}{"wick", map[string]string{"DB_PASSWORD": "hunter2", "HOME": "/root"},
		[]map[string]any{{"env": map[string]string{"HF_TOKEN": "hf_abc"}}}}
	got, err := MaskJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"session":"wick","env":{"DB_PASSWORD":"` + Masked + `","HOME":"/root"},"roles":[{"env":{"HF_TOKEN":"` + Masked + `"}}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if strings.Contains(string(got), "hunter2") || strings.Contains(string(got), "hf_abc") {
		t.Error("a secret leaked")
	}
}
