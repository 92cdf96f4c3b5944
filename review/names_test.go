package review

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// fakeObjects is a cluster holding exactly the objects listed; kinds not
// listed in watched are Unknown.
type fakeObjects struct {
	watched map[schema.GroupVersionKind]bool
	objects map[schema.GroupVersionKind]map[string]cluster.SchedulerObject
}

func (f fakeObjects) Lookup(gvk schema.GroupVersionKind, namespace, name string) cluster.SchedulerObject {
	if !f.watched[gvk] {
		return cluster.SchedulerObject{}
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	if o, ok := f.objects[gvk][key]; ok {
		return o
	}
	return cluster.SchedulerObject{Presence: cluster.Missing}
}

func TestSchedulerWarnings(t *testing.T) {
	localQueue := facts.Kueue.QueueKind.GVK
	all := map[schema.GroupVersionKind]bool{cluster.VolcanoQueueGVK: true, cluster.KAIQueueGVK: true, cluster.KAITopologyGVK: true,
		localQueue: true, cluster.PriorityClassGVK: true}
	present := cluster.SchedulerObject{Presence: cluster.Present}
	fabric := cluster.SchedulerObject{Presence: cluster.Present, NodeLabels: []string{"nvidia.com/gpu.clique", "kubernetes.io/hostname"}}
	noNode := cluster.SchedulerObject{Presence: cluster.Present, NodeLabels: []string{"nvidia.com/gpu.clique"}}
	kai := evaluator.Directives{Scheduler: "kai", Queue: "platform", TopologyName: "helix-fabric",
		RequiredLevel: "node", RequiredLabel: "kubernetes.io/hostname"}
	volcano := evaluator.Directives{Scheduler: "volcano", Queue: "research"}
	kueue := evaluator.Directives{Scheduler: "kueue", Queue: "product"}
	classed := evaluator.Directives{Scheduler: "default", PriorityClass: "train"}
	gang := workload.Workload{Kind: "PyTorchJob", Name: "x", Namespace: "ml", Pods: 2}
	for _, tc := range []struct {
		name    string
		objects SchedulerObjects
		d       evaluator.Directives
		denied  bool
		want    []string
	}{
		{name: "offline: nothing to say", d: volcano},
		{name: "kind not served", objects: fakeObjects{}, d: volcano},
		{name: "volcano queue missing", objects: fakeObjects{watched: all}, d: volcano,
			want: []string{"Volcano queue research does not exist: the job will wait until it does; run `mandate sync`"}},
		{name: "volcano queue closed", objects: fakeObjects{watched: all, objects: map[schema.GroupVersionKind]map[string]cluster.SchedulerObject{
			cluster.VolcanoQueueGVK: {"research": {Presence: cluster.NotOpen, State: "Closed"}}}}, d: volcano,
			want: []string{"Volcano queue research is Closed: the job will wait until it is Open; run `mandate sync`"}},
		{name: "volcano queue open", objects: fakeObjects{watched: all, objects: map[schema.GroupVersionKind]map[string]cluster.SchedulerObject{
			cluster.VolcanoQueueGVK: {"research": present}}}, d: volcano},
		{name: "denied: nothing to say", objects: fakeObjects{watched: all}, d: volcano, denied: true},
		{name: "kai queue and topology missing", objects: fakeObjects{watched: all}, d: kai, want: []string{
			"KAI queue platform does not exist: the job will wait until it does; run `mandate sync`",
			"KAI topology helix-fabric does not exist: KAI will not place the job until it does; run `mandate sync`",
		}},
		{name: "kai topology without the node level", objects: fakeObjects{watched: all, objects: map[schema.GroupVersionKind]map[string]cluster.SchedulerObject{
			cluster.KAIQueueGVK: {"platform": present}, cluster.KAITopologyGVK: {"helix-fabric": noNode}}}, d: kai, want: []string{
			"KAI topology helix-fabric has no level on node label kubernetes.io/hostname: the required topology level node is advisory for KAI; run `mandate sync`",
		}},
		{name: "kueue LocalQueue missing", objects: fakeObjects{watched: all}, d: kueue,
			want: []string{"Kueue queue product does not exist: the job will wait until it does; run `mandate sync`"}},
		{name: "kueue LocalQueue in another namespace only", objects: fakeObjects{watched: all, objects: map[schema.GroupVersionKind]map[string]cluster.SchedulerObject{
			localQueue: {"other/product": present}}}, d: kueue,
			want: []string{"Kueue queue product does not exist: the job will wait until it does; run `mandate sync`"}},
		{name: "kueue LocalQueue there", objects: fakeObjects{watched: all, objects: map[schema.GroupVersionKind]map[string]cluster.SchedulerObject{
			localQueue: {"ml/product": present}}}, d: kueue},
		{name: "priority class missing", objects: fakeObjects{watched: all}, d: classed,
			want: []string{"priority class train does not exist: the pods cannot be created until it does; run `mandate sync`"}},
		{name: "priority class there", objects: fakeObjects{watched: all, objects: map[schema.GroupVersionKind]map[string]cluster.SchedulerObject{
			cluster.PriorityClassGVK: {"train": present}}}, d: classed},
		{name: "priority class not watched", objects: fakeObjects{}, d: classed},
		{name: "kai all there", objects: fakeObjects{watched: all, objects: map[schema.GroupVersionKind]map[string]cluster.SchedulerObject{
			cluster.KAIQueueGVK: {"platform": present}, cluster.KAITopologyGVK: {"helix-fabric": fabric}}}, d: kai},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Service{SchedulerObjects: tc.objects}
			got := s.schedulerWarnings(gang, evaluator.Decision{Allowed: !tc.denied, Directives: tc.d})
			assert.Equal(t, tc.want, got)
		})
	}
}
