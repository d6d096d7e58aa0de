package docker

import (
	"strings"
	"testing"

	"github.com/distribution/reference"
)

// checkImageRef accepts and refuses what Docker's own parser does
// (distribution/reference's ParseNormalizedNamed), on real references and on the
// edges of the grammar.
func TestCheckImageRefAgreesWithDocker(t *testing.T) {
	refs := []string{
		"ubuntu", "ubuntu:22.04", "library/ubuntu:latest", "docker.io/library/ubuntu:22.04",
		"ghcr.io/pytorch/torchx:0.8.0dev0", "pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime",
		"nvcr.io/nvidia/pytorch:24.05-py3", "localhost:5000/wick/trainer:abc", "localhost/trainer",
		"registry.example.com:443/a/b/c/d:v1", "[::1]:5000/img:tag", "[2001:db8::1]/img",
		"wick-workspace:0123456789abcdef", "my_repo/sub__name:t", "a-b--c/d.e:f_g",
		"ubuntu@sha256:" + strings.Repeat("a", 64), "ubuntu:22.04@sha256:" + strings.Repeat("b", 64),
		"quay.io/org/img:" + strings.Repeat("t", 128),
		// Refused by Docker.
		"", "Ubuntu", "library/Ubuntu", "ubuntu:", ":tag", "ubuntu::tag", "ubuntu:-tag", "ubuntu:.tag",
		"ubuntu:" + strings.Repeat("t", 129), "a/", "/a", "a//b", "-a", "a-", "a_", "a..b", "a___b",
		"a.-b", "UPPER.example.com/x", "Example.com/Img", "host:port/x", "host:5000x/x", "-host.com/x",
		"host-.com/x", "[::1/x", "[zz]/x", "ubuntu@sha256:abc", "ubuntu@sha256:" + strings.Repeat("A", 64),
		"ubuntu@md5:" + strings.Repeat("a", 32), "ubuntu@sha512:" + strings.Repeat("c", 128), "ubuntu@sha384:" + strings.Repeat("c", 64), strings.Repeat("a", 64),
		strings.Repeat("a", 256), strings.Repeat("a/", 127) + "a", "a b", "a\tb", "a:b c", "é",
		"wick-workspace:" + strings.Repeat("0", 16), "localhost:5000", "localhost:5000:tag",
	}
	for _, ref := range refs {
		_, want := reference.ParseNormalizedNamed(ref)
		got := checkImageRef(ref)
		if (got == nil) != (want == nil) {
			t.Errorf("%q: checkImageRef says %v, Docker says %v", ref, got, want)
		}
	}
}
