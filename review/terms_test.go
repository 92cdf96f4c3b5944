package review

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

const termsPyTorchJob = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: detr, namespace: vision}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: pytorch, image: detr, resources: {limits: {nvidia.com/gpu: "2"}}}
`

// TestChangedTermsOfAnOlderAdmission: a workload admitted before Mandate
// rendered the one-node pod affinity is not taken to have removed it when
// it is updated; an edit of a term it was told (its queue) still is.
func TestChangedTermsOfAnOlderAdmission(t *testing.T) {
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(termsPyTorchJob), &obj.Object))
	w, err := workload.Normalize(obj)
	require.NoError(t, err)
	d := evaluator.Directives{Scheduler: "volcano", Queue: "research-vision", PriorityClass: "train", GangMin: 2,
		RequiredLevel: "node", RequiredLabel: "kubernetes.io/hostname"}
	admitted, err := scheduler.Render(obj, w, d)
	require.NoError(t, err)
	// As an older Mandate stored it: no gang label, no pod affinity.
	template := admitted.Object["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)["Worker"].(map[string]any)["template"].(map[string]any)
	delete(template["spec"].(map[string]any), "affinity")
	delete(template["metadata"].(map[string]any)["labels"].(map[string]any), scheduler.LabelGang)

	s := &Service{}
	relabelled := admitted.DeepCopy()
	relabelled.SetLabels(map[string]string{"team": "cv"})
	terms, err := s.ChangedTerms(admitted, relabelled)
	require.NoError(t, err)
	assert.Empty(t, terms, "the affinity an older Mandate never rendered is not the client's edit")

	requeued := admitted.DeepCopy()
	template = requeued.Object["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)["Worker"].(map[string]any)["template"].(map[string]any)
	template["metadata"].(map[string]any)["annotations"].(map[string]any)[scheduler.AnnotationQueueName] = "other"
	terms, err = s.ChangedTerms(admitted, requeued)
	require.NoError(t, err)
	assert.Equal(t, []string{"/spec/pytorchReplicaSpecs/Worker/template/metadata/annotations/scheduling.volcano.sh~1queue-name"}, terms)

	// Admitted by this Mandate: removing the affinity is an edit.
	current, err := scheduler.Render(obj, w, d)
	require.NoError(t, err)
	stripped := current.DeepCopy()
	template = stripped.Object["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)["Worker"].(map[string]any)["template"].(map[string]any)
	delete(template["spec"].(map[string]any), "affinity")
	terms, err = s.ChangedTerms(current, stripped)
	require.NoError(t, err)
	assert.Equal(t, []string{"/spec/pytorchReplicaSpecs/Worker/template/spec/affinity"}, terms)
}
