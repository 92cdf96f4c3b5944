package bundles_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/fixtures"
)

func TestBuildManifest(t *testing.T) {
	b, err := bundles.Build(context.Background(), policyDir, bundles.BuildOptions{Revision: "abc123"})
	require.NoError(t, err)
	assert.Equal(t, "abc123", b.Manifest.Revision)
	require.NotNil(t, b.Manifest.Roots)
	assert.Equal(t, []string{"mandate"}, *b.Manifest.Roots)
	require.NotNil(t, b.Manifest.RegoVersion)
	assert.Equal(t, 1, *b.Manifest.RegoVersion)
	assert.Equal(t, map[string]any{"mandate": map[string]any{"revisionSource": "flag", "tested": false}}, b.Manifest.Metadata)
	for _, m := range b.Modules {
		assert.False(t, strings.HasSuffix(m.Path, "_test.rego"), "test suite %s shipped in the bundle", m.Path)
		assert.True(t, strings.HasPrefix(m.Path, "/mandate/"), "module path %s", m.Path)
	}
	assert.Contains(t, b.Data, "mandate")
}

func TestLoadDecidesAsTheDirectory(t *testing.T) {
	ctx := context.Background()
	fromBundle, err := bundles.Load(buildFile(t, "rev-1"), nil)
	require.NoError(t, err)
	assert.Equal(t, "rev-1", fromBundle.Revision)
	fromDir, err := evaluator.LoadPaths([]string{policyDir}, "rev-1")
	require.NoError(t, err)
	require.Len(t, fromBundle.Modules, len(fromDir.Modules))

	evBundle, err := evaluator.New(ctx, fromBundle, evaluator.Options{})
	require.NoError(t, err)
	evDir, err := evaluator.New(ctx, fromDir, evaluator.Options{})
	require.NoError(t, err)
	assert.Equal(t, evDir.Model(), evBundle.Model())

	for _, tc := range []struct {
		name   string
		tenant string
		gpus   int
	}{
		{name: "known tenant", tenant: "research-llm", gpus: 8},
		{name: "unknown tenant", tenant: "nobody", gpus: 8},
		{name: "no tenant", tenant: "", gpus: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := sampleInput(tc.tenant, tc.gpus)
			want, err := evDir.Decide(ctx, in)
			require.NoError(t, err)
			got, err := evBundle.Decide(ctx, in)
			require.NoError(t, err)
			assert.Equal(t, "rev-1", got.Revision)
			want.ID, got.ID = "", ""
			assert.Equal(t, want, got)
		})
	}
}

func sampleInput(tenant string, gpus int) evaluator.Input {
	return fixtures.JobInput(tenant, 1, gpus)
}

func TestGitRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	repo := t.TempDir()
	dir := filepath.Join(repo, "policies")
	copyDir(t, policyDir, dir)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}

	_, err := bundles.Build(ctx, dir, bundles.BuildOptions{})
	require.ErrorIs(t, err, bundles.ErrNoRevision, "not yet a Git repository")

	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "policies")
	head := git("rev-parse", "HEAD")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("outside the policy directory"), 0o644))

	b, err := bundles.Build(ctx, dir, bundles.BuildOptions{})
	require.NoError(t, err)
	assert.Equal(t, head, b.Manifest.Revision, "changes outside DIR do not make it dirty")
	assert.Equal(t, "git", b.Manifest.Metadata["mandate"].(map[string]any)["revisionSource"])

	for _, tc := range []struct {
		name string
		edit func()
	}{
		{name: "modified", edit: func() {
			f := filepath.Join(dir, "mandate", "decision.rego")
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(f, append(data, "\n# edited\n"...), 0o644))
		}},
		{name: "untracked", edit: func() {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "mandate", "new.rego"), []byte("package mandate.new\n"), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			git("checkout", "-q", "--", ".")
			git("clean", "-qfd", "policies")
			tc.edit()
			got, err := bundles.GitRevision(ctx, dir)
			require.NoError(t, err)
			assert.Equal(t, head+"-dirty", got)
		})
	}
}

func TestBuildTests(t *testing.T) {
	ctx := context.Background()
	failing := t.TempDir()
	copyDir(t, policyDir, failing)
	require.NoError(t, os.WriteFile(filepath.Join(failing, "mandate", "broken_test.rego"), []byte(`package mandate.broken_test

test_always_fails if {
	1 == 2
}

test_passes if true
`), 0o644))

	for _, tc := range []struct {
		name       string
		dir        string
		wantFailed []string
	}{
		{name: "passing", dir: policyDir},
		{name: "failing", dir: failing, wantFailed: []string{"data.mandate.broken_test.test_always_fails"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bundles.Build(ctx, tc.dir, bundles.BuildOptions{Revision: "r", Test: true})
			if tc.wantFailed == nil {
				require.NoError(t, err)
				assert.Equal(t, true, b.Manifest.Metadata["mandate"].(map[string]any)["tested"])
				return
			}
			require.ErrorIs(t, err, bundles.ErrTestsFailed)
			var tfe *bundles.TestsFailedError
			require.ErrorAs(t, err, &tfe)
			var names []string
			for _, f := range tfe.Failures {
				names = append(names, f.Name)
			}
			assert.Equal(t, tc.wantFailed, names)
			assert.Contains(t, err.Error(), "data.mandate.broken_test.test_always_fails")
			assert.Contains(t, err.Error(), "broken_test.rego:3")
		})
	}
}

