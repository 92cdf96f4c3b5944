package e2e

import "github.com/mandate-dev/mandate/test/fixtures"

// llmFinetune needs 32 GPUs in one leaf block.
var llmFinetune = fixtures.LLMFinetune(3)

// Workloads, after examples/workloads, for the test cluster of 8 H100 nodes.
const (
	// product schedules with KAI.
	productDistill = `
apiVersion: batch/v1
kind: Job
metadata: {name: rerank-distill, namespace: product}
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: distill, image: rerank, resources: {limits: {nvidia.com/gpu: "8"}}}
`
	productPod = `
apiVersion: v1
kind: Pod
metadata: {name: embed-canary, namespace: product, labels: {mandate.dev/class: inference}}
spec:
  containers:
  - {name: server, image: embed, resources: {limits: {nvidia.com/gpu: "1"}}}
`
	// A pod in a namespace without a tenant (tenancy).
	scratchPod = `
apiVersion: v1
kind: Pod
metadata: {name: quick-test, namespace: default}
spec:
  containers:
  - {name: cuda, image: cuda, resources: {limits: {nvidia.com/gpu: "1"}}}
`
	// research-vision may not use "build" (priority).
	visionUrgent = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: detr-urgent, namespace: vision}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          priorityClassName: build
          containers:
          - {name: pytorch, image: detr, resources: {limits: {nvidia.com/gpu: "4"}}}
    Worker:
      replicas: 1
      template:
        spec:
          priorityClassName: build
          containers:
          - {name: pytorch, image: detr, resources: {limits: {nvidia.com/gpu: "4"}}}
`
	llmVolcanoJob = `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pretrain-small, namespace: llm}
spec:
  schedulerName: volcano
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - {name: megatron, image: megatron, resources: {limits: {nvidia.com/gpu: "8"}}}
`
	// 12 nodes × 8 GPUs must sit in one leaf block of at most 8 nodes (topology).
	llmVolcanoTooWide = `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pretrain-13b, namespace: llm}
spec:
  schedulerName: volcano
  minAvailable: 12
  tasks:
  - name: worker
    replicas: 12
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - {name: megatron, image: megatron, resources: {limits: {nvidia.com/gpu: "8"}}}
`
)
