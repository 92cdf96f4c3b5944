package workload

import corev1 "k8s.io/api/core/v1"

// PodProduct is the GPU product a pod asks for: its nodeSelector on
// topology.DefaultProductLabel, else the one value every required node-affinity term
// allows for it; "" when it names none (any product will do). It is what
// a Workload's GPUProduct reads from each pod template, so the quota
// ledger counts a pod against the product its workload was admitted for.
func PodProduct(spec *corev1.PodSpec) string { return product(spec) }
