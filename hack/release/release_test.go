package main

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestArchiveIsReproducible: one binary and one date give one checksum,
// and the archive holds the binary, executable, under its name.
func TestArchiveIsReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755))
	created := time.Unix(1700000000, 0)
	first, err := writeArchive(filepath.Join(dir, "a.tar.gz"), bin, PluginBinary, created)
	require.NoError(t, err)
	second, err := writeArchive(filepath.Join(dir, "b.tar.gz"), bin, PluginBinary, created)
	require.NoError(t, err)
	assert.Equal(t, first, second)
	later, err := writeArchive(filepath.Join(dir, "c.tar.gz"), bin, PluginBinary, created.Add(time.Second))
	require.NoError(t, err)
	assert.NotEqual(t, first, later, "the date is in the archive")

	f, err := os.Open(filepath.Join(dir, "a.tar.gz"))
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	hdr, err := tar.NewReader(gz).Next()
	require.NoError(t, err)
	assert.Equal(t, PluginBinary, hdr.Name)
	assert.Equal(t, int64(0o755), hdr.Mode)
	assert.True(t, hdr.ModTime.Equal(created))
}

func TestValidate(t *testing.T) {
	ok := Options{Version: "v1.2.3-rc.1", Platforms: []string{"linux/amd64"}}
	require.NoError(t, ok.Validate())
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"no v", Options{Version: "1.2.3", Platforms: ok.Platforms}},
		{"git describe", Options{Version: "7d6a3e5-dirty", Platforms: ok.Platforms}},
		{"no platform", Options{Version: ok.Version}},
		{"not OS/ARCH", Options{Version: ok.Version, Platforms: []string{"linux"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Error(t, tc.o.Validate()) })
	}
}

// TestManifest: one platform per archive, each with its URL, checksum and
// binary; test/krew has krew itself validate it.
func TestManifest(t *testing.T) {
	b, err := Manifest("v1.2.3", "https://example.com/v1.2.3", []Archive{
		{OS: "linux", Arch: "amd64", Name: "kubectl-mandate_v1.2.3_linux_amd64.tar.gz", SHA256: "aa", Binary: "kubectl-mandate"},
		{OS: "windows", Arch: "amd64", Name: "kubectl-mandate_v1.2.3_windows_amd64.tar.gz", SHA256: "bb", Binary: "kubectl-mandate.exe"},
	})
	require.NoError(t, err)
	var p plugin
	require.NoError(t, yaml.UnmarshalStrict(b, &p))
	assert.Equal(t, PluginName, p.Metadata.Name)
	assert.Equal(t, "v1.2.3", p.Spec.Version)
	require.Len(t, p.Spec.Platforms, 2)
	w := p.Spec.Platforms[1]
	assert.Equal(t, map[string]string{"os": "windows", "arch": "amd64"}, w.Selector.MatchLabels)
	assert.Equal(t, "https://example.com/v1.2.3/kubectl-mandate_v1.2.3_windows_amd64.tar.gz", w.URI)
	assert.Equal(t, "bb", w.SHA256)
	assert.Equal(t, "kubectl-mandate.exe", w.Bin)
	assert.Equal(t, []fileOperation{{From: "kubectl-mandate.exe", To: "."}}, w.Files)
}