func TestSignVerify(t *testing.T) {
	rsaKey, rsaPub := keyPair(t, "rsa")
	ecKey, ecPub := keyPair(t, "ecdsa")
	for _, tc := range []struct {
		name   string
		sign   bundles.SignOptions
		verify bundles.VerifyOptions
	}{
		{name: "RS256 default key id", sign: bundles.SignOptions{Key: rsaKey}, verify: bundles.VerifyOptions{PublicKey: rsaPub}},
		{name: "ES256 key id and scope",
			sign:   bundles.SignOptions{Key: ecKey, Algorithm: "ES256", KeyID: "prod", Scope: "mandate"},
			verify: bundles.VerifyOptions{PublicKey: ecPub, KeyID: "prod", Scope: "mandate"}},
		{name: "ES256 explicit algorithm",
			sign:   bundles.SignOptions{Key: ecKey, Algorithm: "ES256"},
			verify: bundles.VerifyOptions{PublicKey: ecPub, Algorithm: "ES256"}},
		{name: "HS256 secret", sign: bundles.SignOptions{Key: "s3cret", Algorithm: "HS256"}, verify: bundles.VerifyOptions{PublicKey: "s3cret", Algorithm: "HS256"}},
		{name: "PS256", sign: bundles.SignOptions{Key: rsaKey, Algorithm: "PS256"}, verify: bundles.VerifyOptions{PublicKey: rsaPub, Algorithm: "PS256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := signedFile(t, tc.sign)
			require.NoError(t, bundles.Verify(path, tc.verify))
			p, err := bundles.Load(path, &tc.verify)
			require.NoError(t, err)
			assert.Equal(t, "r1", p.Revision)
		})
	}
}

func TestVerifyFailures(t *testing.T) {
	rsaKey, rsaPub := keyPair(t, "rsa")
	_, otherPub := keyPair(t, "rsa")
	_, ecPub := keyPair(t, "ecdsa")
	signed := signedFile(t, bundles.SignOptions{Key: rsaKey, Scope: "prod"})
	good := bundles.VerifyOptions{PublicKey: rsaPub, Scope: "prod"}
	for _, tc := range []struct {
		name    string
		path    string
		opts    bundles.VerifyOptions
		wantErr error
		wantMsg string
	}{
		{name: "unsigned", path: buildFile(t, "r1"), opts: good, wantErr: bundles.ErrUnsigned, wantMsg: "not signed"},
		{name: "wrong RSA key", path: signed, opts: bundles.VerifyOptions{PublicKey: otherPub, Scope: "prod"},
			wantErr: bundles.ErrVerification, wantMsg: "failed to verify JWT signature"},
		{name: "wrong key type", path: signed, opts: bundles.VerifyOptions{PublicKey: ecPub, Scope: "prod"},
			wantErr: bundles.ErrVerification, wantMsg: "failed to verify JWT signature"},
		{name: "wrong scope", path: signed, opts: bundles.VerifyOptions{PublicKey: rsaPub, Scope: "dev"},
			wantErr: bundles.ErrVerification, wantMsg: "scope mismatch"},
		{name: "unknown key id", path: signed, opts: bundles.VerifyOptions{PublicKey: rsaPub, Scope: "prod", KeyID: "other"},
			wantErr: bundles.ErrVerification, wantMsg: `signed with key id "default", verifying with key id "other"`},
		{name: "tampered module", path: rewriteArchive(t, signed, func(name string, data []byte) []byte {
			if name == "/mandate/quota/quota.rego" {
				return append(data, "\n# tampered\n"...)
			}
			return data
		}), opts: good, wantErr: bundles.ErrVerification, wantMsg: "mandate/quota/quota.rego: digest mismatch"},
		{name: "tampered data", path: rewriteArchive(t, signed, func(name string, data []byte) []byte {
			if name == "/data.json" {
				return []byte(`{"mandate":{"model":{}}}`)
			}
			return data
		}), opts: good, wantErr: bundles.ErrVerification, wantMsg: "data.json: digest mismatch"},
		{name: "truncated gzip", path: truncated(t, signed), opts: good, wantErr: bundles.ErrInvalidBundle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := bundles.Verify(tc.path, tc.opts)
			require.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), tc.wantMsg)
			_, err = bundles.Load(tc.path, &tc.opts)
			require.ErrorIs(t, err, tc.wantErr, "Load verifies as Verify does")
		})
	}
}

