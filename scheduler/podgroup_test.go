package scheduler

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

func TestPodGroup(t *testing.T) {
	owner := metav1.OwnerReference{
		APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "llama-70b-pretrain",
		UID: "0f8e2a8c-1b9d-4a77-9d6e-3c2b1a0f9e8d", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	_, pytorch := loadObject(t, filepath.Join("testdata", "objects", "pytorchjob.yaml"))
	_, job := loadObject(t, filepath.Join("testdata", "objects", "job.yaml"))
	_, cpu := loadObject(t, filepath.Join("testdata", "objects", "volcanojob.yaml"))
	cases := []struct {
		name            string
		w               workload.Workload
		d               evaluator.Directives
		minResources    corev1.ResourceList
		wantMinMember   int32
		wantGPUs        string
		wantMode        vcscheduling.NetworkTopologyMode
		wantTier        int
		wantQueue       string
		wantPriority    string
		wantNoTopology  bool
		wantNoResources bool
	}{
		{
			name:          "hard topology and directive gang minimum",
			w:             pytorch,
			d:             evaluator.Directives{Queue: "team-a", PriorityClass: "train", GangMin: 2, RequiredLevel: "block", RequiredTier: 2, PreferredLevel: "clique", PreferredTier: 1},
			wantMinMember: 2, wantGPUs: "16", wantMode: vcscheduling.HardNetworkTopologyMode, wantTier: 2,
			wantQueue: "team-a", wantPriority: "train",
		},
		{
			name:          "soft topology, whole gang",
			w:             job,
			d:             evaluator.Directives{PreferredLevel: "rack", PreferredTier: 1},
			wantMinMember: 4, wantGPUs: "4", wantMode: vcscheduling.SoftNetworkTopologyMode, wantTier: 1,
		},
		{
			name:          "given minResources win",
			w:             job,
			d:             evaluator.Directives{GangMin: 3},
			minResources:  corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3"), corev1.ResourceCPU: resource.MustParse("1500m")},
			wantMinMember: 3, wantGPUs: "3", wantNoTopology: true,
		},
		{
			name:          "smallest pods count first",
			w:             cpu, // 1 CPU-only launcher + 2 workers × 4 GPUs
			d:             evaluator.Directives{GangMin: 2},
			wantMinMember: 2, wantGPUs: "4", wantNoTopology: true,
		},
		{
			name:          "required level without tier leaves topology out",
			w:             job,
			d:             evaluator.Directives{RequiredLevel: "block"},
			wantMinMember: 4, wantGPUs: "4", wantNoTopology: true,
		},
		{
			name:            "CPU-only gang",
			w:               workload.Workload{Kind: "Job", APIVersion: "batch/v1", Name: "cpu", Namespace: "ns", Pods: 3, Roles: []workload.Role{{Name: "main", Replicas: 3}}},
			wantMinMember:   3,
			wantNoTopology:  true,
			wantNoResources: true,
		},
	}
	podGroups := crdSchema(t, "scheduling.volcano.sh_podgroups.yaml", "v1beta1")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := PodGroup(tc.w, tc.d, owner, tc.minResources)

			assert.Empty(t, crdProblems(podGroups, u.Object), "against the Volcano v1.15.1 PodGroup CRD")
			var pg vcscheduling.PodGroup
			decodeStrict(t, u.Object, &pg)

			assert.Equal(t, PodGroupAPIVersion, pg.APIVersion)
			assert.Equal(t, PodGroupKind, pg.Kind)
			assert.Equal(t, PodGroupName(tc.w), pg.Name)
			assert.Equal(t, tc.w.Namespace, pg.Namespace)
			assert.Equal(t, []metav1.OwnerReference{owner}, pg.OwnerReferences)
			assert.Equal(t, tc.wantMinMember, pg.Spec.MinMember)
			assert.Equal(t, tc.wantQueue, pg.Spec.Queue)
			assert.Equal(t, tc.wantPriority, pg.Spec.PriorityClassName)
			if tc.wantNoResources {
				assert.Nil(t, pg.Spec.MinResources)
			} else {
				require.NotNil(t, pg.Spec.MinResources)
				gpus := (*pg.Spec.MinResources)["nvidia.com/gpu"]
				assert.Equal(t, tc.wantGPUs, gpus.String())
			}
			if tc.wantNoTopology {
				assert.Nil(t, pg.Spec.NetworkTopology)
				return
			}
			require.NotNil(t, pg.Spec.NetworkTopology)
			assert.Equal(t, tc.wantMode, pg.Spec.NetworkTopology.Mode)
			assert.Equal(t, ptr.To(tc.wantTier), pg.Spec.NetworkTopology.HighestTierAllowed)
		})
	}
}

