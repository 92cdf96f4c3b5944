package bundles_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/evaluator"
)

// built builds the default policies with a revision.
func built(t *testing.T, revision string) *bundle.Bundle {
	t.Helper()
	b, err := bundles.Build(context.Background(), policyDir, bundles.BuildOptions{Revision: revision})
	require.NoError(t, err)
	return b
}

// writeFile writes b to a new file in dir.
func writeFile(t *testing.T, dir, name string, b *bundle.Bundle) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, bundles.WriteFile(path, b))
	return path
}

func newActivator(t *testing.T, o bundles.ActivatorOptions) *bundles.Activator {
	t.Helper()
	a, err := bundles.NewActivator(o)
	require.NoError(t, err)
	return a
}

func TestActivatorSwapsAtomicallyUnderLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	files := []string{writeFile(t, dir, "r1.tar.gz", built(t, "r1")), writeFile(t, dir, "r2.tar.gz", built(t, "r2"))}
	// Eight goroutines decide flat out beside the activations: on a busy
	// 2-core machine one evaluation can wait longer than the default
	// deadline for a CPU, which is not what this test is about.
	a := newActivator(t, bundles.ActivatorOptions{Evaluator: evaluator.Options{Timeout: 30 * time.Second}})
	require.Nil(t, a.Current())
	require.NoError(t, a.Activate(ctx, files[0]))

	var stop atomic.Bool
	var decisions atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				ev := a.Current()
				d, err := ev.Decide(ctx, sampleInput("research-llm", 1+(g+i)%8))
				if !assert.NoError(t, err) {
					return
				}
				assert.Contains(t, []string{"r1", "r2"}, d.Revision)
				assert.Equal(t, ev.Revision(), d.Revision, "a decision is made by exactly one revision")
				decisions.Add(1)
			}
		})
	}
	for i := range 6 {
		want := "r" + string(rune('1'+(i+1)%2))
		require.NoError(t, a.Activate(ctx, files[(i+1)%2]))
		assert.Equal(t, want, a.Current().Revision())
		assert.Equal(t, want, a.Status().Revision)
		assert.Empty(t, a.Status().LastError)
	}
	stop.Store(true)
	wg.Wait()
	assert.Positive(t, decisions.Load())
}

// The acceptance's five rejections, one test each: the bundle is refused
// with a message naming the step and the cause, and r1 keeps serving.

func requireRejected(t *testing.T, a *bundles.Activator, path, step, msg string) error {
	t.Helper()
	err := a.Activate(context.Background(), path)
	require.Error(t, err)
	var aerr *bundles.ActivationError
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, step, aerr.Step)
	assert.Contains(t, err.Error(), "rejected at "+step)
	assert.Contains(t, err.Error(), msg)
	require.NotNil(t, a.Current())
	assert.Equal(t, "r1", a.Current().Revision(), "the previous revision keeps serving")
	st := a.Status()
	assert.Equal(t, "r1", st.Revision)
	assert.Equal(t, err.Error(), st.LastError)
	d, derr := a.Current().Decide(context.Background(), sampleInput("research-llm", 1))
	require.NoError(t, derr)
	assert.Equal(t, "r1", d.Revision)
	return err
}

func activeR1(t *testing.T, o bundles.ActivatorOptions, sign *bundles.SignOptions) *bundles.Activator {
	t.Helper()
	a := newActivator(t, o)
	b := built(t, "r1")
	if sign != nil {
		require.NoError(t, bundles.Sign(b, *sign))
	}
	require.NoError(t, a.Activate(context.Background(), writeFile(t, t.TempDir(), "r1.tar.gz", b)))
	return a
}

func TestActivatorRejectsCorruptedArchive(t *testing.T) {
	a := activeR1(t, bundles.ActivatorOptions{}, nil)
	good, err := os.ReadFile(writeFile(t, t.TempDir(), "r2.tar.gz", built(t, "r2")))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "corrupt.tar.gz")
	require.NoError(t, os.WriteFile(path, good[:len(good)/2], 0o644))
	err = requireRejected(t, a, path, bundles.StepRead, "invalid bundle")
	assert.ErrorIs(t, err, bundles.ErrInvalidBundle)
}

