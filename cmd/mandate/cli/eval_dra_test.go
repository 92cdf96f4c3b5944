package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const (
	draCluster = "../../../examples/cluster-dra.yaml"
	draGang    = "../../../examples/workloads/10-llm-dra-gang.yaml"
)

// twinGang is 10-llm-dra-gang.yaml's Job asking for nvidia.com/gpu in
// place of its claim.
const twinGang = `apiVersion: batch/v1
kind: Job
metadata: {name: dra-pretrain, namespace: llm}
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      priorityClassName: train
      containers:
        - name: train
          image: registry.example/llama-train:3.1
          resources: {limits: {nvidia.com/gpu: "8"}}
`

// nodesOnly is the example cluster's nodes and namespaces, no pod: the
// cluster-dra.yaml cluster as allocatable publishes its GPUs.
func nodesOnly(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(exampleCluster)
	require.NoError(t, err)
	var keep []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var head struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		if head.Kind != "Pod" {
			keep = append(keep, doc)
		}
	}
	p := filepath.Join(t.TempDir(), "nodes.yaml")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(keep, "\n---\n")), 0o600))
	return p
}

type gangView struct {
	Allowed      bool
	Warnings     []string
	Directives   map[string]any
	Explanations []struct{ Dimension, Verdict, Limit, Current string }
}

func evalGang(t *testing.T, file, cluster string) gangView {
	t.Helper()
	code, out, errText := run(t, "eval", "-f", file, "--cluster", cluster, "-o", "json")
	require.Equal(t, exitAdmitted, code, errText)
	var v gangView
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}

// TestEvalDRAGangAsItsTwin: the 2×8 Job claiming its GPUs through a
// ResourceClaimTemplate of the same file, on the cluster whose GPUs DRA
// ResourceSlices publish, is decided as its twin asking for nvidia.com/gpu
// on the cluster whose nodes publish them as allocatable: same decision,
// directives, quota and placement domain, and no DRA_UNCHECKED warning.
func TestEvalDRAGangAsItsTwin(t *testing.T) {
	dra := evalGang(t, draGang, draCluster)
	twin := evalGang(t, manifest(t, twinGang), nodesOnly(t))
	require.True(t, dra.Allowed)
	require.Empty(t, dra.Warnings)
	require.Equal(t, twin.Directives, dra.Directives)
	require.Equal(t, twin.Explanations, dra.Explanations)
	var topo string
	for _, e := range dra.Explanations {
		if e.Dimension == "topology" {
			topo = e.Current
		}
	}
	require.Contains(t, topo, "fits in clique zone-a/s1/b1/b1-c0")
}

// TestEvalDRAGangNeverFits: a claim larger than any node of the DRA
// cluster offers is denied never-fits, its GPUs counted from the template.
func TestEvalDRAGangNeverFits(t *testing.T) {
	b, err := os.ReadFile(draGang)
	require.NoError(t, err)
	huge := strings.Replace(string(b), "count: 8", "count: 9", 1)
	code, out, _ := run(t, "eval", "-f", manifest(t, huge), "--cluster", draCluster, "-o", "json")
	require.Equal(t, exitDenied, code)
	require.Contains(t, out, "TOPOLOGY_NEVER_FITS")
}
