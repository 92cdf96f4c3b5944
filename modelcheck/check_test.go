package modelcheck_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/topology"
)

// exampleFile is the example organisation's model, as shipped.
var exampleFile = filepath.Join("..", "policies", "mandate", "model", "data.json")

// example reads the shipped model as OPA reads data (numbers as
// json.Number).
func example(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(exampleFile)
	require.NoError(t, err)
	return decodeJSON(t, b)
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	require.NoError(t, dec.Decode(&doc))
	return doc
}

// obj is the object at keys below m.
func obj(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = m[k].(map[string]any)
	}
	return m
}

func TestExampleModelPasses(t *testing.T) {
	problems := modelcheck.Check(example(t))
	assert.Empty(t, problems, "the shipped example model has no problems")
}

// One failing model per check, each the example with one edit: the
// problem names the JSON path of what is wrong, and the check that found it.
var cases = []struct {
	name      string
	edit      func(m map[string]any)
	wantPath  string
	wantCheck string
	wantMsg   string
}{
	{
		name: "child allowed outside its parent's pool",
		edit: func(m map[string]any) {
			obj(m, "topology")["pools"] = map[string]any{
				"b1": map[string]any{"level": "block", "domains": []any{"b1"}},
				"b2": map[string]any{"level": "block", "domains": []any{"b2"}},
			}
			obj(m, "tenants", "research")["placement"] = map[string]any{"allowed": "b1"}
			obj(m, "tenants", "research-llm")["placement"] = map[string]any{"allowed": "b2"}
		},
		wantPath:  "tenants.research-llm.placement.allowed",
		wantCheck: "placement",
		wantMsg:   "is allowed pool b2, which is not within pool b1 that research confines it to",
	},
	{
		name: "placement names an unknown pool",
		edit: func(m map[string]any) {
			obj(m, "tenants", "product")["placement"] = map[string]any{"classes": map[string]any{"inference": "serving"}}
		},
		wantPath:  "tenants.product.placement.classes.inference",
		wantCheck: "placement",
		wantMsg:   `names pool "serving", which topology.pools does not define`,
	},
	{
		name: "pool of an unknown level",
		edit: func(m map[string]any) {
			obj(m, "topology")["pools"] = map[string]any{"r1": map[string]any{"level": "rack", "domains": []any{"r1"}}}
		},
		wantPath:  "topology.pools.r1.level",
		wantCheck: "placement",
		wantMsg:   `level "rack" is not a level of the topology`,
	},
	{
		name: "isolation narrower than the parent's",
		edit: func(m map[string]any) {
			obj(m, "tenants", "research")["placement"] = map[string]any{"isolation": "block"}
			obj(m, "tenants", "research-llm")["placement"] = map[string]any{"isolation": "node"}
		},
		wantPath:  "tenants.research-llm.placement.isolation",
		wantCheck: "placement",
		wantMsg:   "narrower than the block isolation it inherits from research",
	},
	{
		name: "misspelt quota key",
		edit: func(m map[string]any) {
			obj(m, "tenants", "platform", "quota")["nvidia.com/gpu"] = map[string]any{"guarenteed": 8, "ceiling": 16}
		},
		wantPath:  `tenants.platform.quota["nvidia.com/gpu"].guarenteed`,
		wantCheck: "schema",
		wantMsg:   `unknown key "guarenteed": did you mean "guaranteed"?`,
	},
	{
		name: "quota without a guarantee",
		edit: func(m map[string]any) {
			obj(m, "tenants", "platform", "quota")["nvidia.com/gpu"] = map[string]any{"ceiling": 16}
		},
		wantPath:  `tenants.platform.quota["nvidia.com/gpu"].guaranteed`,
		wantCheck: "schema",
		wantMsg:   `required key "guaranteed" is missing`,
	},
	{
		name:      "quota of the wrong type",
		edit:      func(m map[string]any) { obj(m, "tenants", "platform", "quota", "nvidia.com/gpu")["ceiling"] = "16" },
		wantPath:  `tenants.platform.quota["nvidia.com/gpu"].ceiling`,
		wantCheck: "schema",
		wantMsg:   "want integer",
	},
	{
		name:      "misspelt top-level key",
		edit:      func(m map[string]any) { m["enforcment"] = m["enforcement"]; delete(m, "enforcement") },
		wantPath:  "enforcment",
		wantCheck: "schema",
		wantMsg:   `did you mean "enforcement"?`,
	},
	{
		name:      "tenant name no namespace label can carry",
		edit:      func(m map[string]any) { obj(m, "tenants")["Research_Vision"] = map[string]any{"parent": "research"} },
		wantPath:  "tenants.Research_Vision",
		wantCheck: "schema",
		wantMsg:   `key "Research_Vision" is not allowed here`,
	},
	{
		name:      "tier without preemptible",
		edit:      func(m map[string]any) { delete(obj(m, "priorities", "build"), "preemptible") },
		wantPath:  "priorities.build.preemptible",
		wantCheck: "schema",
		wantMsg:   `required key "preemptible" is missing`,
	},
	{
		name:      "unknown parent",
		edit:      func(m map[string]any) { obj(m, "tenants", "platform")["parent"] = "helics" },
		wantPath:  "tenants.platform.parent",
		wantCheck: "hierarchy",
		wantMsg:   `parent "helics" is not a tenant of the model`,
	},
	{
		name:      "cycle of parents",
		edit:      func(m map[string]any) { obj(m, "tenants", "helix")["parent"] = "research-llm" },
		wantPath:  "tenants.helix.parent",
		wantCheck: "hierarchy",
		wantMsg:   "tenants helix → research-llm → research → helix form a cycle",
	},
	{
		name: "hierarchy deeper than the limit",
		edit: func(m map[string]any) {
			parent := "research-vision" // 3 deep: research-vision, research, helix
			for i := 4; i <= model.MaxDepth+1; i++ {
				name := fmt.Sprintf("vision-%d", i)
				obj(m, "tenants")[name] = map[string]any{"parent": parent}
				parent = name
			}
		},
		wantPath:  fmt.Sprintf("tenants.vision-%d.parent", model.MaxDepth+1),
		wantCheck: "hierarchy",
		wantMsg:   fmt.Sprintf("is %d levels deep", model.MaxDepth+1),
	},
	{
		name: "guarantee above ceiling",
		edit: func(m map[string]any) {
			obj(m, "tenants", "platform", "quota")["nvidia.com/gpu"] = map[string]any{"guaranteed": 24, "ceiling": 16}
		},
		wantPath:  `tenants.platform.quota["nvidia.com/gpu"].guaranteed`,
		wantCheck: "quota",
		wantMsg:   "tenant platform guarantees 24 nvidia.com/gpu, above its ceiling of 16",
	},
	{
		name: "children guarantee more than their parent",
		edit: func(m map[string]any) {
			obj(m, "tenants", "research-vision", "quota", "nvidia.com/gpu")["guaranteed"] = 40
		},
		wantPath:  `tenants.research.quota["nvidia.com/gpu"].guaranteed`,
		wantCheck: "quota",
		wantMsg:   "the tenants under research guarantee 136 nvidia.com/gpu together (research-llm 96, research-vision 40), more than the 128 research guarantees",
	},
	{
		name: "children's guarantees per resource",
		edit: func(m map[string]any) {
			obj(m, "tenants", "product", "quota", "nvidia.com/mig-1g.10gb")["guaranteed"] = 57
			obj(m, "tenants", "product", "quota", "nvidia.com/mig-1g.10gb")["ceiling"] = 57
		},
		wantPath:  `tenants.helix.quota["nvidia.com/mig-1g.10gb"].guaranteed`,
		wantCheck: "quota",
		wantMsg:   "guarantee 57 nvidia.com/mig-1g.10gb together (product 57), more than the 56 helix guarantees",
	},
	{
		name: "product guarantee above its ceiling",
		edit: func(m map[string]any) {
			obj(m, "tenants", "product", "quota", "nvidia.com/gpu", "products")["NVIDIA-B200"] = map[string]any{"guaranteed": 8, "ceiling": 4}
		},
		wantPath:  `tenants.product.quota["nvidia.com/gpu"].products.NVIDIA-B200.guaranteed`,
		wantCheck: "quota",
		wantMsg:   "tenant product guarantees 8 NVIDIA-B200 nvidia.com/gpu, above its ceiling of 4 for that product",
	},
	{
		name: "product ceiling above the resource's",
		edit: func(m map[string]any) {
			obj(m, "tenants", "product", "quota", "nvidia.com/gpu", "products")["NVIDIA-B200"] = map[string]any{"guaranteed": 8, "ceiling": 200}
		},
		wantPath:  `tenants.product.quota["nvidia.com/gpu"].products.NVIDIA-B200.ceiling`,
		wantCheck: "quota",
		wantMsg:   "ceiling of 200 NVIDIA-B200 nvidia.com/gpu is above its ceiling of 160 nvidia.com/gpu for every product together",
	},
	{
		name: "products guarantee more than their resource",
		edit: func(m map[string]any) {
			obj(m, "tenants", "product", "quota", "nvidia.com/gpu", "products")["NVIDIA-B200"] = map[string]any{"guaranteed": 16, "ceiling": 32}
		},
		wantPath:  `tenants.product.quota["nvidia.com/gpu"].products`,
		wantCheck: "quota",
		wantMsg:   "tenant product guarantees 136 nvidia.com/gpu per product together (NVIDIA-B200 16, NVIDIA-H100-80GB-HBM3 120), more than the 128 it guarantees of the resource",
	},
	{
		name: "children guarantee more of a product than their parent",
		edit: func(m map[string]any) {
			obj(m, "tenants", "helix", "quota", "nvidia.com/gpu")["products"] = map[string]any{"NVIDIA-B200": map[string]any{"guaranteed": 4, "ceiling": 64}}
		},
		wantPath:  `tenants.helix.quota["nvidia.com/gpu"].products.NVIDIA-B200.guaranteed`,
		wantCheck: "quota",
		wantMsg:   "the tenants under helix guarantee 8 NVIDIA-B200 nvidia.com/gpu together (product 8), more than the 4 helix guarantees",
	},
	{
		name: "misspelt product quota key",
		edit: func(m map[string]any) {
			obj(m, "tenants", "product", "quota", "nvidia.com/gpu", "products")["NVIDIA-B200"] = map[string]any{"guaranteed": 8, "cieling": 32}
		},
		wantPath:  `tenants.product.quota["nvidia.com/gpu"].products.NVIDIA-B200.cieling`,
		wantCheck: "schema",
		wantMsg:   "",
	},
	{
		name: "unknown priority class of a tenant",
		edit: func(m map[string]any) {
			obj(m, "tenants", "platform")["priorityClasses"] = []any{"build", "bulid-preemptible"}
		},
		wantPath:  "tenants.platform.priorityClasses[1]",
		wantCheck: "priority",
		wantMsg:   `priority class "bulid-preemptible" is not a tier of the model`,
	},
	{
		name:      "unknown class default",
		edit:      func(m map[string]any) { obj(m, "classDefaults")["batch"] = "batch" },
		wantPath:  "classDefaults.batch",
		wantCheck: "priority",
		wantMsg:   `priority class "batch" is not a tier of the model (priorities: build, build-preemptible, inference, train)`,
	},
	{
		name:      "unknown class in a preemption rule",
		edit:      func(m map[string]any) { obj(m, "preemption", "mayPreempt")["build"] = []any{"trian"} },
		wantPath:  "preemption.mayPreempt.build[0]",
		wantCheck: "priority",
		wantMsg:   `priority class "trian" is not a tier of the model`,
	},
	{
		name: "child's classes beyond its parent's",
		edit: func(m map[string]any) {
			obj(m, "tenants", "research-vision")["priorityClasses"] = []any{"train", "inference"}
		},
		wantPath:  "tenants.research-vision.priorityClasses[1]",
		wantCheck: "priority",
		wantMsg:   "tenant research-vision may use inference, but its parent research may not (research's: train, build-preemptible, build)",
	},
	{
		name: "child's classes beyond its parent's inherited ones",
		edit: func(m map[string]any) {
			obj(m, "tenants")["llm-serving"] = map[string]any{"parent": "research-llm", "priorityClasses": []any{"inference"}}
		},
		wantPath:  "tenants.llm-serving.priorityClasses[0]",
		wantCheck: "priority",
		wantMsg:   "its parent research-llm may not (research-llm inherits research's: train, build-preemptible, build)",
	},
	{
		name:      "lower tier preempts a higher one",
		edit:      func(m map[string]any) { obj(m, "preemption", "mayPreempt")["train"] = []any{"build-preemptible"} },
		wantPath:  "preemption.mayPreempt.train[0]",
		wantCheck: "preemption",
		wantMsg:   "train (50) may preempt build-preemptible (75), a tier as high or higher",
	},
	{
		name:      "a preemptible tier above a non-preemptible one",
		edit:      func(m map[string]any) { obj(m, "priorities", "build-preemptible")["value"] = 110 },
		wantPath:  "priorities.build-preemptible.value",
		wantCheck: "preemption",
		wantMsg:   "preemptible tier build-preemptible (110) is not below every non-preemptible tier (the lowest is 100)",
	},
	{
		name:      "no room for the borrowed band",
		edit:      func(m map[string]any) { obj(m, "priorities", "build-preemptible")["value"] = 99 },
		wantPath:  "priorities.build.value",
		wantCheck: "preemption",
		wantMsg:   "borrowed class build-borrowed (98) is not above every preemptible tier (the highest is 99)",
	},
	{
		name: "a tier named as another tier's borrowed class",
		edit: func(m map[string]any) {
			obj(m, "priorities")["build-borrowed"] = map[string]any{"value": 60, "preemptible": true, "description": "x"}
		},
		wantPath:  "priorities.build-borrowed",
		wantCheck: "preemption",
		wantMsg:   "tier build-borrowed has the name of tier build's borrowed class",
	},
	{
		name:      "a borrowed value among the guaranteed tiers",
		edit:      func(m map[string]any) { obj(m, "priorities", "inference")["borrowedValue"] = 110 },
		wantPath:  "priorities.inference.borrowedValue",
		wantCheck: "preemption",
		wantMsg:   "borrowed class inference-borrowed (110) is not below every non-preemptible tier (the lowest is 100)",
	},
	{
		name:      "preemption of a non-preemptible tier",
		edit:      func(m map[string]any) { obj(m, "preemption", "mayPreempt")["inference"] = []any{"train", "build"} },
		wantPath:  "preemption.mayPreempt.inference[1]",
		wantCheck: "preemption",
		wantMsg:   "inference may preempt build, but build is not preemptible (priorities.build.preemptible is false)",
	},
	{
		name:      "device class mapped to a non-GPU resource",
		edit:      func(m map[string]any) { obj(m, "deviceClasses")["gpu.nvidia.com"] = "cpu" },
		wantPath:  `deviceClasses["gpu.nvidia.com"]`,
		wantCheck: "deviceClasses",
		wantMsg:   `DeviceClass gpu.nvidia.com counts as "cpu", which is not a GPU resource`,
	},
	{
		name: "device memory of zero MiB",
		edit: func(m map[string]any) {
			m["gpuMemoryMiB"] = map[string]any{"nvidia.com/gpu": map[string]any{"products": map[string]any{"NVIDIA-H100-80GB-HBM3": 0}}}
		},
		wantPath:  `gpuMemoryMiB["nvidia.com/gpu"].products.NVIDIA-H100-80GB-HBM3`,
		wantCheck: "schema",
		wantMsg:   "",
	},
	{
		name: "device memory of a MIG profile",
		edit: func(m map[string]any) {
			m["gpuMemoryMiB"] = map[string]any{"nvidia.com/mig-1g.10gb": map[string]any{"default": 10240}}
		},
		wantPath:  `gpuMemoryMiB["nvidia.com/mig-1g.10gb"]`,
		wantCheck: "gpuMemory",
		wantMsg:   "nvidia.com/mig-1g.10gb is a MIG profile: its slices are not shared by memory",
	},
	{
		name:      "device memory of a resource that is no GPU",
		edit:      func(m map[string]any) { m["gpuMemoryMiB"] = map[string]any{"memory": map[string]any{"default": 10240}} },
		wantPath:  `gpuMemoryMiB.memory`,
		wantCheck: "gpuMemory",
		wantMsg:   `"memory" is not a GPU resource`,
	},
	{
		name:      "unknown scheduler",
		edit:      func(m map[string]any) { obj(m, "tenants", "research")["scheduler"] = "lsf" },
		wantPath:  "tenants.research.scheduler",
		wantCheck: "scheduler",
		wantMsg:   `unknown scheduler "lsf": known schedulers are volcano, kai, kueue, default and slurm`,
	},
	{
		name:      "two tenants in one queue",
		edit:      func(m map[string]any) { obj(m, "tenants", "research-vision")["queue"] = "research-llm" },
		wantPath:  "tenants.research-vision.queue",
		wantCheck: "scheduler",
		wantMsg:   `goes to volcano queue "research-llm", which is tenant research-llm's queue too`,
	},
	{
		name:      "rule requiring an unknown level",
		edit:      func(m map[string]any) { rule(m, 1)["required"] = "rack"; delete(rule(m, 1), "preferred") },
		wantPath:  "topology.rules[1].required",
		wantCheck: "topology",
		wantMsg:   `level "rack" is not a level of the topology (topology.levels: zone, spine, block, clique, node)`,
	},
	{
		name:      "rule preferring an unknown level",
		edit:      func(m map[string]any) { rule(m, 2)["preferred"] = "nvlink" },
		wantPath:  "topology.rules[2].preferred",
		wantCheck: "topology",
		wantMsg:   `level "nvlink" is not a level of the topology`,
	},
	{
		name:      "rule preferring a wider level",
		edit:      func(m map[string]any) { rule(m, 1)["preferred"] = "zone" },
		wantPath:  "topology.rules[1].preferred",
		wantCheck: "topology",
		wantMsg:   "preferred level zone is wider than the required clique",
	},
	{
		name:      "unbounded rule before others",
		edit:      func(m map[string]any) { delete(rule(m, 3), "maxGPUs") },
		wantPath:  "topology.rules[3]",
		wantCheck: "topology",
		wantMsg:   "a rule without maxGPUs covers every gang, so the rules after it never apply",
	},
	{
		name:      "rules out of order",
		edit:      func(m map[string]any) { rule(m, 2)["maxGPUs"] = 16 },
		wantPath:  "topology.rules[2].maxGPUs",
		wantCheck: "topology",
		wantMsg:   "maxGPUs 16 is not above the 32 of topology.rules[1]",
	},
	{
		name:      "no rule for the largest gangs",
		edit:      func(m map[string]any) { rule(m, 4)["maxGPUs"] = 65536 },
		wantPath:  "topology.rules[4].maxGPUs",
		wantCheck: "topology",
		wantMsg:   "the last rule stops at 65536 GPUs",
	},
	{
		name:      "two levels of one name",
		edit:      func(m map[string]any) { level(m, 2)["name"] = "spine" },
		wantPath:  "topology.levels[2].name",
		wantCheck: "topology",
		wantMsg:   `level "spine" is topology.levels[1] too`,
	},
	{
		name: "more levels than the cluster model takes",
		edit: func(m map[string]any) {
			levels := obj(m, "topology")["levels"].([]any)
			for i := len(levels); i <= topology.MaxLevels; i++ {
				levels = append(levels, map[string]any{"name": fmt.Sprintf("l%d", i), "nodeLabel": fmt.Sprintf("example.com/l%d", i)})
			}
			obj(m, "topology")["levels"] = levels
		},
		wantPath:  "topology.levels",
		wantCheck: "topology",
		wantMsg:   fmt.Sprintf("%d levels: the cluster model takes at most %d", topology.MaxLevels+1, topology.MaxLevels),
	},
	{
		name:      "two levels reading one node label",
		edit:      func(m map[string]any) { level(m, 4)["nodeLabel"] = "nvidia.com/gpu.clique" },
		wantPath:  "topology.levels[4].nodeLabel",
		wantCheck: "topology",
		wantMsg:   `node label "nvidia.com/gpu.clique" is topology.levels[3]'s too`,
	},
	{
		name:      "unknown enforcement action",
		edit:      func(m map[string]any) { obj(m, "enforcement")["quota"] = "block" },
		wantPath:  "enforcement.quota",
		wantCheck: "enforcement",
		wantMsg:   `"block" is not an enforcement action: use deny, warn, dryrun`,
	},
	{
		name:      "enforcement of an unknown dimension",
		edit:      func(m map[string]any) { obj(m, "enforcement")["quotas"] = "warn" },
		wantPath:  "enforcement.quotas",
		wantCheck: "enforcement",
		wantMsg:   `"quotas" is neither a dimension`,
	},
}

