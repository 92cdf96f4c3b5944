package gang

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// ownedSpec are the PodGroup spec fields Mandate decides (those
// scheduler.PodGroup sets); other fields are left as they are.
var ownedSpec = []string{"minMember", "queue", "priorityClassName", "minResources", "networkTopology"}

// specDefaults are the values the PodGroup CRD's schema defaults an unset
// owned field to: leaving such a field unset matches its default, so the
// API server's defaulting never looks like drift.
var specDefaults = map[string]any{"queue": facts.Volcano.DefaultQueue}

// merge sets, on the stored PodGroup got, what Mandate owns of want: the
// owned spec fields, want's labels, and owner as the controlling owner
// reference (other owner references stay). It reports whether got changed.
func merge(got, want *unstructured.Unstructured, owner metav1.OwnerReference) bool {
	changed := false
	spec, _ := got.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	wantSpec, _ := want.Object["spec"].(map[string]any)
	for _, field := range ownedSpec {
		v, set := wantSpec[field]
		if !set {
			v, set = specDefaults[field]
		}
		cur, has := spec[field]
		switch {
		case set && (!has || !equality.Semantic.DeepEqual(cur, v)):
			spec[field] = v
			changed = true
		case !set && has:
			delete(spec, field)
			changed = true
		}
	}
	got.Object["spec"] = spec

	labels := got.GetLabels()
	for k, v := range want.GetLabels() {
		if cur, ok := labels[k]; !ok || cur != v {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[k] = v
			changed = true
		}
	}
	if changed {
		got.SetLabels(labels)
	}

	refs := got.GetOwnerReferences()
	i := indexOf(refs, owner)
	switch {
	case i < 0:
		refs = append(refs, owner)
		changed = true
	case !equality.Semantic.DeepEqual(refs[i], owner):
		refs[i] = owner
		changed = true
	}
	got.SetOwnerReferences(refs)
	return changed
}

// indexOf finds owner (by UID) in refs, -1 when absent.
func indexOf(refs []metav1.OwnerReference, owner metav1.OwnerReference) int {
	for i, ref := range refs {
		if ref.UID == owner.UID {
			return i
		}
	}
	return -1
}
