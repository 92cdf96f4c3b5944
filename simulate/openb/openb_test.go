package openb

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/topology"
)

const traceDir = "../testdata/alibaba-gpu-v2023"

// TestTraceFilesAreThePublishedOnes: the copies in testdata are byte for
// byte the files the paper published (hashes from its README there).
func TestTraceFilesAreThePublishedOnes(t *testing.T) {
	for file, want := range map[string]string{
		"openb_node_list_gpu_node.csv": "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5",
		"openb_pod_list_default.csv":   "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8",
		"openb_pod_list_gpuspec33.csv": "eca4f746db1e5b25864ad021b55ece3943e101a3ebd4574d09dcb95c46117652",
	} {
		data, err := os.ReadFile(filepath.Join(traceDir, file))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		assert.Equal(t, want, hex.EncodeToString(sum[:]), file)
	}
}

// TestReadTheTrace reads the published files and checks them against the
// figures the trace's description gives: 1,213 nodes with 6,212 GPUs,
// 8,152 pods of which 3,078 share a GPU and 44 take eight.
func TestReadTheTrace(t *testing.T) {
	nodes, err := ReadNodesFile(filepath.Join(traceDir, "openb_node_list_gpu_node.csv"))
	require.NoError(t, err)
	assert.Len(t, nodes, 1213)
	gpus := 0
	for _, n := range nodes {
		gpus += n.GPUs
	}
	assert.Equal(t, 6212, gpus)
	assert.Equal(t, Node{Name: "openb-node-0000", CPUMilli: 64000, MemoryMiB: 262144, GPUs: 2, Model: "P100"}, nodes[0])

	pods, err := ReadPodsFile(filepath.Join(traceDir, "openb_pod_list_default.csv"))
	require.NoError(t, err)
	assert.Len(t, pods, 8152)
	shared, eight := 0, 0
	for _, p := range pods {
		if p.Request().Fractional() {
			shared++
		}
		if p.NumGPU == 8 {
			eight++
		}
	}
	assert.Equal(t, 3078, shared)
	assert.Equal(t, 44, eight)
	assert.Equal(t, Pod{Name: "openb-pod-0001", CPUMilli: 6000, MemoryMiB: 12288, NumGPU: 1, GPUMilli: 460, QoS: "LS", Phase: "Running",
		CreationTime: 427061, DeletionTime: 12902960, ScheduledTime: 427061}, pods[1])
	// openb-pod-0061 was never scheduled: its scheduled_time is empty.
	assert.Equal(t, Unset, pods[61].ScheduledTime)

	spec, err := ReadPodsFile(filepath.Join(traceDir, "openb_pod_list_gpuspec33.csv"))
	require.NoError(t, err)
	limited := 0
	for _, p := range spec {
		if len(p.GPUSpec) > 0 {
			limited++
		}
	}
	// About a third of the 7,064 GPU pods name the GPU types they may use.
	assert.Equal(t, 2388, limited)
}

func TestPodRequest(t *testing.T) {
	p := Pod{Name: "p", CPUMilli: 8000, MemoryMiB: 30000, NumGPU: 1, GPUMilli: 250, GPUSpec: []string{"V100M16", "V100M32"}}
	assert.Equal(t, alloc.Request{CPUMilli: 8000, MemoryMiB: 30000, GPUs: 1, GPUMilli: 250, Models: []string{"V100M16", "V100M32"}}, p.Request())
	assert.Equal(t, alloc.NodeSpec{Name: "n", Model: "T4", CPUMilli: 1, MemoryMiB: 2, GPUs: 3}, Node{Name: "n", CPUMilli: 1, MemoryMiB: 2, GPUs: 3, Model: "T4"}.Spec())
}

func TestReadPodsGPUSpec(t *testing.T) {
	pods, err := ReadPods(strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"+
		"a,1000,1024,1,500,V100M16|V100M32\n"+
		"b,1000,1024,2,1000,\n"+
		"c,1000,1024,0,0,T4\n"), "pods.csv")
	require.NoError(t, err)
	want := []Pod{
		{Name: "a", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 1, GPUMilli: 500, GPUSpec: []string{"V100M16", "V100M32"}, CreationTime: Unset, DeletionTime: Unset, ScheduledTime: Unset},
		{Name: "b", CPUMilli: 1000, MemoryMiB: 1024, NumGPU: 2, GPUMilli: 1000, CreationTime: Unset, DeletionTime: Unset, ScheduledTime: Unset},
		{Name: "c", CPUMilli: 1000, MemoryMiB: 1024, GPUSpec: []string{"T4"}, CreationTime: Unset, DeletionTime: Unset, ScheduledTime: Unset},
	}
	assert.Equal(t, want, pods)
}

