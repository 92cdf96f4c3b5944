package cluster

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

// feed upserts the nodes, each passed through strip (identity for the full
// objects), and the pods, each with upsertPod (wholePod or asFacts), into
// a new State of the default model.
func feed(t *testing.T, m model.Model, nodes []*corev1.Node, pods []*corev1.Pod, upsertPod func(*State, *corev1.Pod), stripNode func(*corev1.Node) *corev1.Node) *State {
	t.Helper()
	s, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	for tenantNS, tenant := range fixtures.Tenants() {
		s.UpsertNamespace(fixtures.TenantNamespace(tenantNS, tenant))
	}
	for _, n := range nodes {
		s.UpsertNode(stripNode(n.DeepCopy()))
	}
	for _, p := range pods {
		upsertPod(s, p.DeepCopy())
	}
	for _, c := range randomClaims() {
		s.UpsertClaim(c)
	}
	return s
}

// randomClaims are the DRA claims randomCluster's pods may hold, in each
// of its namespaces: an allocated 8-GPU claim, one not allocated yet
// asking for 2, and a template's claim of 1 GPU.
func randomClaims() []*resourcev1.ResourceClaim {
	var out []*resourcev1.ResourceClaim
	for _, ns := range randomNamespaces {
		for _, c := range []struct {
			name      string
			count     int
			allocated bool
		}{{"eight", 8, true}, {"pending-two", 2, false}, {"p-gpu-x", 1, true}} {
			cl := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.name},
				Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
					Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: int64(c.count)}}}}}}
			if c.allocated {
				cl.Status.Allocation = &resourcev1.AllocationResult{}
				for d := range c.count {
					cl.Status.Allocation.Devices.Results = append(cl.Status.Allocation.Devices.Results,
						resourcev1.DeviceRequestAllocationResult{Request: "gpus", Driver: "gpu.nvidia.com", Pool: "n0", Device: fmt.Sprintf("gpu-%d", d)})
				}
			}
			out = append(out, cl)
		}
	}
	return out
}

// randomNamespaces are the namespaces of randomCluster's pods.
var randomNamespaces = []string{"vision", "llm", "product", "platform", "unknown"}

// decided is everything a decision reads of a State: every tenant's usage
// (whole, and without each gang's pods), and the placement and shortfall
// of gangs of every shape at every level, for every product.
func decided(s *State, m model.Model, owners []string) map[string]any {
	out := map[string]any{}
	for tenant := range m.Parents() {
		out["usage/"+tenant] = s.Usage(tenant)
		for _, o := range owners {
			out["usage/"+tenant+"/without/"+o] = s.UsageExcluding(tenant, o)
		}
	}
	snap := s.Snapshot()
	out["nodes"] = snap.NodeCount()
	levels := []string{""}
	for _, l := range snap.Levels() {
		levels = append(levels, l.Name)
	}
	for _, res := range []string{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"} {
		for _, product := range []string{"", topologytest.ProductH100, topologytest.ProductB200} {
			for _, level := range levels {
				for _, shape := range [][2]int{{1, 1}, {2, 4}, {1, 8}, {4, 8}, {16, 8}, {64, 8}, {3, 2}} {
					req := topology.Request{Pods: shape[0], GPUsPerPod: shape[1], Resource: res, Product: product, RequiredLevel: level}
					key := fmt.Sprintf("%s/%s/%s/%dx%d", res, product, level, shape[0], shape[1])
					r, err := snap.Place(req)
					out["place/"+key] = fmt.Sprintf("%+v %v", r, err)
					sf, err := snap.Shortfall(req)
					out["shortfall/"+key] = fmt.Sprintf("%+v %v", sf, err)
				}
			}
		}
	}
	return out
}

func same(t *testing.T, what string, full, stripped map[string]any) {
	t.Helper()
	for k, want := range full {
		if got := stripped[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s differs after stripping:\n full:     %v\n stripped: %v", what, k, want, got)
		}
	}
}

func identityNode(n *corev1.Node) *corev1.Node { return n }

// wholePod counts p whole; asFacts counts what the informers keep of it,
// as they count it.
func wholePod(s *State, p *corev1.Pod) { s.UpsertPod(p) }
func asFacts(s *State, p *corev1.Pod)  { s.UpsertFacts(CompactPod(p)) }

