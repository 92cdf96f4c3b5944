package topologytest

import (
	"fmt"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// ReferenceTenants is the authority model's tenants (the model's
// "tenants" document) for the reference cluster's n tenant namespaces: an
// organisation "org" (80,000 GPUs guaranteed, 100,000 ceiling; classes
// train, build-preemptible, build; Volcano) of ten divisions (8,000 and
// 20,000), each tenant-NNNN under division-(NNNN mod 10) with 64 and 512.
// The benchmarks put it in place of the default model's tenants.
func ReferenceTenants(n int) map[string]any {
	classes := []any{"train", "build-preemptible", "build"}
	quota := func(g, c int) map[string]any {
		return map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": g, "ceiling": c}}
	}
	tenants := map[string]any{
		"org": map[string]any{"parent": "", "quota": quota(80000, 100000), "priorityClasses": classes, "scheduler": facts.Volcano.Name},
	}
	for d := range 10 {
		tenants[fmt.Sprintf("division-%d", d)] = map[string]any{"parent": "org", "quota": quota(8000, 20000)}
	}
	for i := range n {
		tenants[fmt.Sprintf("tenant-%04d", i)] = map[string]any{"parent": fmt.Sprintf("division-%d", i%10), "quota": quota(64, 512)}
	}
	return tenants
}
