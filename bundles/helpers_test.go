package bundles_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

// policyDir is Mandate's default authority model.
const policyDir = "../policies"

// keyPair writes a PEM private key (PKCS#8) and its public key (PKIX).
func keyPair(t *testing.T, kind string) (private, public string) {
	t.Helper()
	var key any
	var err error
	switch kind {
	case "rsa":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ecdsa":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("unknown key kind %q", kind)
	}
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	pubDER, err := x509.MarshalPKIXPublicKey(key.(crypto.Signer).Public())
	require.NoError(t, err)
	dir := t.TempDir()
	private, public = filepath.Join(dir, kind+".pem"), filepath.Join(dir, kind+".pub")
	require.NoError(t, os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644))
	return private, public
}

// buildFile builds the default policies with a given revision into a file.
func buildFile(t *testing.T, revision string) string {
	t.Helper()
	b, err := bundles.Build(context.Background(), policyDir, bundles.BuildOptions{Revision: revision})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	require.NoError(t, bundles.WriteFile(path, b))
	return path
}

// signedFile builds and signs the default policies.
func signedFile(t *testing.T, opts bundles.SignOptions) string {
	t.Helper()
	in := buildFile(t, "r1")
	out := filepath.Join(t.TempDir(), "signed.tar.gz")
	require.NoError(t, bundles.SignFile(in, out, opts))
	return out
}

// writeBundle writes a hand-made bundle, as another tool might.
func writeBundle(t *testing.T, b bundle.Bundle) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	var buf bytes.Buffer
	require.NoError(t, bundle.NewWriter(&buf).UseModulePath(true).DisableFormat(true).Write(b))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// rewriteArchive copies a bundle archive entry by entry through edit.
func rewriteArchive(t *testing.T, in string, edit func(name string, data []byte) []byte) string {
	t.Helper()
	f, err := os.Open(in)
	require.NoError(t, err)
	defer f.Close()
	gr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gr)
	var out bytes.Buffer
	gw := gzip.NewWriter(&out)
	tw := tar.NewWriter(gw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		data = edit(h.Name, data)
		h.Size = int64(len(data))
		require.NoError(t, tw.WriteHeader(h))
		_, err = tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gw.Close())
	path := filepath.Join(t.TempDir(), "rewritten.tar.gz")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	return path
}

// copyDir copies a directory tree.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	}))
}
