package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/openreports"
	"github.com/mandate-dev/mandate/test/fixtures"
)

const (
	auditRaw      = "../../../audit/testdata/snapshot.yaml"
	auditAdmitted = "../../../audit/testdata/admitted.yaml"
)

// candidateBundle builds the embedded policies with a promotion's edits
// (research-vision's ceiling cut to 4 GPUs, build taken from product,
// research-llm on another queue) into a bundle file.
func candidateBundle(t *testing.T) string {
	t.Helper()
	dir := fixtures.PolicyDir(t, func(model map[string]any) {
		tenants := model["tenants"].(map[string]any)
		tenants["research-vision"].(map[string]any)["quota"] = map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 4, "ceiling": 4}}
		tenants["product"].(map[string]any)["priorityClasses"] = []any{"train", "build-preemptible", "inference"}
		tenants["research-llm"].(map[string]any)["queue"] = "llm-v2"
	})
	b, err := bundles.Build(context.Background(), dir, bundles.BuildOptions{Revision: "candidate-7"})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "candidate.tar.gz")
	require.NoError(t, bundles.WriteFile(path, b))
	return path
}

type auditJSON struct {
	Revision  string
	Summary   map[string]int
	Workloads []struct {
		Workload   struct{ Kind, Namespace, Name string }
		Verdict    string
		Violations []struct {
			Code, Dimension, Message string
		}
		Differences []string
	}
}

func TestAuditCandidateBundleOnSnapshot(t *testing.T) {
	code, out, errText := run(t, "audit", "--bundle", candidateBundle(t), "--snapshot", auditAdmitted, "-o", "json")
	require.Equal(t, exitDenied, code, errText)
	var rep auditJSON
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "candidate-7", rep.Revision)
	assert.Equal(t, map[string]int{"workloads": 7, "denied": 2, "changed": 1, "unchanged": 4, "warned": 1}, rep.Summary)
	denied := map[string]string{}
	for _, w := range rep.Workloads {
		if w.Verdict != "would-deny" {
			continue
		}
		require.Len(t, w.Violations, 1, w.Workload.Name)
		assert.NotEmpty(t, w.Violations[0].Message)
		denied[w.Workload.Kind+" "+w.Workload.Namespace+"/"+w.Workload.Name] = w.Violations[0].Dimension + "/" + w.Violations[0].Code
	}
	assert.Equal(t, map[string]string{
		"Job product/finetune": "priority/PRIORITY_NOT_ALLOWED",
		"Pod vision/vit-0":     "quota/QUOTA_EXCEEDS_CEILING",
	}, denied)
}

func TestAuditDefaultPolicyDeniesNothingAdmitted(t *testing.T) {
	for _, snapshot := range []string{auditRaw, auditAdmitted} {
		code, out, errText := run(t, "audit", "--snapshot", snapshot)
		require.Equal(t, exitAdmitted, code, errText)
		assert.Contains(t, out, "against revision embedded")
		if snapshot == auditAdmitted {
			assert.Contains(t, out, "7 workloads: 0 would be denied, 0 changed, 7 unchanged\n")
		} else {
			assert.Contains(t, out, "7 workloads: 0 would be denied, 7 changed, 0 unchanged\n")
		}
	}
}

func TestAuditBadInput(t *testing.T) {
	dir := t.TempDir()
	notYAML := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(notYAML, []byte("kind: [unclosed\n"), 0o600))
	notBundle := filepath.Join(dir, "bundle.tar.gz")
	require.NoError(t, os.WriteFile(notBundle, []byte("not a tarball"), 0o600))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: []\n"), 0o600))
	key := filepath.Join(dir, "key.pem")
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
	unsigned := candidateBundle(t)

	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing snapshot", []string{"--snapshot", filepath.Join(dir, "nope.yaml")}, "unable to read cluster snapshot"},
		{"snapshot not YAML", []string{"--snapshot", notYAML}, "is not valid YAML or JSON"},
		{"no workloads source", nil, "exactly one of --snapshot FILE or --kubeconfig FILE"},
		{"two workloads sources", []string{"--snapshot", auditRaw, "--kubeconfig", kubeconfig}, "exactly one of --snapshot FILE or --kubeconfig FILE"},
		{"two candidates", []string{"--snapshot", auditRaw, "--bundle", unsigned, "--policies", dir}, "--bundle and --policies both name a candidate"},
		{"unreadable bundle", []string{"--snapshot", auditRaw, "--bundle", notBundle}, notBundle},
		{"missing bundle", []string{"--snapshot", auditRaw, "--bundle", filepath.Join(dir, "none.tar.gz")}, "none.tar.gz"},
		{"unsigned bundle with a key", []string{"--snapshot", auditRaw, "--bundle", unsigned, "--bundle-verification-key", key}, "not signed"},
		{"key without bundle", []string{"--snapshot", auditRaw, "--bundle-verification-key", key}, "--bundle-verification-key verifies a --bundle"},
		{"key id without key", []string{"--snapshot", auditRaw, "--bundle", unsigned, "--bundle-verification-key-id", "prod"}, "need --bundle-verification-key"},
		{"scope without key", []string{"--snapshot", auditRaw, "--bundle", unsigned, "--bundle-scope", "mandate"}, "need --bundle-verification-key"},
		{"bad output", []string{"--snapshot", auditRaw, "-o", "xml"}, `invalid argument "xml" for "-o, --output" flag: want table, json, yaml`},
		{"kubeconfig without cluster", []string{"--kubeconfig", kubeconfig}, "unable to read kubeconfig"},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(dir, "none")}, "unable to read kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errText := run(t, append([]string{"audit"}, tc.args...)...)
			assert.Equal(t, exitBadInput, code, errText)
			assert.Contains(t, errText, tc.wantErr)
		})
	}
}

// TestAuditOpenReports: -o openreports prints one Report per namespace
// with a violation, a result per workload and violated rule, in a List
// that the OpenReports types read back.
func TestAuditOpenReports(t *testing.T) {
	code, out, errText := run(t, "audit", "--bundle", candidateBundle(t), "--snapshot", auditAdmitted, "-o", "openreports")
	require.Equal(t, exitDenied, code, errText)
	var list struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Items      []v1alpha1.Report
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &list), out)
	assert.Equal(t, "List", list.Kind)
	got := map[string]string{}
	for _, r := range list.Items {
		assert.Equal(t, "openreports.io/v1alpha1", r.APIVersion)
		assert.Equal(t, "Report", r.Kind)
		assert.Equal(t, openreports.ReportName, r.Name)
		assert.Equal(t, len(r.Results), r.Summary.Fail, r.Namespace)
		for _, res := range r.Results {
			require.Len(t, res.Subjects, 1)
			assert.Equal(t, r.Namespace, res.Subjects[0].Namespace)
			assert.Equal(t, "candidate-7", res.Properties[openreports.PropertyRevision])
			if res.Severity == "high" {
				got[res.Subjects[0].Kind+" "+r.Namespace+"/"+res.Subjects[0].Name] = res.Category + "/" + res.Rule
			}
		}
	}
	assert.Equal(t, map[string]string{
		"Job product/finetune": "priority/PRIORITY_NOT_ALLOWED",
		"Pod vision/vit-0":     "quota/QUOTA_EXCEEDS_CEILING",
	}, got)
}
