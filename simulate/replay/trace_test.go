package replay

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/simulate/openb"
)

// TestTraceFormats: the same job in JSON lines and in CSV reads the same;
// a bad row is named by line.
func TestTraceFormats(t *testing.T) {
	want := []Job{{Name: "x", Submit: 60, Duration: 3600, Tenant: "research-llm", Pods: 4, MinPods: 2, GPUsPerPod: 8,
		Products: []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-B200"}, CPUMilli: 8000, MemoryMiB: 65536, PriorityClass: "train",
		Class: "training", Topology: "block"}}
	js, err := ReadTraceJSON(strings.NewReader(`# comment
{"name":"x","submit":60,"duration":3600,"tenant":"research-llm","pods":4,"minPods":2,"gpusPerPod":8,"products":["NVIDIA-H100-80GB-HBM3","NVIDIA-B200"],"cpuMilli":8000,"memoryMiB":65536,"priorityClass":"train","class":"training","topology":"block"}
`), "t.jsonl")
	require.NoError(t, err)
	require.Equal(t, want, js)
	cs, err := ReadTraceCSV(strings.NewReader(`name,submit,duration,tenant,pods,minPods,gpusPerPod,products,cpuMilli,memoryMiB,priorityClass,class,topology
x,60,3600,research-llm,4,2,8,NVIDIA-H100-80GB-HBM3|NVIDIA-B200,8000,65536,train,training,block
`), "t.csv")
	require.NoError(t, err)
	require.Equal(t, want, cs)

	_, err = ReadTraceCSV(strings.NewReader("name,submit,duration,tenant,pods,gpusPerPod\nx,0,1,a,0,1\n"), "t.csv")
	require.ErrorContains(t, err, "t.csv:2: job x: pods must be at least 1")
	_, err = ReadTraceJSON(strings.NewReader(`{"name":"x","submit":0,"duration":1,"pods":1,"gpusPerPod":1}`), "t.jsonl")
	require.ErrorContains(t, err, "t.jsonl:1: job x: a job needs a tenant or a namespace")
	_, err = ReadTraceCSV(strings.NewReader("name,submit,duration,tenant,pods,gpusPerPod\nx,NaN,1,a,1,1\n"), "t.csv")
	require.ErrorContains(t, err, "t.csv:2: job x: submit and duration must be finite")
	_, err = ReadTraceJSON(strings.NewReader(`{"name":"x","tennant":"a"}`), "t.jsonl")
	require.ErrorContains(t, err, `unknown field "tennant"`)
}

// TestOpenbMapping: the tenant is FNV-1a of the name over the sorted leaf
// tenants, reproducibly; qos picks among the tenant's classes.
func TestOpenbMapping(t *testing.T) {
	m := embedded(t).Model()
	leaves := LeafTenants(m)
	require.Equal(t, []string{"platform", "product", "research-llm", "research-vision"}, leaves)
	jobs, err := FromOpenb([]openb.Pod{
		{Name: "openb-pod-0000", NumGPU: 1, GPUMilli: 1000, QoS: "LS", CreationTime: 0, DeletionTime: 100},
		{Name: "openb-pod-0001", NumGPU: 1, GPUMilli: 460, QoS: "BE", CreationTime: 10, DeletionTime: openb.Unset},
		{Name: "openb-pod-0002", NumGPU: 2, GPUMilli: 1000, QoS: "Burstable", CreationTime: 20, DeletionTime: 50},
	}, m)
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	for _, j := range jobs {
		require.Equal(t, OpenbTenant(j.Name, leaves), j.Tenant, "the same name, the same tenant")
	}
	// platform may use build-preemptible (75, preemptible) and build (100):
	// LS takes the highest, BE the lowest, Burstable the lowest
	// non-preemptible.
	require.Equal(t, "build", OpenbClass(m, "platform", "LS"))
	require.Equal(t, "build-preemptible", OpenbClass(m, "platform", "BE"))
	require.Equal(t, "build", OpenbClass(m, "platform", "Burstable"))
	require.Equal(t, "build-preemptible", OpenbClass(m, "research-vision", "Burstable"), "train and build-preemptible, both preemptible: the highest")
	require.Equal(t, int64(460), jobs[1].GPUMilli)
	require.Equal(t, 90.0, jobs[1].Duration, "never deleted: runs to the trace's last time, 100")
	require.Equal(t, 30.0, jobs[2].Duration)
}

// FuzzReadTrace: any input, as JSON lines or CSV, reads or fails with an
// error, never panics; what reads holds the trace's invariants.
func FuzzReadTrace(f *testing.F) {
	f.Add(`{"name":"x","submit":60,"duration":3600,"tenant":"t","pods":4,"minPods":2,"gpusPerPod":8}`)
	f.Add("name,submit,duration,tenant,pods,gpusPerPod,gpuMilli\nx,0,10,t,1,1,500\n")
	f.Fuzz(func(t *testing.T, in string) {
		for _, read := range []func() ([]Job, error){
			func() ([]Job, error) { return ReadTraceJSON(strings.NewReader(in), "f") },
			func() ([]Job, error) { return ReadTraceCSV(strings.NewReader(in), "f") },
		} {
			jobs, err := read()
			if err != nil {
				continue
			}
			for _, j := range jobs {
				if j.check() != nil || j.Pods < 1 || j.MinPods > j.Pods {
					t.Fatalf("read an invalid job: %+v", j)
				}
			}
		}
	})
}
