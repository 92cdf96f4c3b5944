package scheduler

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/evaluator"
)

// TestPlacementRendersAffinity: on every scheduler and every kind, the
// placement directive becomes, on each pod template, the pool as a
// required node affinity (ANDed into the template's own terms), the
// preferred pool as a preferred node affinity, and isolation as the
// isolation label and a required pod anti-affinity against other tenants'
// pods in every namespace; rendering twice changes nothing more.
func TestPlacementRendersAffinity(t *testing.T) {
	d := loadDirectives(t)
	d.Placement = &evaluator.Placement{
		Pool: "b1", Rule: "tenants.a.placement.allowed",
		NodeSelector:  map[string][]string{"mandate.dev/leaf-block": {"b1"}},
		PreferredPool: "b1c", PreferredSelector: map[string][]string{"nvidia.com/gpu.clique": {"c1"}},
		IsolationLevel: "clique", IsolationLabel: "nvidia.com/gpu.clique", IsolationUnit: "a",
	}
	wantPool := corev1.NodeSelectorRequirement{Key: "mandate.dev/leaf-block", Operator: corev1.NodeSelectorOpIn, Values: []string{"b1"}}
	wantAnti := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "mandate.dev/tenant", Operator: metav1.LabelSelectorOpExists},
			{Key: LabelIsolation, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}},
		}},
		NamespaceSelector: &metav1.LabelSelector{},
		TopologyKey:       "nvidia.com/gpu.clique",
	}
	for _, sched := range []string{Default, Volcano, KAI} {
		for _, file := range objectFiles(t) {
			t.Run(sched+"/"+filepath.Base(file), func(t *testing.T) {
				obj, w := loadObject(t, file)
				d := d
				d.Scheduler = sched
				once := apply(t, sched, obj, w, d)
				twice := apply(t, sched, once, w, d)
				assert.Equal(t, once.Object, twice.Object, "rendering is idempotent")
				templates, err := templatesOf(once, w)
				require.NoError(t, err)
				for i, tmpl := range templates {
					var pt corev1.PodTemplateSpec
					decodeStrict(t, templateOnly(tmpl), &pt)
					require.NotNil(t, pt.Spec.Affinity, "template %s", w.Templates[i])
					na := pt.Spec.Affinity.NodeAffinity
					require.NotNil(t, na)
					require.NotNil(t, na.RequiredDuringSchedulingIgnoredDuringExecution)
					for _, term := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
						assert.Contains(t, term.MatchExpressions, wantPool, "every term of template %s is within the pool", w.Templates[i])
					}
					require.Len(t, na.PreferredDuringSchedulingIgnoredDuringExecution, 1)
					assert.Equal(t, "nvidia.com/gpu.clique", na.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Key)
					assert.Equal(t, "a", pt.Labels[LabelIsolation])
					require.NotNil(t, pt.Spec.Affinity.PodAntiAffinity)
					assert.Contains(t, pt.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, wantAnti)
				}
			})
		}
	}
}
