package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// explainSnapshot is the example cluster with the explain fixture's pending
// workloads and scheduler queues, as one snapshot file.
func explainSnapshot(t *testing.T) string {
	t.Helper()
	var all []byte
	for _, f := range []string{"../../../examples/cluster.yaml", "../../../explain/testdata/pending.yaml",
		"../../../explain/testdata/fragmented.yaml", "../../../explain/testdata/queues.yaml"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(append(all, b...), "\n---\n"...)
	}
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	require.NoError(t, os.WriteFile(path, all, 0o600))
	return path
}

// TestExplainExitStatus: 0 when the workload can run now, 1 when something
// blocks it, 2 on bad input.
func TestExplainExitStatus(t *testing.T) {
	snap := explainSnapshot(t)
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{name: "runnable", args: []string{"job/llm-small", "-n", "llm"}, wantCode: exitAdmitted, wantOut: "CAN RUN NOW"},
		{name: "blocked", args: []string{"job/ci-ceiling", "-n", "platform"}, wantCode: exitDenied, wantOut: "QUOTA_CEILING_BUSY"},
		{name: "vcjob short kind and json", args: []string{"jobs/vit-sweep-lr", "-n", "vision", "-o", "json"}, wantCode: exitDenied, wantOut: `"code": "QUEUE_CLOSED"`},
		{name: "no such workload", args: []string{"job/nope", "-n", "llm"}, wantCode: exitBadInput},
		{name: "not KIND/NAME", args: []string{"ci-ceiling", "-n", "platform"}, wantCode: exitBadInput},
		{name: "two arguments", args: []string{"job/a", "job/b"}, wantCode: exitBadInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := run(t, append([]string{"explain", "--snapshot", snap}, tc.args...)...)
			assert.Equal(t, tc.wantCode, code, "%s%s", out, errText)
			assert.Contains(t, out, tc.wantOut)
		})
	}
}

// TestKubectlPluginName: invoked as kubectl-mandate the binary is mandate.
func TestKubectlPluginName(t *testing.T) {
	assert.True(t, pluginName("/usr/local/bin/kubectl-mandate"))
	assert.True(t, pluginName(`kubectl-mandate.exe`))
	assert.False(t, pluginName("/usr/local/bin/mandate"))
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}
