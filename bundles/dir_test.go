package bundles_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

// unpack extracts a bundle archive into a new directory.
func unpack(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	require.NoError(t, err)
	defer f.Close()
	gr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gr)
	dir := t.TempDir()
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		require.NoError(t, err)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(h.Name, "/")))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
}

func TestLoadDir(t *testing.T) {
	ctx := context.Background()

	t.Run("policy directory in Git", func(t *testing.T) {
		head, err := bundles.GitRevision(ctx, policyDir)
		require.NoError(t, err)
		p, err := bundles.LoadDir(ctx, policyDir, nil)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(p.Revision, head), "revision %q from Git commit %q", p.Revision, head)
		for path := range p.Modules {
			assert.False(t, strings.HasSuffix(path, "_test.rego"), "test suite %s loaded", path)
		}
		assert.NotEmpty(t, p.Modules)
		assert.Contains(t, p.Data, "mandate")
	})

	t.Run("policy directory outside Git: content hash", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, policyDir, dir)
		p, err := bundles.LoadDir(ctx, dir, nil)
		require.NoError(t, err)
		assert.Regexp(t, `^sha256-[0-9a-f]{12}$`, p.Revision)
		again, err := bundles.LoadDir(ctx, dir, nil)
		require.NoError(t, err)
		assert.Equal(t, p.Revision, again.Revision, "same contents, same revision")
		appendTo(t, filepath.Join(dir, "mandate", "model", "data.json"), "\n")
		changed, err := bundles.LoadDir(ctx, dir, nil)
		require.NoError(t, err)
		assert.NotEqual(t, p.Revision, changed.Revision)
	})

	t.Run("unpacked bundle: the manifest's revision", func(t *testing.T) {
		p, err := bundles.LoadDir(ctx, unpack(t, buildFile(t, "r7")), nil)
		require.NoError(t, err)
		assert.Equal(t, "r7", p.Revision)
	})

	t.Run("data outside the roots", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, policyDir, dir)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "other"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "other", "data.json"), []byte(`{"x": 1}`), 0o644))
		_, err := bundles.LoadDir(ctx, dir, nil)
		require.ErrorIs(t, err, bundles.ErrInvalidBundle)
		assert.ErrorContains(t, err, "do not permit data at path")
	})

	t.Run("not a directory", func(t *testing.T) {
		_, err := bundles.LoadDir(ctx, filepath.Join(t.TempDir(), "nope"), nil)
		assert.ErrorContains(t, err, "no such file")
	})
}

func TestLoadDirVerified(t *testing.T) {
	ctx := context.Background()
	key, pub := keyPair(t, "ecdsa")
	_, otherPub := keyPair(t, "ecdsa")
	verify := &bundles.VerifyOptions{PublicKey: pub}
	signed := unpack(t, signedFile(t, bundles.SignOptions{Key: key, Algorithm: "ES256"}))
	require.FileExists(t, filepath.Join(signed, ".signatures.json"))

	p, err := bundles.LoadDir(ctx, signed, verify)
	require.NoError(t, err)
	assert.Equal(t, "r1", p.Revision)

	_, err = bundles.LoadDir(ctx, signed, &bundles.VerifyOptions{PublicKey: otherPub})
	require.ErrorIs(t, err, bundles.ErrVerification)

	unsigned := t.TempDir()
	copyDir(t, policyDir, unsigned)
	_, err = bundles.LoadDir(ctx, unsigned, verify)
	require.ErrorIs(t, err, bundles.ErrUnsigned)

	// A file changed after signing.
	tampered := t.TempDir()
	copyDir(t, signed, tampered)
	appendTo(t, filepath.Join(tampered, "mandate", "decision.rego"), "\n# changed after signing\n")
	_, err = bundles.LoadDir(ctx, tampered, verify)
	require.ErrorIs(t, err, bundles.ErrVerification)

	// A file added after signing.
	added := t.TempDir()
	copyDir(t, signed, added)
	require.NoError(t, os.WriteFile(filepath.Join(added, "mandate", "extra.rego"), []byte("package mandate.extra\n\nx := 1\n"), 0o644))
	_, err = bundles.LoadDir(ctx, added, verify)
	require.ErrorIs(t, err, bundles.ErrVerification)
}

func TestDirSourceReactivatesOnChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	copyDir(t, policyDir, dir)
	opts := bundles.SourceFor(dir)
	require.Equal(t, dir, opts.Dir)
	a, src, err := bundles.NewSource(opts)
	require.NoError(t, err)
	require.NoError(t, src.Poll(ctx))
	first := a.Current().Revision()
	activated := a.Status().ActivatedAt
	assert.Equal(t, dir, a.Status().Source)

	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, activated, a.Status().ActivatedAt, "an unchanged directory is not activated again")

	appendTo(t, filepath.Join(dir, "mandate", "model", "data.json"), "\n")
	require.NoError(t, src.Poll(ctx))
	assert.NotEqual(t, first, a.Current().Revision(), "a changed file is a new revision")

	// A broken file is rejected; the last good revision keeps serving and
	// the status says why.
	good := a.Current().Revision()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mandate", "broken.rego"), []byte("package mandate.broken\n\nx := \n"), 0o644))
	err = src.Poll(ctx)
	var aerr *bundles.ActivationError
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, bundles.StepRead, aerr.Step)
	assert.Equal(t, good, a.Current().Revision())
	assert.Equal(t, bundles.StepRead, a.Status().LastStep)

	// A directory that disappears: a failure of the source, recorded.
	require.NoError(t, os.RemoveAll(dir))
	require.Error(t, src.Poll(ctx))
	assert.Contains(t, a.Status().LastError, "no such file")
	assert.Equal(t, good, a.Current().Revision())
}

// appendTo appends to a file and moves its modification time on, so a
// poll sees the change even within the file system's time granularity.
func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(path, later, later))
}