func truncated(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "truncated.tar.gz")
	require.NoError(t, os.WriteFile(out, data[:len(data)/2], 0o644))
	return out
}

func TestLoadRejects(t *testing.T) {
	module := func(path, src string) bundle.ModuleFile {
		return bundle.ModuleFile{Path: path, URL: path, Raw: []byte(src), Parsed: ast.MustParseModuleWithOpts(src, ast.ParserOptions{RegoVersion: ast.RegoV1})}
	}
	roots := func(r ...string) *[]string { return &r }
	v := func(n int) *int { return &n }
	decision := module("/mandate/decision.rego", "package mandate\n\ndecision := {}\n")
	for _, tc := range []struct {
		name    string
		b       bundle.Bundle
		wantMsg string
	}{
		{name: "overlapping roots", b: bundle.Bundle{
			Manifest: bundle.Manifest{Revision: "r", Roots: roots("mandate", "mandate/model")},
			Modules:  []bundle.ModuleFile{decision}, Data: map[string]any{},
		}, wantMsg: "manifest has overlapped roots: 'mandate' and 'mandate/model'"},
		{name: "module outside the roots", b: bundle.Bundle{
			Manifest: bundle.Manifest{Revision: "r", Roots: roots("mandate")},
			Modules:  []bundle.ModuleFile{decision, module("/other.rego", "package other\n\nx := 1\n")}, Data: map[string]any{},
		}, wantMsg: "manifest roots [mandate] do not permit 'package other'"},
		{name: "data outside the roots", b: bundle.Bundle{
			Manifest: bundle.Manifest{Revision: "r", Roots: roots("mandate")},
			Modules:  []bundle.ModuleFile{decision}, Data: map[string]any{"other": map[string]any{"x": 1}},
		}, wantMsg: "manifest roots [mandate] do not permit data at path '/other'"},
		{name: "roots without mandate", b: bundle.Bundle{
			Manifest: bundle.Manifest{Revision: "r", Roots: roots("other")},
			Modules:  []bundle.ModuleFile{module("/other.rego", "package other\n\nx := 1\n")}, Data: map[string]any{},
		}, wantMsg: `roots ["other"] do not include "mandate"`},
		{name: "no revision", b: bundle.Bundle{
			Manifest: bundle.Manifest{Roots: roots("mandate")},
			Modules:  []bundle.ModuleFile{decision}, Data: map[string]any{},
		}, wantMsg: ".manifest has no revision"},
		{name: "Rego v0", b: bundle.Bundle{
			Manifest: bundle.Manifest{Revision: "r", Roots: roots("mandate"), RegoVersion: v(0)},
			Modules:  []bundle.ModuleFile{decision}, Data: map[string]any{},
		}, wantMsg: "rego_version 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bundles.Load(writeBundle(t, tc.b), nil)
			require.ErrorIs(t, err, bundles.ErrInvalidBundle)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestInspect(t *testing.T) {
	rsaKey, _ := keyPair(t, "rsa")
	ecKey, _ := keyPair(t, "ecdsa")
	for _, tc := range []struct {
		name    string
		path    string
		wantSig *bundles.Signature
	}{
		{name: "unsigned", path: buildFile(t, "r1")},
		{name: "RS256", path: signedFile(t, bundles.SignOptions{Key: rsaKey}),
			wantSig: &bundles.Signature{KeyID: "default", Algorithm: "RS256"}},
		{name: "ES256 with scope", path: signedFile(t, bundles.SignOptions{Key: ecKey, Algorithm: "ES256", KeyID: "prod", Scope: "mandate"}),
			wantSig: &bundles.Signature{KeyID: "prod", Algorithm: "ES256", Scope: "mandate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := bundles.Inspect(tc.path)
			require.NoError(t, err)
			assert.Equal(t, "r1", info.Revision)
			assert.Equal(t, []string{"mandate"}, info.Roots)
			require.NotNil(t, info.RegoVersion)
			assert.Equal(t, 1, *info.RegoVersion)
			names := map[string]int64{}
			for _, f := range info.Files {
				names[f.Name] = f.Size
			}
			if tc.wantSig != nil {
				// Every file but the signatures themselves is signed.
				want := *tc.wantSig
				want.Files = len(info.Files) - 1
				tc.wantSig = &want
			}
			assert.Equal(t, tc.wantSig, info.Signature)
			for _, want := range []string{".manifest", "data.json", "mandate/decision.rego", "mandate/quota/quota.rego"} {
				assert.Positive(t, names[want], "file %s", want)
			}
			_, signed := names[".signatures.json"]
			assert.Equal(t, tc.wantSig != nil, signed)
			for name := range names {
				assert.False(t, strings.HasSuffix(name, "_test.rego"), name)
			}
		})
	}
}
