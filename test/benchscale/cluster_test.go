//go:build benchscale

package benchscale

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/topology/topologytest"
)

// The reference topology's shape: 4 nodes to an NVLink clique (32 GPUs),
// 32 to a leaf block (256), 512 to a spine block (4,096), two zones.
const (
	nodesPerClique = 4
	nodesPerLeaf   = 32
	nodesPerSpine  = 512
	gpusPerNode    = 8
)

func nodeName(i int) string { return fmt.Sprintf("gpu-%05d", i) }

// scaleNode is node i of n, labelled with the model's levels and the
// labels a GPU operator and a cloud put on a real node, with a kubelet's
// status (images, addresses, conditions with messages).
func scaleNode(i, n int) *corev1.Node {
	name := nodeName(i)
	spine := i / nodesPerSpine
	leaf := i / nodesPerLeaf
	gpus := resource.MustParse(fmt.Sprint(gpusPerNode))
	res := func() corev1.ResourceList {
		return corev1.ResourceList{topologytest.GPUResource: gpus, corev1.ResourceCPU: resource.MustParse("192"),
			corev1.ResourceMemory: resource.MustParse("2Ti"), corev1.ResourcePods: resource.MustParse("110"),
			corev1.ResourceEphemeralStorage: resource.MustParse("3Ti")}
	}
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	var images []corev1.ContainerImage
	for k := range 12 {
		images = append(images, corev1.ContainerImage{Names: []string{
			fmt.Sprintf("registry.example/ml/image-%d@sha256:%064d", k, k), fmt.Sprintf("registry.example/ml/image-%d:v1.%d.0", k, k)},
			SizeBytes: int64(1+k) << 30})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{
				topologytest.LabelHostname:            name,
				topologytest.LabelZone:                fmt.Sprintf("zone-%d", i*2/n),
				topologytest.LabelSpineBlock:          fmt.Sprintf("s%d", spine),
				topologytest.LabelLeafBlock:           fmt.Sprintf("s%d-b%d", spine, leaf),
				topologytest.LabelClique:              fmt.Sprintf("s%d-b%d-c%d", spine, leaf, i/nodesPerClique),
				topologytest.LabelProduct:             topologytest.ProductH100,
				topologytest.LabelGPUCount:            fmt.Sprint(gpusPerNode),
				"nvidia.com/gpu.health":               "healthy",
				"kubernetes.io/arch":                  "amd64",
				"kubernetes.io/os":                    "linux",
				"node.kubernetes.io/instance-type":    "p5.48xlarge",
				"nvidia.com/cuda.driver.major":        "570",
				"nvidia.com/gpu.memory":               "81559",
				"nvidia.com/gpu.family":               "hopper",
				"nvidia.com/mig.capable":              "true",
				"feature.node.kubernetes.io/pci-10de": "true",
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"nfd.node.kubernetes.io/feature-labels":                  "cpu-cpuid.AVX512F,cpu-cpuid.AMXBF16,pci-10de.present,kernel-version.major",
			}},
		Status: corev1.NodeStatus{
			Capacity: res(), Allocatable: res(),
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)},
				{Type: corev1.NodeHostName, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: fmt.Sprintf("%032d", i), SystemUUID: fmt.Sprintf("%032d", i), BootID: fmt.Sprintf("%032d", i),
				KernelVersion: "6.8.0-1015-aws", OSImage: "Ubuntu 24.04 LTS", ContainerRuntimeVersion: "containerd://1.7.27",
				KubeletVersion: "v1.33.1", OperatingSystem: "linux", Architecture: "amd64"},
			Images: images,
		},
	}
}

