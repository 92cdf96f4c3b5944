package facts

import "k8s.io/apimachinery/pkg/runtime/schema"

// The schedulers Mandate renders for, each checked against the real
// scheduler and its CRDs (see docs/architecture.md, "Scheduler contracts").
// Registration order is the order of messages and of sync's writes.
func init() {
	Register(Volcano)
	Register(KAI)
	Register(Kueue)
	Register(Default)
	Register(Slurm)
}

func kind(group, version, kind, resource string, namespaced bool) Kind {
	return Kind{GVK: schema.GroupVersionKind{Group: group, Version: version, Kind: kind}, Resource: resource, Namespaced: namespaced}
}

// Volcano v1.15: every pod names its PodGroup (a pod without one is never
// scheduled) and its queue; Mandate's gang controller keeps the PodGroup.
var (
	volcanoQueueKey = Key{Name: "scheduling.volcano.sh/queue-name", Place: PodAnnotation}
	volcanoQueue    = kind("scheduling.volcano.sh", "v1beta1", "Queue", "queues", false)

	Volcano = Scheduler{
		Name:          "volcano",
		Title:         "Volcano",
		SchedulerName: "volcano",
		Queue:         volcanoQueueKey,
		Preemptibility: Preemptibility{Key: Key{Name: "volcano.sh/preemptable", Place: PodAnnotation},
			Preemptible: "true", NonPreemptible: "false"},
		GroupName:        Key{Name: "scheduling.k8s.io/group-name", Place: PodAnnotation},
		Requests:         []Request{{Key: volcanoQueueKey, Asks: AsksQueue}},
		PodKeyPrefixes:   []string{"volcano.sh/", "scheduling.volcano.sh/"},
		DefaultQueue:     "default",
		NeverEvictsGangs: true,
		QueueKind:        &QueueKind{Kind: volcanoQueue, HasState: true, CapacityPath: []string{"spec", "capability"}},
		GroupKinds:       []Kind{kind(volcanoQueue.GVK.Group, "v1beta1", "PodGroup", "podgroups", true)},
		SyncKinds: []SyncKind{
			{Kind: volcanoQueue, Queue: true, StatusFields: true},
			{Kind: kind("topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes", false)},
		},
	}
)

// KAI Scheduler v0.17: its podgrouper builds the PodGroup from the top
// owner's labels and annotations.
var (
	kaiQueueKey    = Key{Name: "kai.scheduler/queue", Place: Label}
	kaiPriorityKey = Key{Name: "priorityClassName", Place: Label}
	kaiGangMinKey  = Key{Name: "kai.scheduler/batch-min-member", Place: Annotation}
	kaiQueue       = kind("scheduling.run.ai", "v2", "Queue", "queues", false)
	kaiTopology    = kind("kai.scheduler", "v1alpha1", "Topology", "topologies", false)

	KAI = Scheduler{
		Name:          "kai",
		Title:         "KAI",
		SchedulerName: "kai-scheduler",
		Queue:         kaiQueueKey,
		PriorityClass: kaiPriorityKey,
		Preemptibility: Preemptibility{Key: Key{Name: "kai.scheduler/preemptibility", Place: Label},
			Preemptible: "preemptible", NonPreemptible: "non-preemptible"},
		Topology:          Key{Name: "kai.scheduler/topology", Place: Annotation},
		RequiredTopology:  Key{Name: "kai.scheduler/topology-required-placement", Place: Annotation},
		PreferredTopology: Key{Name: "kai.scheduler/topology-preferred-placement", Place: Annotation},
		GangMin:           kaiGangMinKey,
		Requests: []Request{
			{Key: kaiQueueKey, Asks: AsksQueue},
			{Key: kaiPriorityKey, Asks: AsksPriorityClass},
			{Key: kaiGangMinKey, Asks: AsksGangMin},
		},
		PodKeyPrefixes: []string{"kai.scheduler/"},
		QueueKind:      &QueueKind{Kind: kaiQueue, CapacityPath: []string{"spec", "resources", "gpu"}, CapacityPrefix: "gpu "},
		TopologyKind:   &kaiTopology,
		GroupKinds:     []Kind{kind(kaiQueue.GVK.Group, "v2alpha2", "PodGroup", "podgroups", true)},
		SyncKinds:      []SyncKind{{Kind: kaiQueue, Queue: true}, {Kind: kaiTopology}},
	}
)

// Kueue v0.19 admits a suspended workload into a ClusterQueue through the
// LocalQueue its label names; the pods then run on the default scheduler.
var (
	kueueGroup, kueueVersion = "kueue.x-k8s.io", "v1beta2"
	kueueLocalQueue          = kind(kueueGroup, kueueVersion, "LocalQueue", "localqueues", true)

	Kueue = Scheduler{
		Name:              "kueue",
		Title:             "Kueue",
		Queue:             Key{Name: kueueGroup + "/queue-name", Place: Label},
		PriorityClass:     Key{Name: kueueGroup + "/priority-class", Place: Label},
		RequiredTopology:  Key{Name: kueueGroup + "/podset-required-topology", Place: PodSetAnnotation},
		PreferredTopology: Key{Name: kueueGroup + "/podset-preferred-topology", Place: PodSetAnnotation},
		PodKeyPrefixes:    []string{kueueGroup + "/"},
		OwnsQuota:         true,
		QueueKind:         &QueueKind{Kind: kueueLocalQueue},
		GroupKinds:        []Kind{kind(kueueGroup, kueueVersion, "Workload", "workloads", true)},
		SyncKinds: []SyncKind{
			{Kind: kind(kueueGroup, kueueVersion, "Topology", "topologies", false)},
			{Kind: kind(kueueGroup, kueueVersion, "ResourceFlavor", "resourceflavors", false)},
			{Kind: kind(kueueGroup, kueueVersion, "WorkloadPriorityClass", "workloadpriorityclasses", false)},
			{Kind: kind(kueueGroup, kueueVersion, "Cohort", "cohorts", false)},
			{Kind: kind(kueueGroup, kueueVersion, "ClusterQueue", "clusterqueues", false), Queue: true},
			{Kind: kueueLocalQueue, Queue: true},
		},
	}
)

// Default is the Kubernetes default scheduler: the pod templates alone
// (priority class) tell it everything.
var Default = Scheduler{
	Name:          "default",
	Title:         "default scheduler",
	SchedulerName: "default-scheduler",
}

// Slurm 22.05 runs batch jobs outside Kubernetes: its tenants' work is
// submitted with sbatch, decided by `mandate eval` on the #SBATCH lines,
// and Slurm enforces the model through what `mandate sync --target slurm`
// writes (accounts, QOS, partitions, topology.conf; package
// schedsync/slurm). A Kubernetes pod of a Slurm tenant keeps its own
// schedulerName and gets no scheduler keys.
var Slurm = Scheduler{
	Name:  "slurm",
	Title: "Slurm",
}
