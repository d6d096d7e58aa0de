package render

import (
	"strings"
	"testing"
)

func TestTreeQuotesWhatWouldReadWrong(t *testing.T) {
	var b strings.Builder
	v := struct {
		Args  []string          `json:"args"`
		Env   map[string]string `json:"env"`
		Empty string            `json:"empty"`
		Num   string            `json:"num"`
	}{
		Args:  []string{"hello world", "-c", "a,b"},
		Env:   map[string]string{"API_TOKEN": "s3cret", "HOME": "/root"},
		Empty: "",
		Num:   "42",
	}
	if err := Tree(&b, v, Plain{}, TreeOptions{MaskSecrets: true}); err != nil {
		t.Fatal(err)
	}
	want := `args:  ["hello world", -c, "a,b"]
env:
  API_TOKEN: ` + Masked + `
  HOME:      /root
empty: ""
num:   "42"
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
