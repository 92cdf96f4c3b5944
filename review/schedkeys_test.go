package review_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

// schedKeysResult is what a golden file of testdata/schedkeys records: the
// decision about a manifest that sets schedulers' keys itself, and the
// object as it would be stored.
type schedKeysResult struct {
	Allowed    bool                  `json:"allowed"`
	Violations []evaluator.Violation `json:"violations,omitempty"`
	Warnings   []string              `json:"warnings,omitempty"`
	Directives struct {
		Scheduler     string `json:"scheduler"`
		Queue         string `json:"queue"`
		PriorityClass string `json:"priorityClass"`
		Preemptible   bool   `json:"preemptible"`
		GangMin       int    `json:"gangMin"`
	} `json:"directives"`
	Mutated map[string]any `json:"mutated,omitempty"`
}

// TestUsersSchedulerKeysGolden decides the manifests of testdata/schedkeys
// with the example authority model and cluster: a scheduler key the user
// set is kept when the model allows it, and overridden only with a
// warning naming the key, the value asked and the value set; a kind the
// tenant's scheduler cannot run is denied with the reason. Run with
// -update to rewrite the golden files.
func TestUsersSchedulerKeysGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/schedkeys/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.yaml") {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			got := reviewSchedKeys(t, file)
			raw, err := yaml.Marshal(got)
			require.NoError(t, err)
			golden := strings.TrimSuffix(file, ".yaml") + ".golden.yaml"
			if *updateGolden {
				require.NoError(t, os.WriteFile(golden, raw, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create it")
			assert.Equal(t, string(want), string(raw), "(-want +got)")
		})
	}
}

func reviewSchedKeys(t *testing.T, file string) schedKeysResult {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(raw, &obj.Object))
	res, err := exampleReviewer(t).Review(context.Background(), obj, evaluator.Request{Operation: "CREATE", User: "alice", DryRun: true})
	require.NoError(t, err)
	var out schedKeysResult
	out.Allowed, out.Violations, out.Warnings = res.Decision.Allowed, res.Decision.Violations, res.Decision.Warnings
	d := res.Decision.Directives
	out.Directives.Scheduler, out.Directives.Queue, out.Directives.PriorityClass = d.Scheduler, d.Queue, d.PriorityClass
	out.Directives.Preemptible, out.Directives.GangMin = d.Preemptible, d.GangMin
	if res.Mutated != nil {
		out.Mutated = res.Mutated.Object
	}
	return out
}

// TestUsersSchedulerKeys states the acceptance of each golden case, so a
// careless -update cannot bless a regression.
func TestUsersSchedulerKeys(t *testing.T) {
	t.Run("KAI priorityClassName label train is kept and preemptible", func(t *testing.T) {
		got := reviewSchedKeys(t, "testdata/schedkeys/kai-pod-priority-label.yaml")
		require.True(t, got.Allowed, "%v", got.Violations)
		assert.Equal(t, "train", got.Directives.PriorityClass)
		assert.True(t, got.Directives.Preemptible)
		m := &unstructured.Unstructured{Object: got.Mutated}
		assert.Equal(t, "train", m.GetLabels()[scheduler.LabelKAIPriorityClass])
		assert.Equal(t, "preemptible", m.GetLabels()["kai.scheduler/preemptibility"])
		assert.Equal(t, "train", got.Mutated["spec"].(map[string]any)["priorityClassName"])
		assert.Empty(t, got.Warnings)
	})
	t.Run("batch-min-member 2 of 6 stays 2", func(t *testing.T) {
		got := reviewSchedKeys(t, "testdata/schedkeys/kai-job-batch-min-member.yaml")
		require.True(t, got.Allowed, "%v", got.Violations)
		assert.Equal(t, 2, got.Directives.GangMin)
		m := &unstructured.Unstructured{Object: got.Mutated}
		assert.Equal(t, "2", m.GetAnnotations()[scheduler.AnnotationKAIBatchMinMember])
		assert.Empty(t, got.Warnings)
	})
	t.Run("an overridden queue is named with both values", func(t *testing.T) {
		got := reviewSchedKeys(t, "testdata/schedkeys/kai-job-queue-override.yaml")
		require.True(t, got.Allowed, "%v", got.Violations)
		m := &unstructured.Unstructured{Object: got.Mutated}
		assert.Equal(t, "product", m.GetLabels()[scheduler.LabelKAIQueue])
		assert.Equal(t, []string{`SCHEDULER_KEY_OVERRIDDEN: label kai.scheduler/queue asks for queue "root-eng-prod", but the authority model sets queue "product" for tenant product`}, got.Warnings)
	})
	t.Run("a Volcano Job in a KAI tenant is denied with the reason", func(t *testing.T) {
		got := reviewSchedKeys(t, "testdata/schedkeys/volcano-job-in-kai-tenant.yaml")
		assert.False(t, got.Allowed)
		assert.Nil(t, got.Mutated, "never half-rendered")
		require.Len(t, got.Violations, 1)
		assert.Equal(t, scheduler.CodeNotRenderable, got.Violations[0].Code)
		assert.Contains(t, got.Violations[0].Message, "scheduler is kai")
	})
	t.Run("Volcano queue and preemptable overrides are named", func(t *testing.T) {
		got := reviewSchedKeys(t, "testdata/schedkeys/volcano-pod-queue-preemptable.yaml")
		require.True(t, got.Allowed, "%v", got.Violations)
		assert.Contains(t, got.Warnings, `SCHEDULER_KEY_OVERRIDDEN: annotation scheduling.volcano.sh/queue-name asks for queue "default-queue", but the authority model sets queue "research" for tenant research`)
		assert.Contains(t, got.Warnings, `SCHEDULER_KEY_OVERRIDDEN: volcano.sh/preemptable=true asks to be preemptible, but the authority model makes build work of tenant research non-preemptible`)
	})
	t.Run("a Volcano Job's CRD-defaulted queue is no request", func(t *testing.T) {
		got := reviewSchedKeys(t, "testdata/schedkeys/volcano-job-defaulted-queue.yaml")
		require.True(t, got.Allowed, "%v", got.Violations)
		assert.Equal(t, "research", got.Mutated["spec"].(map[string]any)["queue"])
		assert.Empty(t, got.Warnings)
	})
	t.Run("a Volcano Job keeps its minAvailable", func(t *testing.T) {
		got := reviewSchedKeys(t, "testdata/schedkeys/volcano-job-queue.yaml")
		require.True(t, got.Allowed, "%v", got.Violations)
		assert.Equal(t, 2, got.Directives.GangMin)
		assert.Equal(t, int64(2), got.Mutated["spec"].(map[string]any)["minAvailable"])
		assert.Equal(t, []string{`SCHEDULER_KEY_OVERRIDDEN: spec.queue asks for queue "shared", but the authority model sets queue "research" for tenant research`}, got.Warnings)
	})
}
