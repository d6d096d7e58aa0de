package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"path"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Error files: each container has TORCHELASTIC_ERROR_FILE pointing into its own
// anonymous volume (errorDir), where torchelastic, or any program using its record
// decorator, writes the exception that ended it, and PET_LOG_DIR there too, where
// torchrun keeps each worker's error file (<run>/attempt_N/<rank>/error.json).
// Describe reads them through the Engine and, as TorchX does, takes the oldest error
// file of the app as the app's error, over the replicas' files and the workers':
// the first exception raised anywhere, not the "connection closed by peer" of the
// ranks that went down with it. (A torchrun agent writes its replica's file only when
// it notices its worker failed, seconds later: the workers' files tell the order.)
const (
	// maxErrorFile bounds what is read of an error file.
	maxErrorFile = 64 << 10
	// maxErrorFiles bounds the error files looked at in one container.
	maxErrorFiles = 64
	// maxErrorScan bounds what is read of errorDir to find them (the workers' logs
	// are there too when torchrun redirects them).
	maxErrorScan = 64 << 20
	// errorFileSlack is how long before Docker's StartedAt an error file may be
	// written and still be the current run's: Docker stamps the start once the
	// process runs, so a run that fails at once can write its file "before" it.
	errorFileSlack = time.Second
	// maxErrorCache bounds the error files remembered across Describe calls.
	maxErrorCache = 4096
)

// errorInfo is what a container's error file said: its text and when it was written.
type errorInfo struct {
	text string
	at   time.Time
	// first and path are the text and the path (in the container) of its oldest error
	// file, a worker's where torchrun ran: the exception raised first, where text is
	// the replica's own file, which torchrun fills with its "Root Cause" (the lowest
	// local rank that failed in one poll, not always the rank that raised).
	first, path string
}

// errorFileOf returns the path of a container's error file, from its environment.
func errorFileOf(info *container.InspectResponse) string {
	if info.Config == nil {
		return ""
	}
	for _, kv := range info.Config.Env {
		if v, ok := strings.CutPrefix(kv, envErrorFile+"="); ok {
			return v
		}
	}
	return ""
}

// readErrorFile reads the error files of a container that has stopped with a
// failure, or returns the zero errorInfo: the text is the replica's own file (else its
// oldest worker's), the time the oldest file's. Files older than the container's last
// start are an earlier run's.
func (s *Scheduler) readErrorFile(ctx context.Context, cli *client.Client, r *replica) errorInfo {
	info := r.info
	if info == nil || info.State == nil || info.State.Running || info.State.Restarting {
		return errorInfo{}
	}
	if info.State.Status != container.StateDead && info.State.ExitCode == 0 {
		return errorInfo{}
	}
	file := errorFileOf(info)
	if file == "" {
		return errorInfo{}
	}
	key := r.sum.ID + "@" + info.State.FinishedAt
	if e, ok := s.errs.get(key); ok {
		return e
	}
	var after time.Time
	if info.RestartCount > 0 {
		after = parseTime(info.State.StartedAt).Add(-errorFileSlack)
	}
	files := []string{file}
	if file == errorFile {
		files = findErrorFiles(ctx, cli, r.sum.ID)
	}
	var e, own errorInfo
	for _, f := range files {
		fe := fetchErrorFile(ctx, cli, r.sum.ID, f)
		if fe.text == "" || fe.at.Before(after) {
			continue
		}
		if f == file {
			own = fe
		}
		if e.at.IsZero() || fe.at.Before(e.at) {
			e = fe
			e.first, e.path = fe.text, f
		}
	}
	if own.text != "" {
		e.text = own.text
	}
	if ctx.Err() == nil {
		s.errs.put(key, e, maxErrorCache)
	}
	return e
}

// findErrorFiles lists the files named like errorFile in a container's errorDir.
func findErrorFiles(ctx context.Context, cli *client.Client, id string) []string {
	res, err := cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: errorDir})
	if err != nil {
		return nil
	}
	defer res.Content.Close()
	tr := tar.NewReader(io.LimitReader(res.Content, maxErrorScan))
	var out []string
	for len(out) < maxErrorFiles {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Typeflag == tar.TypeReg && path.Base(h.Name) == path.Base(errorFile) {
			// Names are relative to errorDir's parent: "wick/error.json".
			out = append(out, path.Join(path.Dir(errorDir), path.Clean("/"+h.Name)))
		}
	}
	return out
}

// fetchErrorFile copies one error file out of a container, at most maxErrorFile
// bytes, with its modification time.
func fetchErrorFile(ctx context.Context, cli *client.Client, id, file string) errorInfo {
	b, at, err := copyOut(ctx, cli, id, file, maxErrorFile)
	text := strings.TrimSpace(string(b))
	if err != nil || text == "" {
		return errorInfo{}
	}
	return errorInfo{text: text, at: at}
}

// errorDirTar is the tar stream that makes errorDir writable by every user: an image
// that runs as another user than root could not write its error file otherwise (a
// new volume belongs to root).
func errorDirTar() []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: path.Base(errorDir) + "/", Mode: 0o1777, Typeflag: tar.TypeDir, ModTime: time.Now()})
	_ = tw.Close()
	return buf.Bytes()
}

// rootUser reports whether an image's USER is root.
func rootUser(user string) bool {
	name, _, _ := strings.Cut(user, ":")
	return name == "" || name == "root" || name == "0"
}
