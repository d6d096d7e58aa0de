package remote_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// capable is a helper's client with the optional capabilities, as a scheduler's own
// package wraps it (engine/docker/front).
type capable struct{ *remote.Client }

func (c capable) Kill(ctx context.Context, appID string) error {
	return remote.Kill(ctx, c.Client, appID)
}

func (c capable) Usage(ctx context.Context, appID string) (map[sched.ReplicaKey]sched.Usage, error) {
	return remote.Usage(ctx, c.Client, appID)
}

func (c capable) HostPIDs(ctx context.Context, appID string) (map[sched.ReplicaKey]int, error) {
	return remote.HostPIDs(ctx, c.Client, appID)
}

func (c capable) Exec(ctx context.Context, appID, role string, k int, req sched.ExecRequest) (sched.Command, error) {
	return remote.Exec(ctx, c.Client, appID, role, k, req)
}

// serveArgs serves local_cwd as a helper run by remote.HelperArgs is run.
func serveArgs(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg sched.Config
	fs.StringVar(&cfg.Session, "session", "", "")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "")
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	srv := remote.NewServer(os.Stdout)
	cfg.Self, cfg.Warn = []string{os.Args[0]}, srv.Warn
	s, err := local.NewCwd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.Serve(context.Background(), s, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// The optional capabilities through the helper are the scheduler's: the usage of each
// running replica, a command run in a replica's place with the caller's stdin and
// stdout and its exit status, a replica that is not there as sched.ErrNoReplica, a
// capability the scheduler lacks as an error, and kill.
func TestCapabilitiesThroughTheHelper(t *testing.T) {
	dir := t.TempDir()
	probe, err := local.NewCwd(sched.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := probe.RunOpts()
	reg := &sched.Registry{}
	reg.Register(local.NameCwd, func(cfg sched.Config) (sched.Scheduler, error) {
		return capable{remote.NewClient(local.NameCwd, opts, cfg, func() ([]string, error) {
			return remote.HelperArgs(os.Args[0], cfg), nil
		}, nil)}, nil
	})
	r := runner.New(reg, sched.Config{Session: "t", StateDir: dir, WorkDir: dir, Self: []string{os.Args[0]}})
	t.Cleanup(func() { _ = r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	h, err := r.Run(ctx, shApp("caps", `echo up; exec sleep 60`, 2), local.NameCwd, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := r.Status(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if running, _ := st.Replicas(); st.State == spec.Running && running == 2 {
			break
		}
		if st.State.Terminal() {
			t.Fatalf("the app ended: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	u, err := r.Usage(ctx, h)
	if err != nil || len(u) != 2 {
		t.Errorf("usage: %v %v, want both replicas'", u, err)
	}
	for k, v := range u {
		if k.Role != "r" || v.RSS <= 0 {
			t.Errorf("usage of %v: %+v", k, v)
		}
	}
	if _, err := r.HostPIDs(ctx, h); err == nil {
		t.Error("host PIDs of local_cwd, which has none: no error")
	}
	c, err := r.Exec(ctx, h, "r", 1, sched.ExecRequest{Argv: []string{"sh", "-c", "cat; echo err >&2; exit 4"}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	c.SetStdin(strings.NewReader("in\n"))
	c.SetStdout(&out)
	c.SetStderr(&errOut)
	var ee *sched.ExitError
	if err := c.Run(); !errors.As(err, &ee) || ee.Code != 4 || out.String() != "in\n" || errOut.String() != "err\n" {
		t.Errorf("exec: %v, stdout %q, stderr %q; want exit status 4, in, err", err, out.String(), errOut.String())
	}
	if _, err := r.Exec(ctx, h, "r", 5, sched.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, sched.ErrNoReplica) {
		t.Errorf("exec in replica 5 of 2: %v, want ErrNoReplica", err)
	}
	if err := r.Kill(ctx, h); err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(ctx, h, 20*time.Millisecond)
	if err != nil || !st.State.Terminal() || st.State == spec.Succeeded {
		t.Errorf("after kill: %+v %v", st, err)
	}
}
