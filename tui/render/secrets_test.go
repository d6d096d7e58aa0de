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

// TestMaskValue: the secrets a value holds are masked whatever its name; the rest of
// the value is as written. The webhook URLs are the shapes each service documents
// (see webhookSecret), with made-up ids and tokens.
func TestMaskValue(t *testing.T) {
	M := Masked
	for _, c := range []struct{ name, in, want string }{
		{"DATABASE_URL", "postgres://u:pw@h/db", "postgres://u:" + M + "@h/db"},
		{"", "postgresql://app:s3cr%40t@db.internal:5432/app?sslmode=require", "postgresql://app:" + M + "@db.internal:5432/app?sslmode=require"},
		{"", "--db=mysql://root:hunter2@10.0.0.1/x --other https://example.com/a", "--db=mysql://root:" + M + "@10.0.0.1/x --other https://example.com/a"},
		{"", "redis://:onlypass@cache:6379/0", "redis://:" + M + "@cache:6379/0"},
		{"", "https://user@example.com/x", "https://user@example.com/x"}, // no password
		{"", "https://example.com/a?token=abc&page=2&api_key=k1#top", "https://example.com/a?token=" + M + "&page=2&api_key=" + M + "#top"},
		{"", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-12-31&sig=abc%2Bdef", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-12-31&sig=" + M},
		{"", "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=f00", "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" + M},
		{"SLACK_URL", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "https://hooks.slack.com/" + M},
		{"", "https://discord.com/api/webhooks/318821398619357185/czD2ExfFEHWLC0rONDOX5boZ", "https://discord.com/api/webhooks/" + M},
		{"", "https://discordapp.com/api/webhooks/1/t", "https://discordapp.com/api/webhooks/" + M},
		{"", "https://contoso.webhook.office.com/webhookb2/a@b/IncomingWebhook/c/d", "https://contoso.webhook.office.com/" + M},
		{"", "https://chat.example.com/hooks/xxx-generatedkey-xxx", "https://chat.example.com/hooks/" + M},
		{"", "https://chat.googleapis.com/v1/spaces/AAA/messages?key=K&token=T", "https://chat.googleapis.com/v1/spaces/AAA/messages?key=" + M + "&token=" + M},
		{"HF_TOKEN", "hf_abc", M},
		{"LOGLEVEL", "INFO", "INFO"},
		{"", "https://pytorch.org/docs/stable/elastic/run.html", "https://pytorch.org/docs/stable/elastic/run.html"},
		{"", "not a url: user:pass@host", "not a url: user:pass@host"},
	} {
		if got := MaskValue(c.name, c.in); got != c.want {
			t.Errorf("MaskValue(%q, %q)\n got  %q\n want %q", c.name, c.in, got, c.want)
		}
	}
}

// TestMaskJSONMasksSecretsInValues: a password in a URL of any string, an env value
// under a name that does not look secret included.
func TestMaskJSONMasksSecretsInValues(t *testing.T) {
	v := map[string]any{"env": map[string]string{"DATABASE_URL": "postgres://u:pw@h/db"}, "args": []string{"--hook", "https://hooks.slack.com/services/T0/B0/XX"}}
	got, err := MaskJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "pw@") || strings.Contains(string(got), "T0/B0") || !strings.Contains(string(got), "postgres://u:"+Masked+"@h/db") {
		t.Errorf("%s", got)
	}
	var b strings.Builder
	if err := Tree(&b, v, Plain{}, TreeOptions{MaskSecrets: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "pw@") || strings.Contains(b.String(), "T0/B0") || !strings.Contains(b.String(), "postgres://u:"+Masked+"@h/db") {
		t.Errorf("tree:\n%s", b.String())
	}
	b.Reset()
	if err := Tree(&b, v, Plain{}, TreeOptions{}); err != nil || !strings.Contains(b.String(), "postgres://u:pw@h/db") {
		t.Errorf("tree with secrets shown (--reveal): %v\n%s", err, b.String())
	}
}
