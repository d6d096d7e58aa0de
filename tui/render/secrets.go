package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// Masked is what a masked secret value prints as.
const Masked = "••••••••"

// secretWords are the words of a variable name that mark its value as secret.
var secretWords = map[string]bool{
	"TOKEN": true, "TOKENS": true, "SECRET": true, "SECRETS": true,
	"PASS": true, "PASSWORD": true, "PASSWORDS": true, "PASSWD": true, "PASSPHRASE": true, "PWD": true,
	"PAT": true, "CREDENTIAL": true, "CREDENTIALS": true, "CREDS": true,
	"AUTH": true, "AUTHN": true, "AUTHZ": true, "AUTHORIZATION": true,
	"PRIVATE": true, "CERT": true, "CERTS": true, "CERTIFICATE": true,
	"SESSION": true, "COOKIE": true, "COOKIES": true,
	"KEY": true, "KEYS": true,
}

// notSecret are names the heuristic would flag that everyone knows hold none: the
// shell's working directories, and TorchX's session id (which TorchX prints itself).
var notSecret = map[string]bool{"PWD": true, "OLDPWD": true, "TORCHX_INTERNAL_SESSION_ID": true}

// IsSecretName reports whether an env var name looks like it holds a secret: one of its
// words (split at _, -, . and lower-to-upper case changes) is TOKEN, SECRET, PASS,
// PASSWORD, PASSWD, PWD, PAT, CREDENTIAL(S), AUTH, PRIVATE, CERT, SESSION, COOKIE or
// KEY, or a word ends in TOKEN, SECRET, PASSWORD or KEY (GHTOKEN, APIKEY). It is the one
// heuristic behind every mask: describe, the dry run, the UI.
func IsSecretName(name string) bool {
	if notSecret[strings.ToUpper(name)] {
		return false
	}
	for _, w := range nameWords(name) {
		if secretWords[w] {
			return true
		}
		for _, suffix := range []string{"TOKEN", "SECRET", "PASSWORD", "KEY"} {
			if strings.HasSuffix(w, suffix) {
				return true
			}
		}
	}
	return false
}

// nameWords splits a name into upper-case words.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	prevLower := false
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToUpper(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r)
	}
	flush()
	return words
}

// MaskJSON returns v as JSON, fields in their order, with the secret-looking values
// of every "env" object replaced by Masked and the secrets every string holds masked
// (MaskValue): what --json prints unless secrets are asked for.
func MaskJSON(v any) (json.RawMessage, error) {
	n, err := toNode(v)
	if err != nil {
		return nil, fmt.Errorf("mask secrets: %w", err)
	}
	var b bytes.Buffer
	if err := writeMasked(&b, n, false); err != nil {
		return nil, fmt.Errorf("mask secrets: %w", err)
	}
	return b.Bytes(), nil
}

// writeMasked writes n as JSON; env says n is an env object.
func writeMasked(b *bytes.Buffer, n *node, env bool) error {
	str := func(s string) error {
		q, err := json.Marshal(s)
		b.Write(q)
		return err
	}
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := str(k); err != nil {
				return err
			}
			b.WriteByte(':')
			if env && IsSecretName(k) {
				if err := str(Masked); err != nil {
					return err
				}
				continue
			}
			if err := writeMasked(b, n.vals[i], isEnvKey(k)); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeMasked(b, it, false); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		if n.isStr {
			return str(MaskValue("", n.scalar))
		}
		b.WriteString(n.scalar)
	}
	return nil
}

// isEnvKey tells whether a key holds environment variables (a role's env, a replica's,
// local_docker's env run option).
func isEnvKey(k string) bool { return strings.EqualFold(k, "env") }

// urlRe finds URLs in a value: a scheme, "://", and what follows up to a space or a
// quote.
var urlRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>]+`)
})

// secretParams are query parameters that carry a secret whatever IsSecretName says of
// them: the signatures of pre-signed URLs (Azure's SAS sig, AWS's X-Amz-Signature).
var secretParams = map[string]bool{"sig": true, "signature": true, "x-amz-signature": true, "x-goog-signature": true}

// webhookPaths are the services whose webhook URL is itself the secret: whoever has
// it may post. The part of the path from the given prefix on is masked. Shapes, as
// each service documents them:
//   - Slack, https://api.slack.com/messaging/webhooks:
//     https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX
//     (and its workflow triggers, hooks.slack.com/triggers/... and /workflows/...);
//   - Discord, https://discord.com/developers/docs/resources/webhook#execute-webhook:
//     POST /webhooks/{webhook.id}/{webhook.token} under https://discord.com/api
//     (discordapp.com, ptb. and canary. too);
//   - Microsoft Teams, https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook:
//     https://TENANT.webhook.office.com/webhookb2/...;
//   - Mattermost, https://developers.mattermost.com/integrate/webhooks/incoming/:
//     https://your-mattermost-server.com/hooks/xxx-generatedkey-xxx (any host: a path
//     /hooks/KEY is masked wherever it is).
//
// Google Chat's webhooks (https://chat.googleapis.com/v1/spaces/SPACE/messages?key=
// KEY&token=TOKEN) carry theirs in the query, which secret query names cover.
func webhookSecret(host, path string) int {
	host = strings.ToLower(host)
	switch {
	case host == "hooks.slack.com":
		return 0
	case host == "discord.com" || host == "discordapp.com" || strings.HasSuffix(host, ".discord.com"):
		if i := strings.Index(path, "/webhooks/"); i >= 0 {
			return i + len("/webhooks/")
		}
	case strings.HasSuffix(host, ".webhook.office.com"):
		return 0
	}
	if i := strings.Index(path, "/hooks/"); i >= 0 {
		return i + len("/hooks/")
	}
	return -1
}

// MaskValue returns value with what it holds of secrets masked, whatever the name it
// is shown under: the password of a URL's user (scheme://user:PASSWORD@host), the
// values of a URL's query parameters whose names look secret (?token=..., &api_key=...,
// &sig=...), and the secret part of the webhook URLs of known services (Slack, Discord,
// Microsoft Teams, Mattermost). With a name that looks secret (IsSecretName) the whole
// value is masked. Every view that shows values with secrets masked (describe, the dry
// run, --json) shows them through it.
func MaskValue(name, value string) string {
	if name != "" && IsSecretName(name) {
		return Masked
	}
	if !strings.Contains(value, "://") {
		return value
	}
	return urlRe().ReplaceAllStringFunc(value, maskURL)
}

// maskURL masks the secrets of one URL (see MaskValue), keeping the rest as written.
func maskURL(u string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if user, _, ok := strings.Cut(authority[:at], ":"); ok {
			authority = user + ":" + Masked + authority[at:]
		}
	}
	host := authority[strings.LastIndexByte(authority, '@')+1:]
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	frag := ""
	if !hasQuery {
		path, frag, _ = strings.Cut(path, "#")
		if frag != "" || strings.Contains(tail, "#") {
			frag = "#" + frag
		}
	}
	if i := webhookSecret(host, path); i >= 0 && i < len(path) {
		if i == 0 {
			i = 1 // keep the leading slash
		}
		path = path[:i] + Masked
	}
	if hasQuery {
		q, f, hasFrag := strings.Cut(query, "#")
		params := strings.Split(q, "&")
		for k, p := range params {
			name, _, ok := strings.Cut(p, "=")
			if ok && (IsSecretName(name) || secretParams[strings.ToLower(name)]) {
				params[k] = name + "=" + Masked
			}
		}
		query = "?" + strings.Join(params, "&")
		if hasFrag {
			query += "#" + f
		}
	}
	return scheme + "://" + authority + path + query + frag
}
