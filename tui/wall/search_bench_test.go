package wall_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/wall"
)

// searchLines is the lines each of the 4 replicas of the search benchmark writes:
// with the default ring (100k lines) a fifth of them are on disk only.
const searchLines = 125_000

// syncDriver runs a wall without a Bubble Tea program: commands run in goroutines and
// their messages are handed to the wall from the benchmark's goroutine.
type syncDriver struct {
	w    *wall.Model
	msgs chan tea.Msg
}

func (d *syncDriver) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				d.exec(c)
			}
			return
		}
		if msg != nil {
			d.msgs <- msg
		}
	}()
}

func (d *syncDriver) update(msg tea.Msg) {
	if s, ok := msg.(common.StreamMsg); ok {
		d.exec(d.w.Update(s.Msg))
		d.exec(s.Next)
		return
	}
	d.exec(d.w.Update(msg))
}

// until delivers messages until done reports true, or fails after a minute.
func (d *syncDriver) until(b *testing.B, what string, done func() bool) {
	b.Helper()
	deadline := time.After(time.Minute)
	for !done() {
		select {
		case msg := <-d.msgs:
			d.update(msg)
		case <-deadline:
			b.Fatalf("%s: not within a minute", what)
		}
	}
}

// BenchmarkSearch4x125k searches a finished app of 4 replicas x 125k lines, 25k of
// each on disk only, for "step 1234" (111 matches a replica, 11 of them on disk
// only): the time to the first match shown and to the count of all, beside grep -c
// and a plain Go scan of the same lines in the replicas' stdout.log files.
func BenchmarkSearch4x125k(b *testing.B) {
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	if wickBin == "" {
		b.Skip("needs the wick binary (not with -short)")
	}
	dir := b.TempDir()
	reg := &sched.Registry{}
	local.Register(reg)
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: dir, WorkDir: dir, Self: []string{wickBin}})
	defer r.Close()
	role := spec.NewRole("trainer", spec.None, "sh", "-c", `seq -f "[rank $K] step %g loss 2.5000 lr 3.0e-04 grad_norm 1.55" 1 `+strconv.Itoa(searchLines))
	role.NumReplicas = 4
	role.Env = map[string]string{"K": "${" + spec.MacroReplicaID + "}"}
	h, err := r.Run(context.Background(), &spec.AppDef{Name: "search", Roles: []spec.Role{role}}, local.NameCwd, nil, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if d, err := r.Describe(context.Background(), h); err == nil && d.Status.State.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the app never ended")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cctx := &common.Context{
		Ctx: ctx, Backend: r, Config: common.NoConfig{}, Theme: themes.ForBackground(true),
		Actions: common.NewRegistry(), Width: 160, Height: 45, Now: time.Now,
	}
	w := wall.New(cctx, h, wall.Options{})
	defer w.Close()
	d := &syncDriver{w: w, msgs: make(chan tea.Msg, 64)}
	d.exec(w.Init())
	d.until(b, "reading the logs", w.AllEnded)
	const query = "step 1234"
	const want = 4 * 111

	b.Run("wall-first-match", func(b *testing.B) {
		for b.Loop() {
			d.exec(w.Search(query))
			d.until(b, "first match", func() bool { n, _, _ := w.Matches(); return n > 0 })
		}
		d.until(b, "the last search", func() bool { _, r, disk := w.Matches(); return !r && !disk })
	})
	b.Run("wall-count-all", func(b *testing.B) {
		for b.Loop() {
			d.exec(w.Search(query))
			d.until(b, "all matches", func() bool { _, r, disk := w.Matches(); return !r && !disk })
		}
		if n, _, _ := w.Matches(); n != want {
			b.Fatalf("%d matches, want %d", n, want)
		}
	})
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "*", h.AppID, "trainer", "*", "stdout.log"))
	if len(files) != 4 {
		b.Fatalf("stdout.log files: %v", files)
	}
	b.Run("grep-c", func(b *testing.B) {
		for b.Loop() {
			out, _ := exec.Command("grep", append([]string{"-c", "-i", query}, files...)...).Output()
			n := 0
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				c, _ := strconv.Atoi(l[strings.LastIndexByte(l, ':')+1:])
				n += c
			}
			if n != want {
				b.Fatalf("grep counted %d, want %d", n, want)
			}
		}
	})
	b.Run("scan-files", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, f := range files {
				fh, err := os.Open(f)
				if err != nil {
					b.Fatal(err)
				}
				sc := bufio.NewScanner(fh)
				for sc.Scan() {
					if strings.Contains(strings.ToLower(sc.Text()), query) {
						n++
					}
				}
				fh.Close()
			}
			if n != want {
				b.Fatalf("scan counted %d, want %d", n, want)
			}
		}
	})
}
