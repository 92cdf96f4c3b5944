package topology

import corev1 "k8s.io/api/core/v1"

// PodGPURequests returns what a pod takes of each GPU resource, the way the
// scheduler counts it (see podGPURequests); nil when nothing.
func PodGPURequests(pod *corev1.Pod) map[string]int { return podGPURequests(pod) }
