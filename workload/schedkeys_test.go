package workload

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchedulerKeys(t *testing.T) {
	cases := []struct {
		name          string
		manifest      string
		wantKeys      []SchedulerKey
		wantPriority  string
		wantMinPods   int
		wantInvalidIn string // non-empty: ErrInvalid whose message contains it
	}{
		{
			name:         "KAI priorityClassName label is the class asked",
			manifest:     pod(", labels: {priorityClassName: train}", "{nvidia.com/gpu: 1}"),
			wantKeys:     []SchedulerKey{{Key: "label priorityClassName", Asks: AsksPriorityClass, Value: "train"}},
			wantPriority: "train",
		},
		{
			name:          "a label and a template asking different classes contradict",
			manifest:      job("parallelism: 2", "labels: {priorityClassName: train}", "\n      priorityClassName: build"),
			wantInvalidIn: `asks for priority class "train" but the pod template's spec.priorityClassName is "build"`,
		},
		{
			name:         "the same class in both is fine",
			manifest:     job("parallelism: 2", "labels: {priorityClassName: build}", "\n      priorityClassName: build"),
			wantKeys:     []SchedulerKey{{Key: "label priorityClassName", Asks: AsksPriorityClass, Value: "build"}},
			wantPriority: "build",
		},
		{
			name:        "batch-min-member is the elastic minimum",
			manifest:    job("parallelism: 6", "annotations: {kai.scheduler/batch-min-member: '2'}", ""),
			wantKeys:    []SchedulerKey{{Key: "annotation kai.scheduler/batch-min-member", Asks: AsksGangMin, Value: "2"}},
			wantMinPods: 2,
		},
		{
			name:        "mandate.dev/min-available wins over batch-min-member",
			manifest:    job("parallelism: 6", "annotations: {kai.scheduler/batch-min-member: '2', mandate.dev/min-available: '4'}", ""),
			wantKeys:    []SchedulerKey{{Key: "annotation kai.scheduler/batch-min-member", Asks: AsksGangMin, Value: "2"}},
			wantMinPods: 4,
		},
		{
			name:     "batch-min-member beyond the gang is left to the model",
			manifest: job("parallelism: 6", "annotations: {kai.scheduler/batch-min-member: '7'}", ""),
			wantKeys: []SchedulerKey{{Key: "annotation kai.scheduler/batch-min-member", Asks: AsksGangMin, Value: "7"}},
		},
		{
			name: "a pod of a controller carries its owner's batch-min-member, not a request",
			manifest: `apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {kai.scheduler/batch-min-member: '2'}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, uid: u, controller: true}]
spec:
  containers: [{name: c, image: i}]
`,
		},
		{
			name: "queues of KAI and Volcano, template annotations included, once per value",
			manifest: `apiVersion: batch/v1
kind: Job
metadata:
  name: j
  labels: {kai.scheduler/queue: root-eng-prod}
  annotations: {scheduling.volcano.sh/queue-name: default-queue}
spec:
  template:
    metadata:
      annotations: {scheduling.volcano.sh/queue-name: default-queue}
    spec:
      containers: [{name: c, image: i}]
`,
			wantKeys: []SchedulerKey{
				{Key: "label kai.scheduler/queue", Asks: AsksQueue, Value: "root-eng-prod"},
				{Key: "annotation scheduling.volcano.sh/queue-name", Asks: AsksQueue, Value: "default-queue"},
			},
		},
		{
			name:     "a Volcano Job's queue and minAvailable",
			manifest: volcanoJob("minAvailable: 2\n  queue: shared", "{nvidia.com/gpu: 1}", "4"),
			wantKeys: []SchedulerKey{
				{Key: "spec.queue", Asks: AsksQueue, Value: "shared"},
				{Key: "spec.minAvailable", Asks: AsksGangMin, Value: "2"},
			},
			wantMinPods: 2,
		},
		{
			// The CRD defaults an unset spec.queue to "default" before
			// the webhook sees the Job: no request, whether written or not.
			name:        "a Volcano Job's default queue asks for nothing",
			manifest:    volcanoJob("minAvailable: 2\n  queue: default", "{nvidia.com/gpu: 1}", "4"),
			wantKeys:    []SchedulerKey{{Key: "spec.minAvailable", Asks: AsksGangMin, Value: "2"}},
			wantMinPods: 2,
		},
		{
			name:     "a Volcano task template's queue annotation",
			manifest: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  tasks:\n  - replicas: 1\n    template: {metadata: {annotations: {scheduling.volcano.sh/queue-name: q1}}, spec: {containers: [{name: c, image: i}]}}\n",
			wantKeys: []SchedulerKey{{Key: "annotation scheduling.volcano.sh/queue-name", Asks: AsksQueue, Value: "q1"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := normalizeString(tc.manifest)
			if tc.wantInvalidIn != "" {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrInvalid), "%v", err)
				assert.Contains(t, err.Error(), tc.wantInvalidIn)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantKeys, w.SchedulerKeys)
			assert.Equal(t, tc.wantPriority, w.PriorityClass)
			assert.Equal(t, tc.wantMinPods, w.MinPods)
		})
	}
}
