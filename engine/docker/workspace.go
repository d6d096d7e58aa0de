package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TorchX's custom Dockerfile name: a workspace that holds one is built with it.
const torchxDockerfile = "Dockerfile.torchx"

// The Dockerfile wick generates when the workspace has none, and the .dockerignore
// that keeps it (and itself) out of the image: the Engine drops from the context the
// Dockerfile and .dockerignore when .dockerignore names them.
const (
	genDockerfileName = ".wick.Dockerfile"
	genDockerfile     = "ARG IMAGE\nFROM $IMAGE\nCOPY . .\n"
	genIgnore         = genDockerfileName + "\n.dockerignore\n"
)

// Labels of workspace images.
const (
	labelBaseImage   = "dev.wick.base-image"
	labelBaseImageID = "dev.wick.base-image-id"
	labelWorkspace   = "dev.wick.workspace"
)

// wsEntry is one file, directory or symlink of a workspace.
type wsEntry struct {
	rel  string // slash-separated, relative to the workspace
	info fs.FileInfo
	link string
}

// workspace is a walked workspace: what goes into the build context and its digest.
type workspace struct {
	dir        string
	entries    []wsEntry
	dockerfile string // torchxDockerfile or "" (generated)
	files      int
	digest     string
}

// scanWorkspace walks dir, applying its .dockerignore, and digests what the build
// would see: paths, modes, link targets and contents (not times), plus the base image
// and the Dockerfile.
func scanWorkspace(ctx context.Context, dir, baseImage string) (*workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", abs)
	}
	var ig *ignorer
	if f, err := os.Open(filepath.Join(abs, ".dockerignore")); err == nil {
		ig, err = parseIgnore(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", abs, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	ws := &workspace{dir: abs}
	if _, err := os.Lstat(filepath.Join(abs, torchxDockerfile)); err == nil {
		ws.dockerfile = torchxDockerfile
	}
	h := sha256.New()
	fmt.Fprintf(h, "wick-workspace/1\x00%s\x00%s\x00", baseImage, ws.dockerfile)
	if ws.dockerfile == "" {
		io.WriteString(h, genDockerfile)
	}
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p == abs {
			return nil
		}
		rel, err := filepath.Rel(abs, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if ws.dockerfile == "" && (rel == ".dockerignore" || rel == genDockerfileName) {
			return nil // replaced by wick's own
		}
		if ig.excluded(rel) {
			if d.IsDir() && !ig.negation {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := wsEntry{rel: rel, info: info}
		switch {
		case info.Mode().IsRegular():
			ws.files++
			sum, err := fileDigest(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "f\x00%s\x00%o\x00%s\x00", rel, info.Mode().Perm(), sum)
		case info.IsDir():
			fmt.Fprintf(h, "d\x00%s\x00%o\x00", rel, info.Mode().Perm())
		case info.Mode()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
			fmt.Fprintf(h, "l\x00%s\x00%s\x00", rel, e.link)
		default:
			return nil // sockets, pipes and devices have no place in an image
		}
		ws.entries = append(ws.entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading workspace %s: %w", abs, err)
	}
	ws.digest = hex.EncodeToString(h.Sum(nil))
	return ws, nil
}

func fileDigest(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// workspaceTag names the image of a workspace digest in repo.
func workspaceTag(repo, digest string) (string, error) {
	if repo == "" {
		repo = DefaultImageRepo
	}
	tag := repo + ":" + digest[:16]
	if _, err := reference.ParseNormalizedNamed(tag); err != nil {
		return "", fmt.Errorf("%w %s=%q: not a valid image repository (%v)", spec.ErrInvalidRunOpt, OptImageRepo, repo, err)
	}
	return tag, nil
}

// planBuild plans the build of a workspace over role's image.
func planBuild(ctx context.Context, dir string, role spec.Role, cfg spec.Cfg) (*Build, error) {
	if role.Image == "" {
		return nil, fmt.Errorf("role %q: no image to lay the workspace over", role.Name)
	}
	ws, err := scanWorkspace(ctx, dir, role.Image)
	if err != nil {
		return nil, err
	}
	tag, err := workspaceTag(cfg.String(OptImageRepo), ws.digest)
	if err != nil {
		return nil, err
	}
	return &Build{
		Role:       role.Name,
		Context:    ws.dir,
		Dockerfile: ws.dockerfile,
		BaseImage:  role.Image,
		Tag:        tag,
		Files:      ws.files,
		Quiet:      cfg.Bool(OptQuiet),
	}, nil
}

// writeContext writes the build context of ws as a tar stream.
func writeContext(ctx context.Context, w io.Writer, ws *workspace) error {
	tw := tar.NewWriter(w)
	if ws.dockerfile == "" {
		for _, f := range []struct{ name, body string }{{genDockerfileName, genDockerfile}, {".dockerignore", genIgnore}} {
			hdr := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := io.WriteString(tw, f.body); err != nil {
				return err
			}
		}
	}
	for _, e := range ws.entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(e.info, e.link)
		if err != nil {
			return err
		}
		hdr.Name = e.rel
		if e.info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if e.info.Mode().IsRegular() {
			if err := copyFile(tw, filepath.Join(ws.dir, filepath.FromSlash(e.rel)), e.info.Size()); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// copyFile copies exactly size bytes of a file, so that a file that changed size
// since it was walked cannot corrupt the tar stream.
func copyFile(w io.Writer, p string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%s changed while it was read", p)
	}
	return nil
}

// buildMessage is one line of the Engine's build output.
type buildMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux json.RawMessage `json:"aux"`
}

// maxBuildMessage bounds one message of the Engine's build output (one line of JSON:
// a line a build step printed, or an error).
const maxBuildMessage = 8 << 20

// readBuild reads the Engine's build output to its end: JSON messages, one a line. It
// reports the lines the steps print (unless quiet) and returns the build's error.
func readBuild(body io.Reader, quiet bool, progress sched.Progress) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxBuildMessage)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m buildMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("reading the Engine's output: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			m.Error = m.ErrorDetail.Message
		}
		if m.Error != "" {
			return errors.New(strings.TrimSpace(m.Error))
		}
		if text := strings.TrimSpace(m.Stream); text != "" && !quiet {
			progress.Report("build: %s", text)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the Engine's output: %w", err)
	}
	return nil
}

// buildWorkspace makes the image b names unless an image of that tag, built over the
// same base image, exists already. It returns the tag to run, which differs from
// b.Tag when the workspace changed since the dry run.
func (s *Scheduler) buildWorkspace(ctx context.Context, cli *client.Client, b *Build, repo string, progress sched.Progress) (string, error) {
	base, err := cli.ImageInspect(ctx, b.BaseImage)
	if err != nil {
		return "", s.imageErr(err, b.BaseImage)
	}
	ws, err := scanWorkspace(ctx, b.Context, b.BaseImage)
	if err != nil {
		return "", err
	}
	tag, err := workspaceTag(repo, ws.digest)
	if err != nil {
		return "", err
	}
	progress.Report("checking for changes in workspace %s", ws.dir)
	if tag != b.Tag {
		progress.Report("workspace %s changed since the dry run: its image is now %s", ws.dir, tag)
	}
	if img, err := cli.ImageInspect(ctx, tag); err == nil && img.Config != nil && img.Config.Labels[labelBaseImageID] == base.ID {
		progress.Report("workspace unchanged: reusing image %s", tag)
		return tag, nil
	}
	progress.Report("building image %s: workspace %s (%d files) over %s", tag, ws.dir, ws.files, b.BaseImage)

	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(writeContext(ctx, pw, ws))
	}()
	defer func() {
		pr.CloseWithError(errors.New("build ended"))
		<-done
	}()
	dockerfile := ws.dockerfile
	if dockerfile == "" {
		dockerfile = genDockerfileName
	}
	image, workdir := b.BaseImage, ws.dir
	res, err := cli.ImageBuild(ctx, pr, client.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  dockerfile,
		BuildArgs:   map[string]*string{"IMAGE": &image, "WORKSPACE": &workdir},
		Remove:      true,
		ForceRemove: true,
		Labels: map[string]string{
			LabelManaged:     "true",
			LabelVersion:     version(),
			labelBaseImage:   b.BaseImage,
			labelBaseImageID: base.ID,
			labelWorkspace:   ws.dir,
		},
	})
	if err != nil {
		return "", fmt.Errorf("building workspace image %s: %w", tag, s.engineErr(err))
	}
	defer res.Body.Close()
	if err := readBuild(res.Body, b.Quiet, progress); err != nil {
		return "", fmt.Errorf("building workspace image %s: %w", tag, err)
	}
	if _, err := cli.ImageInspect(ctx, tag); err != nil {
		return "", fmt.Errorf("building workspace image %s: the Engine reported no error but made no image: %w", tag, err)
	}
	progress.Report("built image %s", tag)
	return tag, nil
}
