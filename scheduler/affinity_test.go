package scheduler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

// nodeDirectives are testdata/directives.yaml for a gang the model
// confines to one node (the example model's "node" level, tier 0).
func nodeDirectives(t *testing.T) evaluator.Directives {
	d := loadDirectives(t)
	d.RequiredLevel, d.RequiredLabel, d.RequiredTier = "node", "kubernetes.io/hostname", 0
	d.PreferredLevel, d.PreferredLabel, d.PreferredTier = "", "", 0
	return d
}

// TestVolcanoNodeLevelGolden: a required node level reaches Volcano as a
// required pod affinity among the gang's pods on kubernetes.io/hostname,
// on every pod template of a gang of more than one pod, and as nothing for
// a single pod; the goldens are in testdata/nodelevel.
func TestVolcanoNodeLevelGolden(t *testing.T) {
	d := nodeDirectives(t)
	for _, file := range objectFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			obj, w := loadObject(t, file)
			mutated := apply(t, Volcano, obj, w, d)
			got, err := yaml.Marshal(mutated.Object)
			require.NoError(t, err)
			path := filepath.Join("testdata", "nodelevel", caseName(file, Volcano)+".golden.yaml")
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -update to create it")
			assert.Equal(t, string(want), string(got), "(-want +got)")

			templates, err := templatesOf(mutated, w)
			require.NoError(t, err)
			for i, tmpl := range templates {
				var pt corev1.PodTemplateSpec
				decodeStrict(t, templateOnly(tmpl), &pt)
				if w.Pods <= 1 {
					assert.Nil(t, pt.Spec.Affinity, "template %s: one pod needs no affinity", w.Templates[i])
					continue
				}
				gang := PodGroupName(w)
				require.NotEmpty(t, gang)
				assert.Equal(t, gang, pt.Labels[LabelGang], "template %s", w.Templates[i])
				require.NotNil(t, pt.Spec.Affinity, "template %s", w.Templates[i])
				require.NotNil(t, pt.Spec.Affinity.PodAffinity, "template %s", w.Templates[i])
				terms := pt.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				require.Len(t, terms, 1, "template %s", w.Templates[i])
				assert.Equal(t, "kubernetes.io/hostname", terms[0].TopologyKey)
				assert.Equal(t, map[string]string{LabelGang: gang}, terms[0].LabelSelector.MatchLabels)
			}
			if w.Pods > 1 {
				assert.Empty(t, AdvisoryLevels(w, d), "the level reaches Volcano")
			}
			// Applying again adds no second term.
			again := apply(t, Volcano, mutated, w, d)
			assert.Equal(t, mutated.Object, again.Object)
		})
	}
}

// TestVolcanoNodeLevelKeepsUserTerms: a template's own pod affinity terms
// stay, and the gang's is added once beside them.
func TestVolcanoNodeLevelKeepsUserTerms(t *testing.T) {
	obj, w := loadObject(t, filepath.Join("testdata", "objects", "job.yaml"))
	require.Greater(t, w.Pods, 1)
	tmpl, err := templatesOf(obj, w)
	require.NoError(t, err)
	user := map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"app": "cache"}}, "topologyKey": "topology.kubernetes.io/zone"}
	tmpl[0].spec()["affinity"] = map[string]any{"podAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{user}}}
	mutated := apply(t, Volcano, obj, w, nodeDirectives(t))
	out, err := templatesOf(mutated, w)
	require.NoError(t, err)
	var pt corev1.PodTemplateSpec
	decodeStrict(t, templateOnly(out[0]), &pt)
	terms := pt.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	require.Len(t, terms, 2)
	assert.Equal(t, "topology.kubernetes.io/zone", terms[0].TopologyKey, "the user's term is kept first")
	assert.Equal(t, "kubernetes.io/hostname", terms[1].TopologyKey)
}

// TestVolcanoPreferredNodeLevel: a preferred node level (under a required
// tier Volcano does have) becomes a preferred pod affinity of weight 100.
func TestVolcanoPreferredNodeLevel(t *testing.T) {
	obj, w := loadObject(t, filepath.Join("testdata", "objects", "pytorchjob.yaml"))
	d := loadDirectives(t)
	d.PreferredLevel, d.PreferredLabel, d.PreferredTier = "node", "kubernetes.io/hostname", 0
	mutated := apply(t, Volcano, obj, w, d)
	templates, err := templatesOf(mutated, w)
	require.NoError(t, err)
	for _, tmpl := range templates {
		var pt corev1.PodTemplateSpec
		decodeStrict(t, templateOnly(tmpl), &pt)
		require.NotNil(t, pt.Spec.Affinity)
		require.Len(t, pt.Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, 1)
		pref := pt.Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0]
		assert.Equal(t, int32(AffinityWeight), pref.Weight)
		assert.Equal(t, "kubernetes.io/hostname", pref.PodAffinityTerm.TopologyKey)
		assert.Empty(t, pt.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	}
}

// TestVolcanoNodeLevelJobSchema: the Volcano Job with the pod affinity is
// accepted by Volcano's Job CRD (offline; the e2e test sends it to an API
// server).
func TestVolcanoNodeLevelJobSchema(t *testing.T) {
	obj, w := loadObject(t, filepath.Join("testdata", "objects", "volcanojob.yaml"))
	mutated := apply(t, Volcano, obj, w, nodeDirectives(t))
	assert.Empty(t, crdProblems(crdSchema(t, "batch.volcano.sh_jobs.yaml", "v1alpha1"), mutated.Object))
	_, hasTopology := mutated.Object["spec"].(map[string]any)["networkTopology"]
	assert.False(t, hasTopology, "tier 0 has no networkTopology")
}

func TestAdvisoryLevels(t *testing.T) {
	gang := workload.Workload{Kind: "Job", Pods: 4}
	unnamed := workload.Workload{Kind: "Job", Pods: 4}
	gang.Name = "train"
	unnamed.GenerateName = "train-"
	for _, tc := range []struct {
		name      string
		w         workload.Workload
		scheduler string
		required  string
		tier      int
		wantWarn  bool
	}{
		{"volcano named gang on a node", gang, Volcano, "node", 0, false},
		{"volcano unnamed gang on a node", unnamed, Volcano, "node", 0, true},
		{"volcano unnamed gang in a clique", unnamed, Volcano, "clique", 1, false},
		{"volcano single pod", workload.Workload{Kind: "Pod", Pods: 1, GenerateName: "p-"}, Volcano, "node", 0, false},
		{"kai is told through its topology", unnamed, KAI, "node", 0, false},
		{"default scheduler with a required level", gang, Default, "block", 2, true},
		{"default scheduler without a level", gang, Default, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := evaluator.Directives{Scheduler: tc.scheduler, RequiredLevel: tc.required, RequiredTier: tc.tier}
			if tc.required != "" {
				d.RequiredLabel = "some/label"
			}
			got := AdvisoryLevels(tc.w, d)
			if !tc.wantWarn {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Contains(t, got[0], tc.required)
			assert.Contains(t, got[0], "advisory")
		})
	}
}

// templateOnly is a pod template's metadata and spec (a Pod, its own
// template, also has apiVersion, kind and status).
func templateOnly(t podTemplate) map[string]any {
	return map[string]any{"metadata": t.root["metadata"], "spec": t.root["spec"]}
}