// TestStripExampleCluster: the example cluster (examples/cluster.yaml) and
// the test fixtures' nodes and pods give exactly the same usage, placement
// and shortfall stripped as whole.
func TestStripExampleCluster(t *testing.T) {
	m := fixtures.Evaluator(t, "embedded", nil).Model()
	f, err := os.Open(filepath.Join("..", "examples", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	owners := map[string]bool{}
	err = EachObject(f, func(u *unstructured.Unstructured) error {
		switch u.GetKind() {
		case "Node":
			n := &corev1.Node{}
			nodes = append(nodes, n)
			return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, n)
		case "Pod":
			p := &corev1.Pod{}
			pods = append(pods, p)
			return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		nodes = append(nodes, fixtures.GPUNode(i))
		pods = append(pods, topologytest.GPUPod("vision", fmt.Sprintf("fixture-%d", i), int64(i%4+1),
			topologytest.OnNode(fixtures.GPUNode(i).Name), topologytest.InPhase(corev1.PodRunning), topologytest.WithPriorityClass("train")))
	}
	if len(nodes) < 10 || len(pods) < 10 {
		t.Fatalf("the example cluster has %d nodes and %d pods: not the cluster this test is about", len(nodes), len(pods))
	}
	for _, p := range pods {
		if o := ledger.GangOwnerOf(p); o != nil {
			owners[o.UID] = true
		}
	}
	ownerList := []string{"none"}
	for o := range owners {
		ownerList = append(ownerList, o)
	}
	full := decided(feed(t, m, nodes, pods, wholePod, identityNode), m, ownerList)
	stripped := decided(feed(t, m, nodes, pods, asFacts, StripNode), m, ownerList)
	same(t, "example cluster", full, stripped)
	if t.Failed() {
		return
	}
	// The comparison sees a change: without the pods there is a difference.
	empty := decided(feed(t, m, nodes, nil, asFacts, StripNode), m, ownerList)
	if reflect.DeepEqual(full, empty) {
		t.Fatal("the example cluster decides the same with and without its pods: the comparison cannot fail")
	}
}

// losing is a careless strip: asFacts after drop has lost a field.
func losing(drop func(*corev1.Pod)) func(*State, *corev1.Pod) {
	return func(s *State, p *corev1.Pod) {
		p = p.DeepCopy()
		drop(p)
		asFacts(s, p)
	}
}

// TestStripDecidesTheSame is the property strip(obj) decided == obj decided:
// random clusters whose pods and nodes vary every field the decisions read
// (and carry the bulk they do not) give the same usage, placement and
// shortfall stripped as whole. Each deliberately careless strip, dropping
// one field the decisions read, is caught by the same comparison.
func TestStripDecidesTheSame(t *testing.T) {
	m := fixtures.Evaluator(t, "embedded", nil).Model()
	careless := map[string]struct {
		pod  func(*State, *corev1.Pod)
		node func(*corev1.Node) *corev1.Node
	}{
		"pod priorityClassName": {pod: losing(func(p *corev1.Pod) { p.Spec.PriorityClassName = "" })},
		"pod labels":            {pod: losing(func(p *corev1.Pod) { p.Labels = nil })},
		"pod annotations":       {pod: losing(func(p *corev1.Pod) { p.Annotations = nil })},
		"pod ownerReferences":   {pod: losing(func(p *corev1.Pod) { p.OwnerReferences = nil })},
		"pod nodeName":          {pod: losing(func(p *corev1.Pod) { p.Spec.NodeName = "" })},
		"pod phase":             {pod: losing(func(p *corev1.Pod) { p.Status.Phase = "" })},
		"pod nodeSelector":      {pod: losing(func(p *corev1.Pod) { p.Spec.NodeSelector = nil })},
		"pod affinity":          {pod: losing(func(p *corev1.Pod) { p.Spec.Affinity = nil })},
		"pod init containers":   {pod: losing(func(p *corev1.Pod) { p.Spec.InitContainers = nil })},
		"pod resourceClaims":    {pod: losing(func(p *corev1.Pod) { p.Spec.ResourceClaims = nil })},
		"pod claim statuses":    {pod: losing(func(p *corev1.Pod) { p.Status.ResourceClaimStatuses = nil })},
		"pod sidecars": {pod: losing(func(p *corev1.Pod) {
			for i := range p.Spec.InitContainers {
				p.Spec.InitContainers[i].RestartPolicy = nil
			}
		})},
		"pod limits": {pod: losing(func(p *corev1.Pod) {
			for i := range p.Spec.Containers {
				p.Spec.Containers[i].Resources.Limits = nil
			}
		})},
		"node labels":        {node: func(n *corev1.Node) *corev1.Node { n = StripNode(n); n.Labels = nil; return n }},
		"node taints":        {node: func(n *corev1.Node) *corev1.Node { n = StripNode(n); n.Spec.Taints = nil; return n }},
		"node unschedulable": {node: func(n *corev1.Node) *corev1.Node { n = StripNode(n); n.Spec.Unschedulable = false; return n }},
		"node conditions":    {node: func(n *corev1.Node) *corev1.Node { n = StripNode(n); n.Status.Conditions = nil; return n }},
		"node allocatable":   {node: func(n *corev1.Node) *corev1.Node { n = StripNode(n); n.Status.Allocatable = nil; return n }},
	}
	caught := map[string]bool{}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 14))
		nodes, pods, owners := randomCluster(rng)
		full := decided(feed(t, m, nodes, pods, wholePod, identityNode), m, owners)
		stripped := decided(feed(t, m, nodes, pods, asFacts, StripNode), m, owners)
		same(t, fmt.Sprintf("seed %d", seed), full, stripped)
		if t.Failed() {
			return
		}
		for name, c := range careless {
			if caught[name] {
				continue
			}
			sp, sn := c.pod, c.node
			if sp == nil {
				sp = asFacts
			}
			if sn == nil {
				sn = StripNode
			}
			if !reflect.DeepEqual(full, decided(feed(t, m, nodes, pods, sp, sn), m, owners)) {
				caught[name] = true
			}
		}
	}
	for name := range careless {
		if !caught[name] {
			t.Errorf("a strip dropping %s decides the same on every random cluster: the property cannot see that field", name)
		}
	}
}

