package spec

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// maxNameLen bounds names that become paths, container names and hostnames.
const maxNameLen = 128

// ValidateName checks a name that becomes part of a path or a container name (app id,
// app name, role, session): letters, digits, '_', '.', '-', starting with a letter or
// digit, at most 128 bytes. what says which name it is, for the error.
func ValidateName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if len(s) > maxNameLen {
		return fmt.Errorf("%s %q is longer than %d characters", what, s, maxNameLen)
	}
	if !isAlnum(s[0]) {
		return fmt.Errorf("%s %q must start with a letter or digit", what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return fmt.Errorf("%s %q may hold only letters, digits, '_', '.' and '-'", what, s)
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Alphabets of TorchX's random ids: lowercase, no vowels (no words), no '8'.
const (
	idFirst = "bcdfghjklmnpqrstvwxz"
	idRest  = "bcdfghjklmnpqrstvwxz012345679"
)

// idSuffixLen gives 20*29^11 ≈ 2^57 suffixes: collisions are not a concern.
const idSuffixLen = 12

// RandomID returns a random lowercase id of idSuffixLen characters in TorchX's alphabet.
func RandomID() string {
	var buf [idSuffixLen]byte
	if _, err := rand.Read(buf[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // never happens on Linux
	}
	b := make([]byte, idSuffixLen)
	b[0] = idFirst[int(buf[0])%len(idFirst)]
	for i := 1; i < idSuffixLen; i++ {
		b[i] = idRest[int(buf[i])%len(idRest)]
	}
	return string(b)
}

// MakeAppID makes a unique app id from an app name: the name made safe (lowercase,
// letters, digits, '-', '_', '.'; at most 40 characters) plus "-" and a random suffix,
// e.g. "echo-kf2vb0x9qwm3". The result is valid as a file name, a container name and a
// hostname label.
func MakeAppID(name string) string {
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < 40; i++ {
		c := name[i]
		switch {
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c - 'A' + 'a')
		case isAlnum(c) || c == '-' || c == '_' || c == '.':
			if b.Len() == 0 && !isAlnum(c) {
				continue
			}
			b.WriteByte(c)
		default:
			if b.Len() > 0 {
				b.WriteByte('-')
			}
		}
	}
	base := strings.TrimRight(b.String(), "-_.")
	if base == "" {
		base = "app"
	}
	return base + "-" + RandomID()
}
