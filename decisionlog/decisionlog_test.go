package decisionlog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
)

func newLogger(t *testing.T, o decisionlog.Options) (*decisionlog.Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	l, err := decisionlog.New(slog.NewJSONHandler(&buf, nil), o)
	require.NoError(t, err)
	return l, &buf
}

func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := map[string]any{}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		out = append(out, m)
	}
	return out
}

func allowed() *decisionlog.Entry {
	return &decisionlog.Entry{
		Webhook:    "mutate",
		Request:    evaluator.Request{Operation: "CREATE", User: "alice"},
		APIVersion: "batch/v1", Kind: "Job", Namespace: "vision", Name: "vit-sweep", Tenant: "research-vision",
		Decision: evaluator.Decision{ID: "d1", Revision: "r1", Allowed: true, Violations: []evaluator.Violation{},
			Directives: evaluator.Directives{Scheduler: "volcano", Queue: "research-vision", PriorityClass: "train",
				Preemptible: true, GangMin: 2, RequiredLevel: "block", Labels: map[string]string{"x": "y"}}},
		Latency: 1500 * time.Microsecond,
	}
}

func TestLineSchema(t *testing.T) {
	l, buf := newLogger(t, decisionlog.DefaultOptions())
	require.True(t, l.Log(context.Background(), allowed()))
	denied := allowed()
	denied.Decision = evaluator.Decision{ID: "d2", Revision: "r1", Violations: []evaluator.Violation{
		{Code: "quota.ceiling", Dimension: evaluator.DimensionQuota, Message: "over the ceiling"}},
		Warned: []evaluator.Violation{{Code: "topology.wide", Dimension: evaluator.DimensionTopology, Message: "wide", Enforcement: evaluator.EnforceWarn}},
		DryRun: []evaluator.Violation{{Code: "priority.new", Dimension: evaluator.DimensionPriority, Message: "new rule", Enforcement: evaluator.EnforceDryRun}},
	}
	denied.Shadow = &decisionlog.Shadow{Revision: "r2", Decision: evaluator.Decision{ID: "s2", Allowed: true}, Differences: []string{"allowed: false -> true"}}
	require.True(t, l.Log(context.Background(), denied))
	failed := allowed()
	failed.Decision = evaluator.Decision{}
	failed.Err = errors.New("policy evaluation exceeded its deadline")
	require.True(t, l.Log(context.Background(), failed))

	got := lines(t, buf)
	require.Len(t, got, 3)
	for _, m := range got {
		delete(m, "time")
	}
	want := []map[string]any{{
		"level": "INFO", "msg": "decision", "logger": "decision",
		"id": "d1", "revision": "r1", "result": "allowed", "webhook": "mutate", "operation": "CREATE", "dryRun": false,
		"user": "alice", "tenant": "research-vision", "namespace": "vision", "apiVersion": "batch/v1", "kind": "Job",
		"name": "vit-sweep", "latencyMs": 1.5, "reinvocation": false, "violations": []any{},
		"directives": map[string]any{"scheduler": "volcano", "queue": "research-vision", "priorityClass": "train",
			"preemptible": true, "gangMin": float64(2), "requiredLevel": "block"},
	}, {
		"level": "INFO", "msg": "decision", "logger": "decision",
		"id": "d2", "revision": "r1", "result": "denied", "webhook": "mutate", "operation": "CREATE", "dryRun": false,
		"user": "alice", "tenant": "research-vision", "namespace": "vision", "apiVersion": "batch/v1", "kind": "Job",
		"name": "vit-sweep", "latencyMs": 1.5, "reinvocation": false,
		"violations":       []any{map[string]any{"code": "quota.ceiling", "dimension": "quota", "enforcement": "deny", "message": "over the ceiling"}},
		"warned":           []any{map[string]any{"code": "topology.wide", "dimension": "topology", "enforcement": "warn", "message": "wide"}},
		"dryrunViolations": []any{map[string]any{"code": "priority.new", "dimension": "priority", "enforcement": "dryrun", "message": "new rule"}},
		"shadow":           map[string]any{"revision": "r2", "id": "s2", "result": "allowed", "differences": []any{"allowed: false -> true"}},
	}, {
		"level": "INFO", "msg": "decision", "logger": "decision",
		"id": "", "revision": "", "result": "error", "webhook": "mutate", "operation": "CREATE", "dryRun": false,
		"user": "alice", "tenant": "research-vision", "namespace": "vision", "apiVersion": "batch/v1", "kind": "Job",
		"name": "vit-sweep", "latencyMs": 1.5, "reinvocation": false, "error": "policy evaluation exceeded its deadline",
	}}
	assert.Equal(t, want, got, "decision lines")
}

