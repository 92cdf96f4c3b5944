package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

func TestBundleCommands(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	priv, pub := filepath.Join(dir, "key.pem"), filepath.Join(dir, "key.pub")
	require.NoError(t, os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644))
	unsigned, signed := filepath.Join(dir, "b.tar.gz"), filepath.Join(dir, "signed.tar.gz")

	// Steps run in order: each uses the files the previous ones wrote.
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "build", args: []string{"bundle", "build", "../../../policies", "-o", unsigned, "--revision", "r42"},
			wantOut: "built " + unsigned + ": revision r42"},
		{name: "build outside Git without revision", args: []string{"bundle", "build", t.TempDir(), "-o", unsigned + ".x"},
			wantCode: 2, wantErr: "pass --revision"},
		{name: "verify unsigned", args: []string{"bundle", "verify", unsigned, "--verification-key", pub},
			wantCode: 1, wantErr: "not signed"},
		{name: "sign", args: []string{"bundle", "sign", unsigned, "--signing-key", priv, "--signing-alg", "ES256", "--key-id", "prod", "--scope", "mandate", "-o", signed},
			wantOut: `(ES256, key id "prod")`},
		{name: "sign with a bad algorithm", args: []string{"bundle", "sign", unsigned, "--signing-key", priv, "--signing-alg", "XX1", "-o", signed + ".x"},
			wantCode: 2, wantErr: `unsupported signing algorithm "XX1"`},
		{name: "verify", args: []string{"bundle", "verify", signed, "--verification-key", pub, "--verification-key-id", "prod", "--scope", "mandate"},
			wantOut: "verified " + signed},
		{name: "verify wrong scope", args: []string{"bundle", "verify", signed, "--verification-key", pub, "--verification-key-id", "prod", "--scope", "dev"},
			wantCode: 1, wantErr: "scope mismatch"},
		{name: "verify missing key", args: []string{"bundle", "verify", signed, "--verification-key", filepath.Join(dir, "nope.pub")},
			wantCode: 2, wantErr: "unable to read verification key"},
		{name: "verify missing bundle", args: []string{"bundle", "verify", filepath.Join(dir, "nope.tar.gz"), "--verification-key", pub},
			wantCode: 2, wantErr: "no such file"},
		{name: "inspect", args: []string{"bundle", "inspect", signed},
			wantOut: `key id "prod", ES256, scope "mandate"`},
		{name: "inspect bad output", args: []string{"bundle", "inspect", signed, "-o", "xml"},
			wantCode: 2, wantErr: `want table, json, yaml`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := run(t, tc.args...)
			assert.Equal(t, tc.wantCode, code, "stderr: %s", errText)
			assert.Contains(t, out, tc.wantOut)
			assert.Contains(t, errText, tc.wantErr)
		})
	}

	t.Run("inspect json", func(t *testing.T) {
		code, out, errText := run(t, "bundle", "inspect", signed, "-o", "json")
		require.Equal(t, 0, code, errText)
		var info bundles.Info
		require.NoError(t, json.Unmarshal([]byte(out), &info))
		assert.Equal(t, "r42", info.Revision)
		assert.Equal(t, []string{"mandate"}, info.Roots)
		require.NotNil(t, info.Signature)
		// Every file but the signatures themselves is signed.
		assert.Equal(t, bundles.Signature{KeyID: "prod", Algorithm: "ES256", Scope: "mandate", Files: len(info.Files) - 1}, *info.Signature)
		assert.True(t, strings.Contains(out, `"mandate/decision.rego"`))
	})
}