// loadPod is the i-th running pod: the first gpuPods take one GPU each,
// packed onto the nodes in order (so whole nodes stay free for gangs),
// the rest take none and spread over every node. Each looks like a Job's
// pod: a controller reference, the Job's labels, a container with an
// image, command, environment and mounts.
func loadPod(i, gpuPods, nodes, tenants int) *corev1.Pod {
	ns := fmt.Sprintf("team-%d", i%tenants)
	job := fmt.Sprintf("batch-%d", i/gpusPerNode)
	uid := types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i/gpusPerNode))
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("32Gi")}
	lim := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Gi")}
	node := nodeName(i % nodes)
	if i < gpuPods {
		lim[topologytest.GPUResource] = resource.MustParse("1")
		node = nodeName(i / gpusPerNode % nodes)
	}
	var env []corev1.EnvVar
	for _, kv := range [][2]string{{"NCCL_DEBUG", "WARN"}, {"NCCL_IB_HCA", "mlx5"}, {"MASTER_PORT", "29500"}, {"WORLD_SIZE", "8"},
		{"PYTHONUNBUFFERED", "1"}, {"HF_HOME", "/cache/hf"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"}, {"OMP_NUM_THREADS", "8"}} {
		env = append(env, corev1.EnvVar{Name: kv[0], Value: kv[1]})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%07d", job, i),
			Labels: map[string]string{"app.kubernetes.io/name": "trainer", "batch.kubernetes.io/job-name": job, "job-name": job,
				"batch.kubernetes.io/controller-uid": string(uid), "controller-uid": string(uid),
				"batch.kubernetes.io/job-completion-index": fmt.Sprint(i % gpusPerNode)},
			Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": fmt.Sprint(i % gpusPerNode)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: uid,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			NodeName:          node,
			PriorityClassName: "train",
			RestartPolicy:     corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "trainer", Image: "registry.example/ml/trainer:v2.4.1",
				Command:      []string{"torchrun", "--nproc-per-node=1", "train.py", "--config=/etc/train/config.yaml"},
				Env:          env,
				Resources:    corev1.ResourceRequirements{Requests: req, Limits: lim},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "shm", MountPath: "/dev/shm"}, {Name: "config", MountPath: "/etc/train"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "datasets"}}},
				{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "train-config"}}}}},
			Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

// running is the status a kubelet reports for a started pod.
func running(p *corev1.Pod, i int) {
	now := metav1.Now()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: fmt.Sprintf("100.%d.%d.%d", i>>16&255, i>>8&255, i&255),
		StartTime: &now, QOSClass: corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "trainer", Ready: true, Started: ptr.To(true),
			Image: "registry.example/ml/trainer:v2.4.1", ImageID: "registry.example/ml/trainer@sha256:" + fmt.Sprintf("%064d", 7),
			ContainerID: fmt.Sprintf("containerd://%064d", i), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
}

// parallel runs fn(i) for i in [from, to) on workers goroutines and
// returns the first error.
func parallel(ctx context.Context, from, to, workers int, fn func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// createNodes creates nodes [from, to) with their status, as kubelets
// would register them.
func createNodes(ctx context.Context, c client.Client, from, to, total, workers int) error {
	return parallel(ctx, from, to, workers, func(ctx context.Context, i int) error {
		n := scaleNode(i, total)
		status := n.Status
		if err := c.Create(ctx, n); err != nil {
			return fmt.Errorf("unable to create node %s: %w", n.Name, err)
		}
		n.Status = status
		if err := c.Status().Update(ctx, n); err != nil {
			return fmt.Errorf("unable to set the status of node %s: %w", n.Name, err)
		}
		return nil
	})
}

// createPods creates pods [from, to), bound and running.
func createPods(ctx context.Context, c client.Client, from, to, gpuPods, nodes, tenants, workers int) error {
	return parallel(ctx, from, to, workers, func(ctx context.Context, i int) error {
		p := loadPod(i, gpuPods, nodes, tenants)
		if err := c.Create(ctx, p); err != nil {
			return fmt.Errorf("unable to create pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		running(p, i)
		if err := c.Status().Update(ctx, p); err != nil {
			return fmt.Errorf("unable to set pod %s/%s running: %w", p.Namespace, p.Name, err)
		}
		return nil
	})
}