// TestSampling: only clean allowed decisions are sampled; everything else
// is always written.
func TestSampling(t *testing.T) {
	ctx := context.Background()
	warned := allowed()
	warned.Decision.Warned = []evaluator.Violation{{Code: "w", Dimension: evaluator.DimensionQuota, Enforcement: evaluator.EnforceWarn}}
	dry := allowed()
	dry.Decision.DryRun = []evaluator.Violation{{Code: "d", Dimension: evaluator.DimensionQuota, Enforcement: evaluator.EnforceDryRun}}
	shadowDiff := allowed()
	shadowDiff.Shadow = &decisionlog.Shadow{Revision: "r2", Differences: []string{"allowed: true -> false"}}
	shadowSame := allowed()
	shadowSame.Shadow = &decisionlog.Shadow{Revision: "r2", Decision: evaluator.Decision{Allowed: true}}
	denied := allowed()
	denied.Decision.Allowed = false
	failed := allowed()
	failed.Err = errors.New("boom")

	for _, tc := range []struct {
		name  string
		entry *decisionlog.Entry
		want  bool
	}{
		{"clean allowed", allowed(), false},
		{"clean allowed, shadow agrees", shadowSame, false},
		{"warned", warned, true},
		{"dry-run violation", dry, true},
		{"shadow differs", shadowDiff, true},
		{"denied", denied, true},
		{"error", failed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, buf := newLogger(t, decisionlog.Options{Enabled: true, SampleRate: 0})
			assert.Equal(t, tc.want, l.Log(ctx, tc.entry))
			assert.Equal(t, tc.want, buf.Len() > 0)
		})
	}

	t.Run("rate 0.25 writes about a quarter, marked with the rate", func(t *testing.T) {
		l, buf := newLogger(t, decisionlog.Options{Enabled: true, SampleRate: 0.25})
		const n = 4000
		written := 0
		for range n {
			if l.Log(ctx, allowed()) {
				written++
			}
		}
		got := lines(t, buf)
		assert.Len(t, got, written)
		assert.InDelta(t, n/4, written, n/10, "written %d of %d", written, n)
		assert.Equal(t, 0.25, got[0]["sampleRate"])
	})
}

func TestDisabledAndInvalid(t *testing.T) {
	l, err := decisionlog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil), decisionlog.Options{Enabled: false, SampleRate: 1})
	require.NoError(t, err)
	assert.Nil(t, l)
	assert.False(t, l.Log(context.Background(), allowed()), "a nil Logger writes nothing")

	for _, rate := range []float64{-0.1, 1.5} {
		_, err := decisionlog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil), decisionlog.Options{Enabled: true, SampleRate: rate})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "sample rate")
	}
}

// A Job whose pod template carries a token in an env value, an argument
// and an annotation.
const secretToken = "ghp_s3cr3tT0ken"

func jobWithSecrets() map[string]any {
	var obj map[string]any
	raw := `{"apiVersion":"batch/v1","kind":"Job",
 "metadata":{"name":"j","namespace":"vision","annotations":{"ci/token":"` + secretToken + `"},
   "managedFields":[{"manager":"kubectl"}]},
 "spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"token\":\"` + secretToken + `\"}"}},
   "spec":{"containers":[{"name":"c","image":"x","args":["--token=` + secretToken + `"],"command":["run"],
     "env":[{"name":"TOKEN","value":"` + secretToken + `"},{"name":"KEY","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],
     "resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}}}`
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		panic(err)
	}
	return obj
}