func TestActivatorRejectsUnsignedWhenRequired(t *testing.T) {
	priv, pub := keyPair(t, "ecdsa")
	a := activeR1(t, bundles.ActivatorOptions{Verify: &bundles.VerifyOptions{PublicKey: pub}, Require: true},
		&bundles.SignOptions{Key: priv, Algorithm: "ES256"})
	err := requireRejected(t, a, writeFile(t, t.TempDir(), "r2.tar.gz", built(t, "r2")), bundles.StepVerify, "not signed")
	assert.ErrorIs(t, err, bundles.ErrUnsigned)
}

func TestActivatorRequiresAKey(t *testing.T) {
	_, err := bundles.NewActivator(bundles.ActivatorOptions{Require: true})
	require.ErrorContains(t, err, "no verification key")
}

func TestActivatorRejectsWrongKey(t *testing.T) {
	priv, pub := keyPair(t, "rsa")
	other, _ := keyPair(t, "rsa")
	a := activeR1(t, bundles.ActivatorOptions{Verify: &bundles.VerifyOptions{PublicKey: pub}}, &bundles.SignOptions{Key: priv})
	b := built(t, "r2")
	require.NoError(t, bundles.Sign(b, bundles.SignOptions{Key: other}))
	err := requireRejected(t, a, writeFile(t, t.TempDir(), "r2.tar.gz", b), bundles.StepVerify, "verification failed")
	assert.ErrorIs(t, err, bundles.ErrVerification)
}

func TestActivatorRejectsOverlappingRoots(t *testing.T) {
	a := activeR1(t, bundles.ActivatorOptions{}, nil)
	b := built(t, "r2")
	roots := []string{"mandate", "mandate/model"}
	b.Manifest.Roots = &roots
	err := requireRejected(t, a, writeBundle(t, *b), bundles.StepRead, "overlapped roots: 'mandate' and 'mandate/model'")
	assert.ErrorIs(t, err, bundles.ErrInvalidBundle)
}

func TestActivatorRejectsRegoThatDoesNotCompile(t *testing.T) {
	a := activeR1(t, bundles.ActivatorOptions{}, nil)
	b := built(t, "r2")
	src := "package mandate.broken\n\nx := no_such_function(1)\n"
	b.Modules = append(b.Modules, bundle.ModuleFile{Path: "/mandate/broken.rego", URL: "/mandate/broken.rego", Raw: []byte(src),
		Parsed: ast.MustParseModuleWithOpts(src, ast.ParserOptions{RegoVersion: ast.RegoV1})})
	requireRejected(t, a, writeFile(t, t.TempDir(), "r2.tar.gz", b), bundles.StepCompile, "no_such_function")
}

func TestActivatorRejectsFailingSmokeDecision(t *testing.T) {
	a := activeR1(t, bundles.ActivatorOptions{}, nil)
	b := built(t, "r2")
	// decision.rego replaced by one undefined for the smoke workload.
	src, err := os.ReadFile(filepath.Join("testdata", "undecided", "decision.rego"))
	require.NoError(t, err)
	found := false
	for i, m := range b.Modules {
		if m.Path == "/mandate/decision.rego" {
			b.Modules[i].Raw = src
			b.Modules[i].Parsed = ast.MustParseModuleWithOpts(string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
			found = true
		}
	}
	require.True(t, found)
	requireRejected(t, a, writeFile(t, t.TempDir(), "r2.tar.gz", b), bundles.StepSmoke, "produced no decision")
}

func TestActivatorPersistsLastGood(t *testing.T) {
	ctx := context.Background()
	persist := t.TempDir()
	a := newActivator(t, bundles.ActivatorOptions{PersistDir: persist})
	require.NoError(t, a.Activate(ctx, writeFile(t, t.TempDir(), "r1.tar.gz", built(t, "r1"))))
	require.FileExists(t, filepath.Join(persist, bundles.PersistedFile))
	// A rejected bundle does not replace the persisted one.
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	require.NoError(t, os.WriteFile(bad, []byte("not a bundle"), 0o644))
	require.Error(t, a.Activate(ctx, bad))

	restarted := newActivator(t, bundles.ActivatorOptions{PersistDir: persist})
	require.NoError(t, restarted.LoadPersisted(ctx))
	assert.Equal(t, "r1", restarted.Current().Revision())
	entries, err := os.ReadDir(persist)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary files left behind")
}
