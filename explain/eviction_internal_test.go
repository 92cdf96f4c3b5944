package explain

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/scheduler"
)

// TestEvictionNamesTheRule: the rule that protects a workload or makes it a
// victim comes from the directives Mandate recorded on it (or, before its
// admission, those decided now), rendered from its facts: the tenant's
// guarantee and what its non-preemptible work holds, the class and value,
// and how its scheduler keeps the rule.
func TestEvictionNamesTheRule(t *testing.T) {
	p, err := evaluator.LoadFS(policies.FS, "embedded")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	m := ev.Model()
	// platform: 8 GPUs guaranteed, all held by its non-preemptible work.
	h := holders{model: m, byTenant: map[string][]holder{
		"platform": {{name: "Job ci/a", tenant: "platform", gpus: 8}, {name: "Job ci/b", tenant: "platform", gpus: 4, preemptible: true}},
	}}
	e := &Explanation{Workload: audit.WorkloadRef{Tenant: "platform"}}
	recorded := func(d evaluator.Directives) *unstructured.Unstructured {
		marks, err := scheduler.Marks(d)
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAnnotations(map[string]string{scheduler.AnnotationDirectives: marks})
		return u
	}
	for _, tc := range []struct {
		name      string
		d         evaluator.Directives
		code, msg string
		evictable bool
	}{
		{"guaranteed on the default scheduler: the guard", evaluator.Directives{Scheduler: "default", PriorityClass: "build"},
			NotEvictableGuaranteed, "not evictable: non-preemptible build work within tenant platform's guarantee (8 of 8 nvidia.com/gpu); Mandate's eviction guard refuses its eviction by the default scheduler", false},
		{"guaranteed on Volcano: its preemptable key", evaluator.Directives{Scheduler: "volcano", PriorityClass: "inference"},
			NotEvictableGuaranteed, `not evictable: non-preemptible inference work within tenant platform's guarantee (8 of 8 nvidia.com/gpu); Volcano never evicts it: its annotation volcano.sh/preemptable is "false"`, false},
		{"guaranteed on KAI: its preemptibility label", evaluator.Directives{Scheduler: "kai", PriorityClass: "build"},
			NotEvictableGuaranteed, `not evictable: non-preemptible build work within tenant platform's guarantee (8 of 8 nvidia.com/gpu); KAI never evicts it: its label kai.scheduler/preemptibility is "non-preemptible"`, false},
		{"guaranteed on Kueue: the nominal quota", evaluator.Directives{Scheduler: "kueue", PriorityClass: "build"},
			NotEvictableGuaranteed, "not evictable: non-preemptible build work within tenant platform's guarantee (8 of 8 nvidia.com/gpu); Kueue never reclaims it: it runs within its queue's nominal quota, the guarantee", false},
		{"borrowed", evaluator.Directives{Scheduler: "default", PriorityClass: "inference-borrowed", Tier: "inference", Preemptible: true},
			EvictableBorrowed, "evictable before any guaranteed work: borrowed beyond tenant platform's guarantee of 8 nvidia.com/gpu (class inference-borrowed, value 99)", true},
		{"a borrowed gang on KAI goes whole", evaluator.Directives{Scheduler: "kai", PriorityClass: "build-borrowed", Tier: "build", Preemptible: true, GangMin: 4},
			EvictableBorrowed, "evictable before any guaranteed work: borrowed beyond tenant platform's guarantee of 8 nvidia.com/gpu (class build-borrowed, value 98); its gang of 4 goes whole", true},
		{"a borrowed gang on Volcano is never broken", evaluator.Directives{Scheduler: "volcano", PriorityClass: "build-borrowed", Tier: "build", Preemptible: true, GangMin: 4},
			NotEvictableGang, "not evictable while it runs at its gang minimum of 4: Volcano never breaks a gang (its gang plugin vetoes every victim below the minimum), though its build work is preemptible (class build-borrowed, value 98)", false},
		{"a preemptible tier", evaluator.Directives{Scheduler: "kai", PriorityClass: "train", Preemptible: true},
			EvictablePreemptibleTier, "evictable first: preemptible tier train (class train, value 50), below the borrowed band and every guaranteed tier", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := evictionOf(recorded(tc.d), nil, e, h)
			require.NotNil(t, got)
			assert.Equal(t, tc.code, got.Code)
			assert.Equal(t, tc.msg, got.Message)
			assert.Equal(t, tc.evictable, got.Evictable)
			assert.True(t, got.Recorded)
			assert.Equal(t, int64(8), got.Guaranteed)
			assert.Equal(t, 8, got.Held)
		})
	}

	t.Run("not admitted yet: decided now, and said so", func(t *testing.T) {
		got := evictionOf(&unstructured.Unstructured{Object: map[string]any{}}, &evaluator.Directives{Scheduler: "default", PriorityClass: "build"}, e, h)
		require.NotNil(t, got)
		assert.False(t, got.Recorded)
		assert.Contains(t, got.Message, "(as it would be admitted now)")
	})
	t.Run("denied: nothing to say", func(t *testing.T) {
		assert.Nil(t, evictionOf(&unstructured.Unstructured{Object: map[string]any{}}, nil, e, h))
	})
	t.Run("the recorded directives win over those decided now", func(t *testing.T) {
		got := evictionOf(recorded(evaluator.Directives{Scheduler: "default", PriorityClass: "build-borrowed", Tier: "build", Preemptible: true}),
			&evaluator.Directives{Scheduler: "default", PriorityClass: "build"}, e, h)
		assert.Equal(t, EvictableBorrowed, got.Code)
	})
}
