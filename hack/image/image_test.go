package main

import (
	"archive/tar"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImage builds the image as `make image` does (for this machine's
// architecture, so its binary can run here), reads it back from the OCI
// layout and the tarball, and checks what a cluster relies on: the
// entrypoint, the non-root user, the platform, the labels, that there is
// no shell, and that the binary inside runs `mandate version` with the
// version and commit the build set. A second build of the same commit
// gives the same digest.
func TestImage(t *testing.T) {
	ctx := context.Background()
	o := Options{ModuleDir: filepath.Join("..", ".."), Arch: runtime.GOARCH, Version: "v0.0.0-imagetest+meta",
		Commit: "0123456789abcdef0123456789abcdef01234567", Created: time.Unix(1700000000, 0).UTC(),
		Repository: DefaultRepository, Layout: filepath.Join(t.TempDir(), "layout"), Tarball: filepath.Join(t.TempDir(), "image.tar")}
	res, err := Build(ctx, o)
	require.NoError(t, err)

	idx, err := layout.ImageIndexFromPath(o.Layout)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1, "the layout holds one image")
	assert.Equal(t, res.Digest, im.Manifests[0].Digest, "the layout's image is the digest printed")
	assert.Equal(t, DefaultRepository+":v0.0.0-imagetest-meta", im.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	written, err := os.ReadFile(o.Layout + ".digest")
	require.NoError(t, err)
	assert.Equal(t, res.Digest.String()+"\n", string(written))
	img, err := idx.Image(res.Digest)
	require.NoError(t, err)
	mt, err := img.MediaType()
	require.NoError(t, err)
	assert.Equal(t, types.OCIManifestSchema1, mt)

	fromTar, err := tarball.ImageFromPath(o.Tarball, nil)
	require.NoError(t, err)
	wantConfig, err := img.ConfigName()
	require.NoError(t, err)
	gotConfig, err := fromTar.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, wantConfig, gotConfig, "the tarball holds the same image")

	cf, err := fromTar.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{BinaryPath}, cf.Config.Entrypoint)
	assert.Empty(t, cf.Config.Cmd)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, runtime.GOARCH, cf.Architecture)
	assert.Equal(t, o.Created, cf.Created.UTC())
	assert.Equal(t, "layers", cf.RootFS.Type)
	assert.Equal(t, map[string]string{
		"org.opencontainers.image.title":       "mandate",
		"org.opencontainers.image.description": "Admission-policy engine for GPU/AI Kubernetes clusters",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Commit,
		"org.opencontainers.image.created":     "2023-11-14T22:13:20Z",
		"org.opencontainers.image.source":      "https://" + DefaultRepository,
	}, cf.Config.Labels)

	files := layerFiles(t, fromTar)
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh", "bin/"} {
		assert.NotContains(t, files, shell, "no shell in the image")
	}
	var executables []string
	for name, h := range files {
		if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 {
			executables = append(executables, name)
		}
		assert.Equal(t, o.Created, h.ModTime.UTC(), "%s: mtime is SOURCE_DATE_EPOCH", name)
	}
	assert.Equal(t, []string{"usr/local/bin/mandate"}, executables, "the one executable")
	bin, ok := files["usr/local/bin/mandate"]
	require.True(t, ok, "the binary is at %s", BinaryPath)
	assert.Equal(t, 0, bin.Uid, "the binary is root's")
	assert.Equal(t, int64(0o755), bin.Mode, "and the user cannot change it")
	assert.Contains(t, string(files["etc/passwd"].body), "nonroot:x:65532:65532:")

	path := filepath.Join(t.TempDir(), "mandate")
	require.NoError(t, os.WriteFile(path, bin.body, 0o755))
	bi, err := buildinfo.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "0", setting(bi, "CGO_ENABLED"), "a static binary")
	assert.Equal(t, "true", setting(bi, "-trimpath"))
	var roots bool
	for _, d := range bi.Deps {
		roots = roots || d.Path == "golang.org/x/crypto/x509roots/fallback"
	}
	assert.True(t, roots, "the image has no CA bundle: the binary carries its own roots")
	out, err := exec.Command(path, "version", "-o", "json").Output()
	require.NoError(t, err, "mandate version inside the image: %s", out)
	var got map[string]string
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	assert.Equal(t, o.Version, got["version"])
	assert.Equal(t, o.Commit, got["commit"])
	assert.Equal(t, "2023-11-14T22:13:20Z", got["buildDate"])
	assert.Equal(t, runtime.Version(), got["goVersion"])
	assert.NotEmpty(t, got["opaVersion"])
	assert.Equal(t, "linux/"+runtime.GOARCH, got["platform"])
	out, err = exec.Command(path, "opa", "version").Output()
	require.NoError(t, err, "mandate opa version inside the image: %s", out)
	assert.Contains(t, string(out), "Commit:      "+o.Commit+"\n", "Mandate's lines")
	assert.Contains(t, string(out), "Build Commit: "+o.Commit+"\n", "OPA's commit is Mandate's")
	assert.Contains(t, string(out), "Build Timestamp: 2023-11-14T22:13:20Z\n")

	again := o
	again.Layout, again.Tarball = filepath.Join(t.TempDir(), "layout"), ""
	res2, err := Build(ctx, again)
	require.NoError(t, err)
	assert.Equal(t, res.Digest, res2.Digest, "two builds of one commit give one digest")
	t.Logf("image %s, %.1f MiB compressed", res.Digest, float64(res.Size)/(1<<20))
}

func setting(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

type layerFile struct {
	*tar.Header
	body []byte
}

// layerFiles reads the image's one layer: every entry by name, with the
// bodies of regular files.
func layerFiles(t *testing.T, img v1.Image) map[string]layerFile {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	files := map[string]layerFile{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[strings.TrimPrefix(h.Name, "./")] = layerFile{Header: h, body: body}
	}
	return files
}

func TestTag(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"v0.2.0", "v0.2.0"},
		{"v0.2.0-3-gabc1234-dirty", "v0.2.0-3-gabc1234-dirty"},
		{"v1.0.0+build.5", "v1.0.0-build.5"},
		{"4f05a4c", "4f05a4c"},
		{"", "v"},
	} {
		assert.Equal(t, tc.want, Tag(tc.version), tc.version)
	}
}