// TestStripDropsTheBulk: what the decisions do not read is gone, so the
// informers hold a fraction of each object.
func TestStripDropsTheBulk(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nodes, pods, _ := randomCluster(rng)
	for _, p := range pods {
		f := CompactPod(p)
		for k := range f.Labels {
			if !PodKeyKept(k) {
				t.Fatalf("pod %s keeps label %s no decision reads", p.Name, k)
			}
		}
		if f.ManagedFields != nil || len(f.OwnerReferences) > 1 {
			t.Fatalf("pod %s keeps metadata no decision reads: %+v", p.Name, f.ObjectMeta)
		}
		full, _ := json.Marshal(p)
		small, _ := json.Marshal(f)
		if len(small)*3 > len(full) {
			t.Errorf("pod %s: stored %d bytes of %d: less than two thirds dropped", p.Name, len(small), len(full))
		}
		if c := f.DeepCopyObject().(*PodFacts); !reflect.DeepEqual(c, f) {
			t.Errorf("DeepCopyObject() = %+v, want %+v", c, f)
		}
	}
	for _, n := range nodes {
		s := StripNode(n)
		if s.ManagedFields != nil || s.Annotations != nil || s.Status.Images != nil || s.Status.Addresses != nil ||
			s.Status.Capacity[corev1.ResourceCPU] != (resource.Quantity{}) {
			t.Fatalf("node %s keeps fields no decision reads: %+v", n.Name, s)
		}
	}
	// A tombstone passes through the cache's transform untouched; another
	// type (the gang controller's metadata of every pod) loses only its
	// managedFields.
	var tr cache.ByObject
	for o, byObject := range StripTransforms() {
		if _, ok := o.(*corev1.Pod); ok {
			tr = byObject
		}
	}
	if tr.Transform == nil {
		t.Fatal("no transform for Pods")
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/x", Obj: pods[0]}
	if got, err := tr.Transform(tomb); err != nil || got != any(tomb) {
		t.Errorf("Transform(tombstone) = %v, %v; want it untouched", got, err)
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns",
		Annotations: map[string]string{"mandate.dev/directives": "{}"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	got, err := tr.Transform(meta)
	if m, ok := got.(*metav1.PartialObjectMetadata); err != nil || !ok || m.ManagedFields != nil || m.Name != "x" || m.Annotations["mandate.dev/directives"] != "{}" {
		t.Errorf("Transform(pod metadata) = %+v, %v; want it without managedFields, else as it was", got, err)
	}
	got, err = tr.Transform(pods[0])
	if f, ok := got.(*PodFacts); err != nil || !ok || f.Name != pods[0].Name {
		t.Errorf("Transform(pod) = %v, %v; want its PodFacts", got, err)
	}
}

// randomCluster is 12 nodes of the reference levels and 60 pods varying
// every field the ledger and the topology model read, with the bulk of real
// objects (images, env, volumes, statuses, managed fields) beside.
func randomCluster(rng *rand.Rand) ([]*corev1.Node, []*corev1.Pod, []string) {
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	maybe := func() bool { return rng.IntN(3) == 0 }
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:phase":{},"f:conditions":{}}}`)}}}
	var nodes []*corev1.Node
	for i := range 12 {
		n := fixtures.H100Node(fmt.Sprintf("n%d", i), pick("b1", "b2"), pick("c1", "c2", "c3"))
		n.ManagedFields = managed
		n.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/cuda:12"}, SizeBytes: 1 << 30}}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", OSImage: "Ubuntu"}
		if maybe() {
			n.Labels[topologytest.LabelProduct] = topologytest.ProductB200
		}
		if maybe() {
			n.Labels["nvidia.com/gpu.health"] = pick("healthy", "unhealthy")
		}
		if maybe() {
			delete(n.Labels, topologytest.LabelClique)
		}
		if rng.IntN(6) == 0 {
			n.Spec.Unschedulable = true
		}
		if maybe() {
			n.Spec.Taints = []corev1.Taint{{Key: pick("nvidia.com/gpu", "example.com/maintenance"),
				Effect: corev1.TaintEffect(pick("NoSchedule", "NoExecute", "PreferNoSchedule"))}}
		}
		if maybe() {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(pick("GPUThermalThrottling", "XidCriticalError", "MemoryPressure")),
				Status: corev1.ConditionStatus(pick("True", "False")), Reason: "r", Message: "a long message from the node problem detector"})
		}
		if rng.IntN(8) == 0 {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		g := resource.MustParse(pick("8", "4", "0"))
		n.Status.Allocatable[topologytest.GPUResource] = g
		if maybe() {
			n.Status.Allocatable["nvidia.com/mig-1g.10gb"] = resource.MustParse("7")
		}
		nodes = append(nodes, n)
	}
	owners := []string{"none"}
	for i := range 4 {
		owners = append(owners, fmt.Sprintf("uid-%d", i))
	}
	namespaces := randomNamespaces
	var pods []*corev1.Pod
	for i := range 60 {
		gpus := func() corev1.ResourceList {
			l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
			switch rng.IntN(5) {
			case 0, 1:
				l["nvidia.com/gpu"] = resource.MustParse(pick("1", "2", "8"))
			case 2:
				l["nvidia.com/mig-1g.10gb"] = resource.MustParse("1")
			case 3:
				l["amd.com/gpu"] = resource.MustParse("1")
			}
			return l
		}
		container := func(name string) corev1.Container {
			c := corev1.Container{Name: name, Image: "registry.example/train:1.2.3", Command: []string{"python", "train.py"},
				Env:          []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}, {Name: "WORLD_SIZE", Value: "64"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}
			switch rng.IntN(3) {
			case 0:
				c.Resources.Limits = gpus()
			case 1:
				c.Resources.Requests = gpus()
				c.Resources.Limits = gpus()
			}
			return c
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: pick(namespaces...),
			UID: types.UID(fmt.Sprintf("pod-%d", i)), ResourceVersion: "7", ManagedFields: managed,
			Labels: map[string]string{"app": "train", "batch.kubernetes.io/job-name": "j"}, Annotations: map[string]string{}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{container("main")},
				Volumes:       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				SchedulerName: pick("default-scheduler", "kai-scheduler", "volcano"),
				Tolerations:   []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}},
			Status: corev1.PodStatus{Phase: corev1.PodPhase(pick("Running", "Running", "Pending", "Succeeded", "Failed")),
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true, Image: "registry.example/train:1.2.3"}},
				PodIP:             "10.1.2.3", HostIP: "10.0.0.1"}}
		if rng.IntN(4) != 0 {
			p.Spec.NodeName = nodes[rng.IntN(len(nodes))].Name
		}
		if maybe() {
			p.Spec.Containers = append(p.Spec.Containers, container("sidecar"))
		}
		if maybe() {
			ic := container("init")
			if maybe() {
				ic.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			}
			p.Spec.InitContainers = []corev1.Container{ic}
		}
		if rng.IntN(5) != 0 {
			p.Spec.PriorityClassName = pick("train", "build-preemptible", "build", "inference")
		}
		if maybe() {
			p.Labels[workload.LabelPreemptible] = pick("true", "false")
		}
		if maybe() {
			p.Labels["kai.scheduler/preemptibility"] = pick("preemptible", "non-preemptible")
		}
		if maybe() {
			p.Annotations["volcano.sh/preemptable"] = pick("true", "false")
		}
		if maybe() {
			p.Annotations[workload.AnnotationGPUFraction] = pick("0.25", "0.5")
			if maybe() {
				p.Annotations[workload.AnnotationGPUFractionDevices] = "2"
			}
		}
		if rng.IntN(8) == 0 {
			p.Annotations[workload.AnnotationGPUMemory] = "20000"
		}
		if maybe() {
			p.Spec.NodeSelector = map[string]string{topologytest.LabelProduct: pick(topologytest.ProductH100, topologytest.ProductB200)}
		} else if maybe() {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: topologytest.LabelProduct,
					Operator: corev1.NodeSelectorOpIn, Values: []string{pick(topologytest.ProductH100, topologytest.ProductB200)}}}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{}}
		}
		if rng.IntN(2) == 0 {
			o := rng.IntN(4)
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: fmt.Sprintf("job-%d", o),
				UID: types.UID(fmt.Sprintf("uid-%d", o)), Controller: ptr.To(true)}}
		} else if rng.IntN(4) == 0 {
			o := rng.IntN(4)
			raw, _ := json.Marshal(workload.Owner{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("dep-%d", o), UID: fmt.Sprintf("uid-%d", o)})
			p.Annotations[workload.AnnotationGangOwner] = string(raw)
		}
		switch rng.IntN(4) { // DRA claims, held by name or made from a template
		case 0:
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(pick("eight", "pending-two"))}}
		case 1:
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
			p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("p-gpu-x")}}
		}
		pods = append(pods, p)
	}
	return nodes, pods, owners
}

