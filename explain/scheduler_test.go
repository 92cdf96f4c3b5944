package explain_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/explain"
)

// schedulerObjects are what Volcano and Kueue say about llm-small: a
// PodGroup the scheduler cannot place and a Kueue Workload without quota.
const schedulerObjects = `
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: llm-small
  namespace: llm
  ownerReferences:
  - apiVersion: batch/v1
    kind: Job
    name: llm-small
    uid: 00000000-0000-0000-0000-000000000001
spec:
  minMember: 1
  queue: research-llm
status:
  phase: Pending
  conditions:
  - type: Unschedulable
    status: "True"
    reason: NotEnoughResources
    message: "1/1 tasks in gang unschedulable: 1 node(s) had untolerated taint"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: job-llm-small-1a2b3
  namespace: llm
  ownerReferences:
  - apiVersion: batch/v1
    kind: Job
    name: llm-small
    uid: 00000000-0000-0000-0000-000000000001
spec:
  queueName: research-llm
status:
  conditions:
  - type: QuotaReserved
    status: "False"
    reason: Pending
    message: "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu"
`

// TestSchedulerView: the PodGroup's phase and conditions and the Kueue
// Workload's conditions are shown; an Unschedulable PodGroup blocks the
// workload even when the authority model admits it, with the scheduler's
// own reason.
func TestSchedulerView(t *testing.T) {
	inv, sched := snapshot(t)
	more, err := explain.ReadSchedulerState(strings.NewReader(schedulerObjects))
	require.NoError(t, err)
	sched.Objects = append(sched.Objects, more.Objects...)
	for gvk := range more.Served {
		sched.Served[gvk] = true
	}
	ev := decider(t)
	e, err := explain.Explain(context.Background(), inv, sched, explain.Target{Kind: "job", Namespace: "llm", Name: "llm-small"},
		explain.Options{Decider: ev, Model: ev.Model(), Revision: "golden"})
	require.NoError(t, err)
	assert.False(t, e.CanRunNow)
	require.Len(t, e.Blocks, 1)
	assert.Equal(t, "PODGROUP_UNSCHEDULABLE", e.Blocks[0].Code)
	assert.Contains(t, e.Blocks[0].Message, "untolerated taint")
	kinds := map[string]explain.SchedulerObject{}
	for _, o := range e.Scheduler {
		kinds[o.Kind] = o
	}
	assert.Equal(t, "Pending", kinds["PodGroup"].Phase)
	assert.Equal(t, []string{"QuotaReserved=False (Pending): couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu"}, kinds["Workload"].Conditions)
	assert.Equal(t, "Open", kinds["Queue"].Phase)
	assert.Equal(t, "nvidia.com/gpu: 256", kinds["Queue"].Capacity)
	assert.Equal(t, "nvidia.com/gpu: 80", kinds["Queue"].Allocated)
	var text bytes.Buffer
	require.NoError(t, explain.WriteText(&text, e))
	assert.Contains(t, text.String(), "PodGroup llm-small (scheduling.volcano.sh): Pending")
	assert.Contains(t, text.String(), "Workload job-llm-small-1a2b3 (kueue.x-k8s.io)")
}