func rule(m map[string]any, i int) map[string]any {
	return obj(m, "topology")["rules"].([]any)[i].(map[string]any)
}

func level(m map[string]any, i int) map[string]any {
	return obj(m, "topology")["levels"].([]any)[i].(map[string]any)
}

func TestEachCheckCatchesItsFailingModel(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := example(t)
			tc.edit(m)
			// As OPA would read the edited file.
			b, err := json.Marshal(m)
			require.NoError(t, err)
			problems := modelcheck.Check(decodeJSON(t, b))

			var at []modelcheck.Problem
			for _, p := range problems {
				if p.Path == tc.wantPath {
					at = append(at, p)
				}
			}
			require.NotEmpty(t, at, "no problem at %s; got:\n%s", tc.wantPath, render(problems))
			found := false
			for _, p := range at {
				if p.Check == tc.wantCheck && strings.Contains(p.Message, tc.wantMsg) {
					found = true
				}
			}
			assert.True(t, found, "no %s problem at %s saying %q; got:\n%s", tc.wantCheck, tc.wantPath, tc.wantMsg, render(problems))
			// The rendered problem leads with the path.
			assert.True(t, strings.HasPrefix(at[0].String(), tc.wantPath+": "))
		})
	}
}

// Every check of the checker has a failing model above.
func TestEveryCheckHasAFailingModel(t *testing.T) {
	tested := map[string]bool{}
	for _, tc := range cases {
		tested[tc.wantCheck] = true
	}
	for _, name := range modelcheck.CheckNames() {
		assert.True(t, tested[name], "check %s has no failing model in cases", name)
	}
	assert.True(t, tested["schema"])
}

