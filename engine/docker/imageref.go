package docker

import (
	"errors"
	"fmt"
	"strings"
)

// maxNameLength bounds an image name (domain and path), as Docker does.
const maxNameLength = 255

// checkImageRef checks an image reference, NAME[:TAG][@DIGEST], as Docker reads one
// (github.com/distribution/reference's ParseNormalizedNamed, without the regular
// expressions it compiles at every start of wick): NAME is [DOMAIN/]PATH, with
// DOMAIN host[:port] and PATH lowercase components separated by "/", each
// alphanumeric runs joined by ".", "_", "__" or dashes.
func checkImageRef(ref string) error {
	if ref == "" {
		return errors.New("invalid reference format: empty")
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest && !validDigest(digest) {
		return fmt.Errorf("invalid reference format: bad digest %q", digest)
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		if !validTag(name[i+1:]) {
			return fmt.Errorf("invalid reference format: bad tag %q", name[i+1:])
		}
		name = name[:i]
	}
	if isHexID(name) {
		return fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", name)
	}
	if len(name) > maxNameLength {
		return fmt.Errorf("invalid reference format: repository name must not be more than %d characters", maxNameLength)
	}
	path := name
	if first, rest, ok := strings.Cut(name, "/"); ok && isDomain(first) {
		if !validDomain(first) {
			return fmt.Errorf("invalid reference format: bad domain %q", first)
		}
		path = rest
	}
	if strings.ToLower(path) != path {
		return fmt.Errorf("invalid reference format: repository name (%s) must be lowercase", path)
	}
	for _, c := range strings.Split(path, "/") {
		if !validPathComponent(c) {
			return fmt.Errorf("invalid reference format: bad name component %q", c)
		}
	}
	return nil
}

// isDomain reports whether the first component of a name is a registry's domain, as
// Docker decides: it has a dot or a port, is localhost, or has capitals.
func isDomain(s string) bool {
	return strings.ContainsAny(s, ".:") || s == "localhost" || strings.ToLower(s) != s
}

// validDomain checks host[:port]: dot-separated labels of letters, digits and inner
// dashes, or an IPv6 address in brackets; a port of digits.
func validDomain(s string) bool {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return false
		}
		host, port = s[:end+1], s[end+1:]
		if !validIPv6(host[1:end]) {
			return false
		}
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i:]
	}
	if port != "" && (port[0] != ':' || !allBytes(port[1:], isDigit)) {
		return false
	}
	if strings.HasPrefix(host, "[") {
		return true
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' ||
			!allBytes(label, func(c byte) bool { return isAlnum(c) || c >= 'A' && c <= 'Z' || c == '-' }) {
			return false
		}
	}
	return true
}

func validIPv6(s string) bool {
	return s != "" && allBytes(s, func(c byte) bool { return isHex(c) || c >= 'A' && c <= 'F' || c == ':' })
}

// validPathComponent checks [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)*.
func validPathComponent(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); {
		if isAlnum(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isAlnum(s[j]) {
			j++
		}
		switch sep := s[i:j]; {
		case sep == "." || sep == "_" || sep == "__":
		case allBytes(sep, func(c byte) bool { return c == '-' }):
		default:
			return false
		}
		i = j
	}
	return true
}

// validTag checks [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func validTag(s string) bool {
	word := func(c byte) bool { return isAlnum(c) || c >= 'A' && c <= 'Z' || c == '_' }
	return s != "" && len(s) <= 128 && word(s[0]) && allBytes(s, func(c byte) bool { return word(c) || c == '.' || c == '-' })
}

// validDigest checks ALGORITHM:HEX, of an algorithm Docker supports.
func validDigest(s string) bool {
	alg, hex, _ := strings.Cut(s, ":")
	n := 0
	switch alg {
	case "sha256":
		n = 64
	case "sha384":
		n = 96
	case "sha512":
		n = 128
	}
	return n > 0 && len(hex) == n && allBytes(hex, isHex)
}

// isHexID reports whether s is 64 lowercase hex digits: an image id, not a name.
func isHexID(s string) bool { return len(s) == 64 && allBytes(s, isHex) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'z' }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' }

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
