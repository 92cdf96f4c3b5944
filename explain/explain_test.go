package explain_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/policies"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixtureFiles are the example cluster and the pending workloads of each
// blocking kind (testdata), the objects a live test creates too.
var fixtureFiles = []string{"../examples/cluster.yaml", "testdata/pending.yaml", "testdata/fragmented.yaml", "testdata/queues.yaml"}

// Cases are the pending workloads of the fixture and what must block each:
// the rule, its dimension, and the exit status explain gives.
var Cases = []struct {
	Target        explain.Target
	WantCode      string
	WantDimension string
}{
	{explain.Target{Kind: "job", Namespace: "platform", Name: "ci-ceiling"}, "QUOTA_CEILING_BUSY", "quota"},
	{explain.Target{Kind: "job", Namespace: "llm", Name: "pretrain-13b"}, "TOPOLOGY_NEVER_FITS", "topology"},
	{explain.Target{Kind: "pytorchjob", Namespace: "llm", Name: "llama-finetune"}, "TOPOLOGY_WAITS", "topology"},
	{explain.Target{Kind: "job", Namespace: "llm", Name: "gb200-eval"}, "TOPOLOGY_NEVER_FITS", "topology"},
	{explain.Target{Kind: "job", Namespace: "vision", Name: "vit-sweep-lr"}, "QUEUE_CLOSED", "scheduler"},
	{explain.Target{Kind: "job", Namespace: "product", Name: "rerank-distill"}, "QUEUE_MISSING", "scheduler"},
	{explain.Target{Kind: "job", Namespace: "vision", Name: "detr-urgent"}, "PRIORITY_NOT_ALLOWED", "priority"},
	{explain.Target{Kind: "job", Namespace: "llm", Name: "llm-small"}, "", ""},
}

func snapshot(t *testing.T) (*inventory.Inventory, *explain.SchedulerState) {
	t.Helper()
	var all bytes.Buffer
	for _, f := range fixtureFiles {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all.Write(b)
		all.WriteString("\n---\n")
	}
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	require.NoError(t, os.WriteFile(path, all.Bytes(), 0o600))
	inv, err := inventory.ReadSnapshot(path)
	require.NoError(t, err)
	inv.Source = "snapshot"
	sched, err := explain.ReadSchedulerState(bytes.NewReader(all.Bytes()))
	require.NoError(t, err)
	return inv, sched
}

func decider(t *testing.T) *evaluator.Evaluator {
	t.Helper()
	p, err := evaluator.LoadFS(policies.FS, "embedded")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	return ev
}

// TestExplainGolden: on the example cluster with pending workloads of each
// blocking kind, explain names the rule that holds each, with its limit and
// current value and the change that would unblock it; the text matches the
// golden file.
func TestExplainGolden(t *testing.T) {
	inv, sched := snapshot(t)
	ev := decider(t)
	for _, tc := range Cases {
		t.Run(tc.Target.Name, func(t *testing.T) {
			e, err := explain.Explain(context.Background(), inv, sched, tc.Target, explain.Options{
				Decider: ev, Model: ev.Model(), Revision: "golden",
			})
			require.NoError(t, err)
			var got bytes.Buffer
			require.NoError(t, explain.WriteText(&got, e))
			golden(t, filepath.Join("testdata", "golden", tc.Target.Name+".txt"), got.Bytes())
			CheckExplanation(t, e, tc.WantCode, tc.WantDimension)
		})
	}
}

// CheckExplanation asserts what every explanation of a case must show.
func CheckExplanation(t *testing.T, e *explain.Explanation, wantCode, wantDimension string) {
	t.Helper()
	if wantCode == "" {
		assert.True(t, e.CanRunNow, "%+v", e.Blocks)
		assert.Empty(t, e.Blocks)
		return
	}
	assert.False(t, e.CanRunNow)
	require.NotEmpty(t, e.Blocks)
	b := e.Blocks[0]
	assert.Equal(t, wantCode, b.Code)
	assert.Equal(t, wantDimension, b.Dimension)
	assert.NotEmpty(t, b.Limit, "the limit is shown")
	assert.NotEmpty(t, b.Current, "the current value is shown")
	assert.NotEmpty(t, b.Unblock, "the change that unblocks it is shown")
	assert.NotContains(t, b.Message+b.Current, "()", "a message never names nothing")
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./explain -update to write it")
	assert.Equal(t, string(want), string(got))
}

// TestUnknownWorkloadIsBadInput: a workload that does not exist is an
// ErrBadTarget (exit 2), not a blocked one.
func TestUnknownWorkloadIsBadInput(t *testing.T) {
	inv, sched := snapshot(t)
	ev := decider(t)
	_, err := explain.Explain(context.Background(), inv, sched, explain.Target{Kind: "job", Namespace: "llm", Name: "nope"},
		explain.Options{Decider: ev, Model: ev.Model()})
	require.ErrorIs(t, err, explain.ErrBadTarget)
}
