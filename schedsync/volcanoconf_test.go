package schedsync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/test/envtest"
)

func codes(ps []VolcanoProblem) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

// TestCheckVolcanoConfig: real-looking volcano-scheduler.conf files, each
// with the problems that break the promise.
func TestCheckVolcanoConfig(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		hierarchy  bool
		want       []string
	}{
		{"rendered", RenderVolcanoConfig(), true, []string{}},
		{"the chart's stock configuration never reclaims nor preempts, and shares by proportion", `
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
`, true, []string{VolcanoNoReclaim, VolcanoNoPreempt, VolcanoGangVetoOff, VolcanoNoQueueShare, VolcanoProportion}},
		{"the capacity-plugin layout of Volcano's docs keeps the promise", `
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
    arguments: {}
  - name: nodeorder
  - name: binpack
configurations:
- name: enqueue
  arguments:
    overcommit-factor: 1.2
`, false, []string{}},
		{"the same layout under nested tenants: capacity must read the parents", `
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
    arguments: {}
  - name: nodeorder
  - name: binpack
configurations:
- name: enqueue
  arguments:
    overcommit-factor: 1.2
`, true, []string{VolcanoHierarchyOff}},
		{"actions without spaces, reclaim missing", `
actions: "enqueue,allocate,preempt,backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: capacity}]
`, false, []string{VolcanoNoReclaim}},
		{"gang in a later tier: the first tier picks victims without its veto", `
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: conformance}]
- plugins: [{name: gang}, {name: predicates}, {name: capacity}]
`, false, []string{VolcanoGangNotFirst}},
		{"no gang plugin at all", `
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: conformance}]
- plugins: [{name: predicates}, {name: capacity}]
`, false, []string{VolcanoNoGang}},
		{"gang's reclaim veto turned off", `
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enableReclaimable: false
  - name: conformance
- plugins: [{name: predicates}, {name: capacity}]
`, false, []string{VolcanoGangVetoOff}},
		{"priority below the first tier, capacity's reclaim off", `
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: gang}, {name: conformance}]
- plugins:
  - name: priority
  - name: capacity
    enableReclaimable: false
`, false, []string{VolcanoNoPriority, VolcanoQueueShareReclaimOf}},
		{"not YAML", "actions: [enqueue\n", false, []string{VolcanoUnreadable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckVolcanoConfig(tc.conf, tc.hierarchy)
			assert.Equal(t, tc.want, codes(got))
			for _, p := range got {
				assert.NotEmpty(t, p.Reason)
			}
		})
	}
}

// TestParseVolcanoConfig reads the actions in order and the plugins' flags
// as Volcano does: absent is on.
func TestParseVolcanoConfig(t *testing.T) {
	c, err := ParseVolcanoConfig("actions: \" enqueue,allocate , reclaim,\"\ntiers:\n- plugins:\n  - name: gang\n    enablePreemptable: false\n")
	require.NoError(t, err)
	assert.Equal(t, []string{"enqueue", "allocate", "reclaim"}, c.ActionList())
	gang, tier := c.plugin(volcanoGang)
	assert.Equal(t, 0, tier)
	assert.False(t, enabled(gang.EnablePreemptable))
	assert.True(t, enabled(gang.EnableReclaimable))
	_, tier = c.plugin(volcanoCapacity)
	assert.Equal(t, -1, tier)
}

// TestVolcanoConfigObject: the rendered ConfigMap is where the options say
// (the chart's by default), holds only the one key, and a live one without
// it is vetted as Volcano's built-in configuration.
func TestVolcanoConfigObject(t *testing.T) {
	assert.Equal(t, envtest.VolcanoNamespace, DefaultVolcanoConfigNamespace)
	o := volcanoConfigObject(VolcanoConfigMap{}, true)
	assert.Equal(t, DefaultVolcanoConfigNamespace, o.GetNamespace())
	assert.Equal(t, DefaultVolcanoConfigName, o.GetName())
	assert.Equal(t, map[string]any{VolcanoConfigKey: RenderVolcanoConfig()}, o.Object["data"])
	o = volcanoConfigObject(VolcanoConfigMap{Namespace: "batch", Name: "sched"}, true)
	assert.Equal(t, "batch", o.GetNamespace())
	assert.Equal(t, "sched", o.GetName())

	assert.Empty(t, o.Vet(o.Unstructured))
	empty := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"other": "x"}}}
	assert.Len(t, o.Vet(empty), 1)
}