func TestAllProblemsAreReported(t *testing.T) {
	m := example(t)
	obj(m, "tenants", "platform")["parent"] = "helics"
	obj(m, "enforcement")["quota"] = "block"
	obj(m, "tenants", "platform", "quota", "nvidia.com/gpu")["guarenteed"] = 8
	b, err := json.Marshal(m)
	require.NoError(t, err)
	got := paths(modelcheck.Check(decodeJSON(t, b)))
	assert.Equal(t, []string{
		"enforcement.quota",
		"tenants.platform.parent",
		`tenants.platform.quota["nvidia.com/gpu"].guarenteed`,
	}, got, "every problem, once, sorted by path")
}

func TestACycleIsReportedOnceAndAlone(t *testing.T) {
	m := example(t)
	obj(m, "tenants", "helix")["parent"] = "research-llm"
	problems := modelcheck.Check(m)
	require.Len(t, problems, 1, render(problems))
	assert.Equal(t, "tenants.helix.parent", problems[0].Path)
}

func TestAValueTheSchemaAndACheckRejectIsReportedOnce(t *testing.T) {
	m := example(t)
	obj(m, "tenants", "research")["scheduler"] = "lsf"
	problems := modelcheck.Check(m)
	require.Len(t, problems, 1, render(problems))
	assert.Equal(t, "scheduler", problems[0].Check)
}