// TestBadRowsNameFileLineAndColumn: every row the reader refuses is named
// by file, line and column.
func TestBadRowsNameFileLineAndColumn(t *testing.T) {
	const podHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	const good = "p0,1000,1024,1,500,,LS,Running,0,10,0\n"
	for _, tc := range []struct {
		name, input, wantErr string
	}{
		{"empty file", "", "pods.csv: empty, want a header line naming the columns name, cpu_milli, memory_mib, num_gpu, gpu_milli"},
		{"no rows", podHeader, "pods.csv: the pod list has no pods"},
		{"missing column", "name,cpu_milli,num_gpu\n", "pods.csv:1: the header lacks the column(s) memory_mib, gpu_milli"},
		{"column twice", "name,name,cpu_milli\n", `pods.csv:1: column "name" appears twice`},
		{"not a number", podHeader + good + "p1,lots,1024,1,500,,LS,Running,0,10,0\n", `pods.csv:3: column cpu_milli: want an integer from 0 to 9007199254740992, got "lots"`},
		{"negative memory", podHeader + "p1,1000,-1,1,500,,LS,Running,0,10,0\n", `pods.csv:2: column memory_mib: want an integer from 0 to 9007199254740992, got "-1"`},
		{"share above a GPU", podHeader + "p1,1000,1024,1,1500,,LS,Running,0,10,0\n", `pods.csv:2: column gpu_milli: want an integer from 0 to 1000, got "1500"`},
		{"share of several GPUs", podHeader + "p1,1000,1024,2,500,,LS,Running,0,10,0\n", "pods.csv:2: column gpu_milli: a pod of 2 GPUs takes whole GPUs (gpu_milli 1000), not shares"},
		{"GPUs of nothing", podHeader + "p1,1000,1024,1,0,,LS,Running,0,10,0\n", "pods.csv:2: column gpu_milli: a pod of 1 GPUs asks for none of them (gpu_milli 0)"},
		{"share without GPU", podHeader + "p1,1000,1024,0,300,,LS,Running,0,10,0\n", "pods.csv:2: column gpu_milli: a pod without GPUs (num_gpu 0) asks for 300 thousandths of one"},
		{"no name", podHeader + ",1000,1024,1,500,,LS,Running,0,10,0\n", "pods.csv:2: column name: empty"},
		{"bad time", podHeader + "p1,1000,1024,1,500,,LS,Running,soon,10,0\n", `pods.csv:2: column creation_time: want an integer`},
		{"short row", podHeader + good + "p1,1000\n", "pods.csv:3: wrong number of fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPods(strings.NewReader(tc.input), "pods.csv")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	for _, tc := range []struct {
		name, input, wantErr string
	}{
		{"no rows", "sn,cpu_milli,memory_mib,gpu,model\n", "nodes.csv: the node list has no nodes"},
		{"bad GPU count", "sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,two,T4\n", `nodes.csv:2: column gpu: want an integer from 0 to 1024, got "two"`},
		{"listed twice", "sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,2,T4\nn1,1,1,1,T4\nn0,1000,1024,2,T4\n", `nodes.csv:4: column sn: node "n0" is listed again (first on line 2)`},
	} {
		t.Run("nodes "+tc.name, func(t *testing.T) {
			_, err := ReadNodes(strings.NewReader(tc.input), "nodes.csv")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	_, err := ReadPodsFile(filepath.Join(t.TempDir(), "absent.csv"))
	assert.ErrorContains(t, err, "unable to read the pod list")
}

// FuzzReadPods: any input is read without panicking, and every pod read
// asks for something a node can hold: GPUs and shares in range, a share
// only of one GPU.
func FuzzReadPods(f *testing.F) {
	data, err := os.ReadFile(filepath.Join(traceDir, "openb_pod_list_gpuspec33.csv"))
	require.NoError(f, err)
	lines := strings.SplitAfter(string(data), "\n")
	for _, n := range []int{2, 30, 300} {
		f.Add(strings.Join(lines[:n], ""))
	}
	f.Add("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\"a\"\"b\",1,1,1,1\n")
	f.Fuzz(func(t *testing.T, input string) {
		pods, err := ReadPods(strings.NewReader(input), "fuzz.csv")
		if err != nil {
			assert.True(t, strings.HasPrefix(err.Error(), "fuzz.csv"), "the error names the file: %v", err)
			return
		}
		for _, p := range pods {
			r := p.Request()
			assert.GreaterOrEqual(t, r.CPUMilli, int64(0))
			assert.GreaterOrEqual(t, r.MemoryMiB, int64(0))
			assert.LessOrEqual(t, r.GPUMilliTotal(), int64(r.GPUs)*topology.MilliPerGPU)
			assert.Equal(t, r.GPUs > 0, r.GPUMilliTotal() > 0)
		}
	})
}