func TestIncludeObjectRedacts(t *testing.T) {
	l, buf := newLogger(t, decisionlog.Options{Enabled: true, SampleRate: 1, IncludeObject: true})
	e := allowed()
	e.Object = jobWithSecrets()
	require.True(t, l.Log(context.Background(), e))
	assert.NotContains(t, buf.String(), secretToken)
	got := lines(t, buf)
	require.Len(t, got, 1)
	obj := got[0]["object"].(map[string]any)
	container := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{map[string]any{"name": "TOKEN"}, map[string]any{"name": "KEY"}}, container["env"])
	assert.NotContains(t, container, "args")
	assert.NotContains(t, container, "command")
	assert.Equal(t, map[string]any{"nvidia.com/gpu": "8"}, container["resources"].(map[string]any)["limits"], "what policies read stays")
	meta := obj["metadata"].(map[string]any)
	assert.Equal(t, map[string]any{"ci/token": decisionlog.Redacted}, meta["annotations"])
	assert.NotContains(t, meta, "managedFields")
	assert.Contains(t, e.Object["metadata"], "managedFields", "the entry's object is not modified")

	t.Run("not written unless asked", func(t *testing.T) {
		l, buf := newLogger(t, decisionlog.DefaultOptions())
		e := allowed()
		e.Object = jobWithSecrets()
		require.True(t, l.Log(context.Background(), e))
		assert.NotContains(t, buf.String(), `"object"`)
		assert.False(t, strings.Contains(buf.String(), secretToken))
	})
}

// TestRedactDropsEverySecretCarrier: fields the decision log never needs
// and that can carry secrets — probes with their headers and paths,
// lifecycle hooks, volume sources such as iSCSI, env values — are dropped
// by the allow-list, at every depth and in every role of a multi-role
// kind, while what the policies read stays.
func TestRedactDropsEverySecretCarrier(t *testing.T) {
	var obj map[string]any
	pod := `{"containers":[{"name":"c","image":"trainer:1",
	   "livenessProbe":{"httpGet":{"path":"/health?token=` + secretToken + `","httpHeaders":[{"name":"Authorization","value":"Bearer ` + secretToken + `"}]}},
	   "lifecycle":{"postStart":{"exec":{"command":["login","` + secretToken + `"]}}},
	   "env":[{"name":"TOKEN","value":"` + secretToken + `"}],
	   "resources":{"limits":{"nvidia.com/gpu":"8"}}}],
	 "volumes":[{"name":"data","iscsi":{"targetPortal":"10.0.0.1","iqn":"iqn.2026-01.example:` + secretToken + `","chapAuthSession":true}}],
	 "imagePullSecrets":[{"name":"` + secretToken + `"}],
	 "schedulerName":"volcano","priorityClassName":"train",
	 "nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"}}`
	raw := `{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"p","namespace":"llm"},
	 "spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":` + pod + `}},"Worker":{"replicas":3,"template":{"spec":` + pod + `}}}}}`
	require.NoError(t, json.Unmarshal([]byte(raw), &obj))
	out, err := json.Marshal(decisionlog.Redact(obj))
	require.NoError(t, err)
	assert.NotContains(t, string(out), secretToken)

	got := decisionlog.Redact(obj)
	for _, role := range []string{"Master", "Worker"} {
		spec := got["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)[role].(map[string]any)
		podSpec := spec["template"].(map[string]any)["spec"].(map[string]any)
		assert.Equal(t, "volcano", podSpec["schedulerName"], role)
		assert.Equal(t, "train", podSpec["priorityClassName"], role)
		assert.Equal(t, map[string]any{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, podSpec["nodeSelector"], role)
		assert.NotContains(t, podSpec, "volumes", role)
		c := podSpec["containers"].([]any)[0].(map[string]any)
		assert.Equal(t, map[string]any{"name": "c", "image": "trainer:1", "env": []any{map[string]any{"name": "TOKEN"}},
			"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "8"}}}, c, role)
	}
	assert.EqualValues(t, 3, got["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)["Worker"].(map[string]any)["replicas"])
}