// TestVolcanoJobMatchesCRD: a Volcano Job the adapter mutated still
// validates against the real Job CRD and decodes into the typed Job.
func TestVolcanoJobMatchesCRD(t *testing.T) {
	jobs := crdSchema(t, "batch.volcano.sh_jobs.yaml", "v1alpha1")
	obj, w := loadObject(t, filepath.Join("testdata", "objects", "volcanojob.yaml"))
	for _, d := range []evaluator.Directives{
		loadDirectives(t),
		{Queue: "q", PreferredLevel: "rack", PreferredTier: 3, GangMin: 3},
		{},
	} {
		mutated := apply(t, Volcano, obj, w, d)
		assert.Empty(t, crdProblems(jobs, mutated.Object))
		var job vcbatch.Job
		decodeStrict(t, mutated.Object, &job)
	}
}

func TestPodGroupName(t *testing.T) {
	long := strings.Repeat("a", 80)
	cases := []struct {
		name     string
		w        workload.Workload
		want     string
		wantHash bool
	}{
		{"named workload", workload.Workload{Kind: "PyTorchJob", Name: "llama"}, "mandate-pytorchjob-llama", false},
		{"pod joins its owner", workload.Workload{Kind: "Pod", GenerateName: "vllm-", Owner: &workload.Owner{Kind: "ReplicaSet", Name: "vllm-7d9f"}}, "mandate-replicaset-vllm-7d9f", false},
		{"no name yet", workload.Workload{Kind: "Pod", GenerateName: "x-"}, "", false},
		{"dots are replaced and hashed", workload.Workload{Kind: "Job", Name: "a.b"}, "mandate-job-a-b-", true},
		{"long names are cut and hashed", workload.Workload{Kind: "Job", Name: long}, "mandate-job-aaaa", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PodGroupName(tc.w)
			if !tc.wantHash {
				assert.Equal(t, tc.want, got)
				return
			}
			assert.True(t, strings.HasPrefix(got, tc.want), "%q has prefix %q", got, tc.want)
			assert.LessOrEqual(t, len(got), 63)
			assert.Empty(t, validation.IsDNS1123Label(got))
			assert.Equal(t, got, PodGroupName(tc.w), "stable")
		})
	}
	// Names that clean up alike still get distinct groups.
	assert.NotEqual(t,
		PodGroupName(workload.Workload{Kind: "Job", Name: "a.b"}),
		PodGroupName(workload.Workload{Kind: "Job", Name: "a-b"}))
	assert.NotEqual(t,
		PodGroupName(workload.Workload{Kind: "Job", Name: long + "x"}),
		PodGroupName(workload.Workload{Kind: "Job", Name: long + "y"}))
}

// TestCRDCheckCatchesMistakes keeps the offline CRD check honest: it must
// reject what the API server would.
func TestCRDCheckCatchesMistakes(t *testing.T) {
	podGroups := crdSchema(t, "scheduling.volcano.sh_podgroups.yaml", "v1beta1")
	cases := []struct {
		name    string
		spec    map[string]any
		wantMsg string
	}{
		{"bad mode", map[string]any{"networkTopology": map[string]any{"mode": "medium"}}, "spec.networkTopology.mode"},
		{"negative minMember", map[string]any{"minMember": int64(-1)}, "spec.minMember"},
		{"bad queue name", map[string]any{"queue": "Team A"}, "spec.queue"},
		{"bad quantity", map[string]any{"minResources": map[string]any{"nvidia.com/gpu": "lots"}}, "minResources"},
		{"misspelt field", map[string]any{"minMembers": int64(2)}, ".spec.minMembers: unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := map[string]any{
				"apiVersion": PodGroupAPIVersion, "kind": PodGroupKind,
				"metadata": map[string]any{"name": "x"}, "spec": tc.spec,
			}
			problems := crdProblems(podGroups, obj)
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), tc.wantMsg)
		})
	}
}
