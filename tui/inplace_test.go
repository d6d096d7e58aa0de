package tui_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/inplace"
)

// TestInPlaceKeys: the wall's and describe's shell key (!) runs $SHELL in the
// replica's place (its environment: a variable only the replica has), the stack key
// (P) runs `wick stack --full` of the app into $PAGER, and describe of an app whose
// replicas all ended says there is nowhere to open a shell.
func TestInPlaceKeys(t *testing.T) {
	e := newEnv(t)
	app := &spec.AppDef{Name: "inplace", Roles: []spec.Role{{Name: "sh", Entrypoint: "sh", NumReplicas: 2,
		Env: map[string]string{"ONLY_REPLICA": "in-place"}, Args: []string{"-c", "echo up; sleep 120"}}}}
	h := e.launch(app)
	defer e.cancel(h)
	hd, err := spec.ParseHandle(h)
	if err != nil {
		t.Fatal(err)
	}
	c := &common.Context{Ctx: context.Background(), Backend: e.opts.Runner}
	var cmdErr error
	testkit.Wait(t, 30*time.Second, "a shell in sh/1", func() (bool, string) {
		cmd, err := inplace.ShellCommand(c, hd, "sh", 1)
		if err != nil {
			cmdErr = err
			return false, err.Error()
		}
		var out bytes.Buffer
		cmd.SetStdin(strings.NewReader(`echo "$ONLY_REPLICA"` + "\n"))
		cmd.SetStdout(&out)
		cmd.SetStderr(&out)
		cmdErr = cmd.Run()
		return cmdErr == nil && out.String() == "in-place\n", out.String()
	})

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	stack := inplace.StackCommand(ctx, []string{wickBinary(t)}, hd)
	stack.Env = append(os.Environ(), "PAGER=cat")
	out, err := stack.CombinedOutput()
	// A shell app has no Python process: wick stack says so, of this app.
	if !strings.Contains(string(out), h+" has no running Python process to dump") && !strings.Contains(string(out), "no Python stack sampler") {
		t.Errorf("the stack key's command: %v\n%s", err, out)
	}

	ended := e.launch(&spec.AppDef{Name: "ended", Roles: []spec.Role{{Name: "sh", Entrypoint: "true", NumReplicas: 1}}})
	e.wait(ended)
	d := newDriver(t, e.opts, 120, 32)
	d.send(tick())
	d.keys("/")
	d.typ("ended")
	d.keys("enter", "d")
	d.waitScreen("handle:")
	d.keys("!")
	d.waitScreen("no running replica to open a shell in")
	d.m.Close()
}
