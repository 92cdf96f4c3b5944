package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// DefaultRepository is where releases are pushed; the chart's
	// image.repository.
	DefaultRepository = "ghcr.io/mandate-dev/mandate"
	// BinaryPath is the mandate binary in the image, its entrypoint.
	BinaryPath = "/usr/local/bin/mandate"
	// User is the image's user and group: distroless's nonroot.
	User = "65532:65532"
	// buildinfoPkg owns the facts -ldflags sets.
	buildinfoPkg = "github.com/mandate-dev/mandate/buildinfo"
)

// Options say what to build and where to write it.
type Options struct {
	// ModuleDir holds go.mod and cmd/mandate.
	ModuleDir string
	// Arch is the GOARCH; the OS is linux.
	Arch string
	// Version, Commit and Created are set in the binary (buildinfo) and
	// in the image's labels; Created also stamps every file.
	Version, Commit string
	Created         time.Time
	// Repository names the tarball's tag and the source label.
	Repository string
	// Layout is the OCI layout directory written, Layout+".digest" the
	// digest; Tarball, when set, the docker-style tarball.
	Layout, Tarball string
}

// Result is what Build wrote.
type Result struct {
	// Digest is the image manifest's digest, the same in the layout and
	// in a registry the layout is pushed to.
	Digest v1.Hash
	// Size is the compressed size of the one layer.
	Size  int64
	Image v1.Image
}

// Build compiles the binary and assembles, writes and returns the image.
func Build(ctx context.Context, o Options) (Result, error) {
	tmp, err := os.MkdirTemp("", "mandate-image-")
	if err != nil {
		return Result{}, fmt.Errorf("unable to make a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "mandate")
	if err := buildBinary(ctx, o, bin); err != nil {
		return Result{}, err
	}
	img, err := Assemble(o, bin)
	if err != nil {
		return Result{}, err
	}
	return Write(o, img)
}

// buildBinary runs go build for linux/o.Arch, static and reproducible.
func buildBinary(ctx context.Context, o Options, out string) error {
	ldflags := strings.Join([]string{"-s", "-w",
		"-X", buildinfoPkg + ".version=" + o.Version,
		"-X", buildinfoPkg + ".commit=" + o.Commit,
		"-X", buildinfoPkg + ".date=" + o.Created.UTC().Format(time.RFC3339)}, " ")
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/mandate")
	cmd.Dir = o.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.Arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("unable to build the mandate binary for linux/%s: %w", o.Arch, err)
	}
	return nil
}

// Assemble puts the binary at bin into a one-layer image on an empty base.
func Assemble(o Options, bin string) (v1.Image, error) {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("unable to read the mandate binary: %w", err)
	}
	rootfs, err := layerTar(binary, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("unable to make the image layer: %w", err)
	}
	created := v1.Time{Time: o.Created}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	base, err = mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: o.Arch,
		OS:           "linux",
		Created:      created,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: []string{BinaryPath},
			User:       User,
			WorkingDir: "/",
			Env:        []string{"HOME=/home/nonroot"},
			Labels: map[string]string{
				"org.opencontainers.image.title":       "mandate",
				"org.opencontainers.image.description": "Admission-policy engine for GPU/AI Kubernetes clusters",
				"org.opencontainers.image.version":     o.Version,
				"org.opencontainers.image.revision":    o.Commit,
				"org.opencontainers.image.created":     o.Created.UTC().Format(time.RFC3339),
				"org.opencontainers.image.source":      "https://" + o.Repository,
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("unable to set the image configuration: %w", err)
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "hack/image: " + BinaryPath, Comment: "mandate " + o.Version}})
	if err != nil {
		return nil, fmt.Errorf("unable to add the layer: %w", err)
	}
	return img, nil
}

// layerTar is the image's whole file system: the binary, root-owned and
// not writable by the user, the user's passwd and group entries, its home
// and /tmp. Entries are in a fixed order with fixed owners and times.
func layerTar(binary []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: uid, ModTime: mtime, Format: tar.FormatPAX}
	}
	file := func(name string, mode int64, body []byte) (*tar.Header, []byte) {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: mtime, Format: tar.FormatPAX}, body
	}
	type entry struct {
		h    *tar.Header
		body []byte
	}
	entries := []entry{
		{h: dir("etc/", 0o755, 0)},
	}
	h, b := file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n"))
	entries = append(entries, entry{h, b})
	h, b = file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
	entries = append(entries, entry{h, b},
		entry{h: dir("home/", 0o755, 0)}, entry{h: dir("home/nonroot/", 0o700, 65532)},
		entry{h: dir("tmp/", 0o1777, 0)},
		entry{h: dir("usr/", 0o755, 0)}, entry{h: dir("usr/local/", 0o755, 0)}, entry{h: dir("usr/local/bin/", 0o755, 0)})
	h, b = file(strings.TrimPrefix(BinaryPath, "/"), 0o755, binary)
	entries = append(entries, entry{h, b})
	for _, e := range entries {
		if err := tw.WriteHeader(e.h); err != nil {
			return nil, fmt.Errorf("unable to write %s into the layer: %w", e.h.Name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("unable to write %s into the layer: %w", e.h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("unable to finish the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// Write writes img as an OCI layout (replacing o.Layout), its digest
// beside it, and the tarball when o.Tarball is set.
func Write(o Options, img v1.Image) (Result, error) {
	digest, err := img.Digest()
	if err != nil {
		return Result{}, fmt.Errorf("unable to compute the image digest: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return Result{}, fmt.Errorf("unable to read the image's layers: %w", err)
	}
	size, err := layers[0].Size()
	if err != nil {
		return Result{}, fmt.Errorf("unable to size the layer: %w", err)
	}
	if err := os.RemoveAll(o.Layout); err != nil {
		return Result{}, fmt.Errorf("unable to replace %s: %w", o.Layout, err)
	}
	p, err := layout.Write(o.Layout, empty.Index)
	if err != nil {
		return Result{}, fmt.Errorf("unable to write the OCI layout %s: %w", o.Layout, err)
	}
	tag := o.Repository + ":" + Tag(o.Version)
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag})); err != nil {
		return Result{}, fmt.Errorf("unable to write the image into %s: %w", o.Layout, err)
	}
	if err := os.WriteFile(o.Layout+".digest", []byte(digest.String()+"\n"), 0o644); err != nil {
		return Result{}, fmt.Errorf("unable to write the digest: %w", err)
	}
	if o.Tarball != "" {
		ref, err := name.NewTag(tag)
		if err != nil {
			return Result{}, fmt.Errorf("unable to name the image %q: %w", tag, err)
		}
		if err := tarball.WriteToFile(o.Tarball, ref, img); err != nil {
			return Result{}, fmt.Errorf("unable to write the image tarball %s: %w", o.Tarball, err)
		}
	}
	return Result{Digest: digest, Size: size, Image: img}, nil
}

var notInTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// Tag is version as an image tag: characters a tag cannot hold become "-".
func Tag(version string) string {
	t := notInTag.ReplaceAllString(version, "-")
	if t == "" || t[0] == '.' || t[0] == '-' {
		t = "v" + t
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}