func TestMissingModel(t *testing.T) {
	problems := modelcheck.CheckData(map[string]any{"mandate": map[string]any{}})
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Message, "no mandate.model")

	err := modelcheck.Validate(map[string]any{"mandate": map[string]any{"model": map[string]any{"tenants": map[string]any{}}}})
	require.ErrorIs(t, err, modelcheck.ErrInvalidModel)
	assert.Contains(t, err.Error(), `priorities: required key "priorities" is missing`)
	assert.NoError(t, modelcheck.Validate(map[string]any{"mandate": map[string]any{"model": example(t)}}))
}

func paths(problems []modelcheck.Problem) []string {
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = p.Path
	}
	return out
}

func render(problems []modelcheck.Problem) string {
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = "  " + p.Check + " " + p.String()
	}
	return strings.Join(lines, "\n")
}

// Against a cluster, a pool no node is in and a pool's guarantee above
// its GPUs are problems; a pool that holds its guarantee is not.
func TestCheckPoolsAgainstTheCluster(t *testing.T) {
	m := model.Model{Topology: model.Topology{
		Levels: []topology.Level{{Name: "block", NodeLabel: "block"}, {Name: "node", NodeLabel: "kubernetes.io/hostname"}},
		Pools: map[string]model.NodePool{
			"b1":    {Level: "block", Domains: []string{"b1"}, Guaranteed: map[string]int{"nvidia.com/gpu": 16}},
			"b2":    {Level: "block", Domains: []string{"b2"}, Guaranteed: map[string]int{"nvidia.com/gpu": 32}},
			"ghost": {NodeLabels: map[string]string{"pool": "ghost"}},
		},
	}}
	snap, err := topology.FromFixture(topology.Fixture{
		Levels: m.Topology.Levels,
		Pools:  m.PoolSelectors(),
		Nodes: []topology.FixtureNode{
			{Name: "n1", Labels: map[string]string{"block": "b1"}, Allocatable: map[string]int{"nvidia.com/gpu": 8}},
			{Name: "n2", Labels: map[string]string{"block": "b1"}, Allocatable: map[string]int{"nvidia.com/gpu": 8}},
			{Name: "n3", Labels: map[string]string{"block": "b2"}, Allocatable: map[string]int{"nvidia.com/gpu": 8}},
		},
	})
	require.NoError(t, err)
	var got []string
	for _, p := range modelcheck.CheckPools(m, snap) {
		assert.Equal(t, "placement", p.Check)
		got = append(got, p.Path+": "+p.Message)
	}
	assert.Equal(t, []string{
		`topology.pools.b2.guaranteed["nvidia.com/gpu"]: pool b2 guarantees 32 nvidia.com/gpu, but its healthy nodes have only 8`,
		"topology.pools.ghost: no node of the cluster with nvidia.com/gpu is in pool ghost",
	}, got)
}
