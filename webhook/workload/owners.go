package workload

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// JobGVK is batch/v1 Job.
var JobGVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

// GangOwnerKinds are the governed kinds whose pods form a gang decided
// with their owner: the webhook admits those pods with the owner's
// directives, and an audit decides them through it.
var GangOwnerKinds = []schema.GroupVersionKind{JobGVK, PyTorchJobGVK, VolcanoJobGVK}

// IsGangOwner reports whether ref names one of GangOwnerKinds.
func IsGangOwner(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && slices.Contains(GangOwnerKinds, gv.WithKind(ref.Kind))
}
