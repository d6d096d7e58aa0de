package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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
// of every "env" object replaced by Masked: what --json prints unless secrets are
// asked for.
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
			return str(n.scalar)
		}
		b.WriteString(n.scalar)
	}
	return nil
}

// isEnvKey tells whether a key holds environment variables (a role's env, a replica's,
// local_docker's env run option).
func isEnvKey(k string) bool { return strings.EqualFold(k, "env") }
