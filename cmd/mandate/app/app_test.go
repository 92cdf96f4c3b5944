package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/fixtures"
)

func TestServerPolicyFromBundle(t *testing.T) {
	ctx := context.Background()
	path := fixtures.BundleFile(t, "../../../policies", "b1")
	o := config.Default()
	o.Bundle.Source = path

	s := &Server{}
	src, err := s.policy(ctx, o)
	require.NoError(t, err)
	require.NotNil(t, src)
	require.NotNil(t, s.Activator)
	assert.Equal(t, "b1", s.Activator.Current().Revision())
	assert.Equal(t, "b1", s.Service.Source().(*evaluator.Evaluator).Revision())
	s.cacheSynced.Store(true)
	assert.NoError(t, s.ready(nil))

	// A missing bundle and nothing persisted: serve cannot start.
	missing := filepath.Join(t.TempDir(), "missing.tar.gz")
	o.Bundle.Source = missing
	_, err = (&Server{}).policy(ctx, o)
	var serr *bundles.StartupError
	require.ErrorAs(t, err, &serr)
	assert.False(t, serr.Shadow)
	assert.ErrorContains(t, err, missing)

	// With a persisted last good bundle it starts from it.
	persist := t.TempDir()
	o.Bundle.Source, o.Bundle.PersistDir = path, persist
	_, err = (&Server{}).policy(ctx, o)
	require.NoError(t, err)
	o.Bundle.Source = missing
	s = &Server{}
	_, err = s.policy(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, "b1", s.Service.Source().(*evaluator.Evaluator).Revision())
	st := s.Activator.Status()
	assert.Equal(t, bundles.StepRead, st.LastStep, "the source's failure stays in the status")
	assert.Contains(t, st.LastError, missing)

	// StatusPath serves it.
	rec := httptest.NewRecorder()
	bundles.StatusHandler(s.BundleStatus).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, bundles.StatusPath, nil))
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var served bundles.ServingStatus
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &served))
	assert.Equal(t, "b1", served.Active.Revision)
	assert.Equal(t, bundles.StepRead, served.Active.LastStep)
	assert.Contains(t, served.Active.LastError, missing)
	assert.Nil(t, served.Shadow)
}

// TestWebhookCheckedAfterSync: the webhook server's readiness check is
// not run (no TLS dial) before the cluster state has synced, and is run,
// its answer passed on, after.
func TestWebhookCheckedAfterSync(t *testing.T) {
	s := &Server{}
	calls := 0
	check := s.afterSync(func(*http.Request) error { calls++; return errors.New("not serving") })
	assert.Error(t, check(nil))
	assert.Zero(t, calls, "checked before the state synced")
	s.cacheSynced.Store(true)
	assert.EqualError(t, check(nil), "not serving")
	assert.Equal(t, 1, calls)
}

// TestBundleActivationReshapesState: a later revision with other topology
// levels and another tenant tree reshapes the cluster state before it
// decides; one whose levels the state refuses is rejected.
func TestBundleActivationReshapesState(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	write := func(revision string, edit func(model map[string]any)) {
		b, err := bundles.Build(ctx, "../../../policies", bundles.BuildOptions{Revision: revision})
		require.NoError(t, err)
		if edit != nil {
			edit(b.Data["mandate"].(map[string]any)["model"].(map[string]any))
		}
		require.NoError(t, bundles.WriteFile(path, b))
		later := time.Now().Add(time.Duration(len(revision)) * time.Minute)
		require.NoError(t, os.Chtimes(path, later, later))
	}
	write("r1", nil)
	o := config.Default()
	o.Bundle.Source = path
	s := &Server{}
	src, err := s.policy(ctx, o)
	require.NoError(t, err)
	for i := range 8 {
		s.State.UpsertNode(fixtures.GPUNode(i))
	}
	s.State.UpsertNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vision", Labels: map[string]string{"mandate.dev/tenant": "research-vision"}}})
	assert.Contains(t, s.State.Usage("research-vision"), "research")

	write("r2-reshaped", func(model map[string]any) {
		model["topology"].(map[string]any)["levels"] = []any{
			map[string]any{"name": "zone", "nodeLabel": "topology.kubernetes.io/zone"},
			map[string]any{"name": "block", "nodeLabel": "mandate.dev/leaf-block"},
			map[string]any{"name": "node", "nodeLabel": "kubernetes.io/hostname"},
		}
		model["topology"].(map[string]any)["rules"] = []any{
			map[string]any{"maxGPUs": 8, "required": "node"},
			map[string]any{"required": "zone", "preferred": "block"},
		}
		model["tenants"].(map[string]any)["research-vision"].(map[string]any)["parent"] = "product"
	})
	require.NoError(t, src.Poll(ctx))
	require.Equal(t, "r2-reshaped", s.Activator.Current().Revision())
	var levels []string
	for _, l := range s.State.Snapshot().Levels() {
		levels = append(levels, l.Name)
	}
	assert.Equal(t, []string{"zone", "block", "node"}, levels)
	assert.Equal(t, 8, s.State.Snapshot().NodeCount())
	usage := s.State.Usage("research-vision")
	assert.Contains(t, usage, "product")
	assert.NotContains(t, usage, "research")

	write("r3-duplicate-levels", func(model map[string]any) {
		model["topology"].(map[string]any)["levels"] = []any{
			map[string]any{"name": "zone", "nodeLabel": "topology.kubernetes.io/zone"},
			map[string]any{"name": "node", "nodeLabel": "topology.kubernetes.io/zone"},
		}
		model["topology"].(map[string]any)["rules"] = []any{map[string]any{"required": "zone"}}
	})
	err = src.Poll(ctx)
	var aerr *bundles.ActivationError
	require.ErrorAs(t, err, &aerr, "%v", err)
	t.Logf("rejected: %v", err)
	assert.Equal(t, "r2-reshaped", s.Activator.Current().Revision(), "the previous revision keeps serving")
	assert.Len(t, s.State.Snapshot().Levels(), 3, "and the state keeps its shape")
}
