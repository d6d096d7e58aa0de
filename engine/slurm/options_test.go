package slurm

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestNoControlCharactersInOptions: a newline (a multi-line comment in .torchxconfig)
// or any control character in a string run option is refused before anything is
// submitted, naming the option; so is a job_dir with '%' or '\', which sbatch and
// srun would read as file name patterns (slurm-%j.out of a job_dir "/runs/%j" is not
// where wick reads the logs).
func TestNoControlCharactersInOptions(t *testing.T) {
	for _, key := range []string{OptComment, OptMailUser, OptMailType, OptAccount, OptPartition, OptConstraint, OptQOS, OptTime, OptJobDir} {
		for _, v := range []string{"a\ntouch /tmp/pwned", "a\rb", "a\tb", "a\x00b", "a\x1b[31mb", "a\u0085b"} {
			_, err := plan(t, twoRoles(), spec.Cfg{key: v})
			if err == nil || !errors.Is(err, spec.ErrInvalidRunOpt) || !strings.Contains(err.Error(), key+"=") || !strings.Contains(err.Error(), "no control characters") {
				t.Errorf("%s=%q: %v, want a refusal naming it", key, v, err)
			}
			if err != nil && strings.ContainsAny(err.Error(), "\n\r\x1b") {
				t.Errorf("%s=%q: the error holds the control character: %q", key, v, err)
			}
		}
	}
	for _, dir := range []string{"/runs/%j", "/runs/a%%b", `/runs/a\b`} {
		if _, err := plan(t, twoRoles(), spec.Cfg{OptJobDir: dir}); err == nil || !strings.Contains(err.Error(), "no '%' or '\\'") {
			t.Errorf("job_dir=%q: %v, want a refusal", dir, err)
		}
	}
	// What may be there still is: spaces in a comment, a mail address.
	req, err := plan(t, twoRoles(), spec.Cfg{OptComment: "sweep 3 of 10: lr=3e-4 # best", OptMailUser: "me@example.org", OptJobDir: "/runs/with space"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(req.Cmd, " "), "--comment=sweep 3 of 10: lr=3e-4 # best") {
		t.Errorf("sbatch command %q", req.Cmd)
	}
}

// TestCommentLinesStayComments: whatever the text of a comment line of the script, it
// is one line that bash does not run.
func TestCommentLinesStayComments(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not on PATH")
	}
	for _, text := range []string{"a\nexit 7", "a\rexit 7", "a\u2028b\u0085exit 7"} {
		line := comment(text)
		if strings.ContainsAny(line, "\n\r") {
			t.Errorf("comment(%q) = %q: more than one line", text, line)
		}
		if out, err := exec.Command("bash", "-c", line+"\necho ran-on").CombinedOutput(); err != nil || string(out) != "ran-on\n" {
			t.Errorf("bash ran %q: %v %q", line, err, out)
		}
	}
}
