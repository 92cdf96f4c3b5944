package e2e

import (
	"context"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/simulate/replay"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
)

// testClusterNodes is how many GPU nodes (fixtures.GPUNode) the test
// cluster has.
const testClusterNodes = 8

// simulateScenario plays sc through `mandate simulate`'s engine
// (replay.RunScenario) under the policies of dir, the same edited policies
// the e2e test's Mandate serves, on the test cluster's GPU nodes (when sc
// names no nodes of its own).
func simulateScenario(t *testing.T, dir string, sc replay.Scenario) replay.ScenarioOutcome {
	t.Helper()
	ctx := context.Background()
	policy, err := evaluator.LoadPaths([]string{dir}, "agreement")
	if err != nil {
		t.Fatalf("load the policies of %s for the simulation: %v", dir, err)
	}
	ev, err := evaluator.New(ctx, policy, evaluator.Options{})
	if err != nil {
		t.Fatalf("evaluator for the simulation: %v", err)
	}
	if len(sc.Supply.Nodes) == 0 {
		for i := range testClusterNodes {
			sc.Supply.Nodes = append(sc.Supply.Nodes, fixtures.GPUNode(i))
		}
	}
	out, err := replay.RunScenario(ctx, sc, replay.Options{Decider: ev, Model: ev.Model(), Revision: "agreement"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// simulationAgrees (issue 32): the simulation of sc under the policies of
// dir runs, after the last arrival, the jobs running and has evicted the
// jobs evicted, as the real scheduler did: the same victims, and the same
// work kept. Names are the scenario's jobs (a real pod or Job by its
// name; a starting pod of sc.Supply as namespace/name).
func simulationAgrees(t *testing.T, dir string, sc replay.Scenario, running, evicted []string) {
	t.Helper()
	out := simulateScenario(t, dir, sc)
	simRunning, simEvicted := out.Final()
	running, evicted = sorted(running), sorted(evicted)
	if !slices.Equal(simRunning, running) || !slices.Equal(simEvicted, evicted) {
		t.Errorf("mandate simulate disagrees with the real scheduler: it runs %v and evicted %v, the scheduler runs %v and evicted %v; simulated timeline %v",
			simRunning, simEvicted, running, evicted, out.Timeline)
		return
	}
	t.Logf("mandate simulate agrees with the real scheduler: running %v, evicted %v", running, evicted)
}

// podJob is pod, as the test creates it (before Mandate's webhook
// mutates it), as a job of one pod of the simulation: its namespace is its
// tenant's own, named after it, as in the test cluster.
func podJob(pod *corev1.Pod) replay.Job {
	return replay.Job{Name: pod.Name, Tenant: pod.Namespace, Pods: 1, PriorityClass: pod.Spec.PriorityClassName,
		GPUsPerPod: int(topology.PodGPURequests(pod)[topology.DefaultGPUResource])}
}

// sorted is names sorted, never nil (as ScenarioOutcome's sets are).
func sorted(names []string) []string {
	out := append([]string{}, names...)
	sort.Strings(out)
	return out
}