// TestWatchPodFacts: the Pod informer of a stripped cache carries PodFacts;
// Watch counts them on add and forgets them on delete.
func TestWatchPodFacts(t *testing.T) {
	ctx := t.Context()
	s, err := New(fixtures.Evaluator(t, "embedded", nil).Model())
	if err != nil {
		t.Fatal(err)
	}
	informers := &informertest.FakeInformers{}
	if err := s.Watch(ctx, informers); err != nil {
		t.Fatal(err)
	}
	pods, err := informers.FakeInformerFor(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Synced() {
		t.Error("Synced() = false with every (fake) informer's handler synced")
	}
	s.UpsertNamespace(fixtures.TenantNamespace("vision", "research-vision"))
	pod := topologytest.GPUPod("vision", "p", 3, topologytest.InPhase(corev1.PodRunning))
	gpus := func() int { return s.Usage("research-vision")["research-vision"]["nvidia.com/gpu"].Total }
	pods.Add(CompactPod(pod))
	if got := gpus(); got != 3 {
		t.Fatalf("after adding the pod's facts: research-vision uses %d GPUs, want 3", got)
	}
	pods.Delete(CompactPod(pod))
	if got := gpus(); got != 0 {
		t.Fatalf("after deleting the pod's facts: research-vision uses %d GPUs, want 0", got)
	}
}
