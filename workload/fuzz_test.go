package workload

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzNormalize feeds arbitrary bytes through Decode and Normalize. The
// invariant: no panic, and either a Workload that keeps the contract or an
// error that wraps ErrInvalid or ErrUnsupportedKind.
func FuzzNormalize(f *testing.F) {
	for _, pattern := range []string{"testdata/*.yaml", "testdata/list.json"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(pod(", annotations: {gpu-fraction: '0.5', gpu-fraction-num-devices: '2'}", "{}")))
	f.Add([]byte(job("parallelism: 16", "annotations: {}", "\n    metadata: {annotations: {gpu-fraction: '0.25'}}")))
	f.Add([]byte(volcanoJob("minAvailable: 2", "{nvidia.com/gpu: 4}", "1", "3")))
	// DRA claim references (counted by the review service).
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  resourceClaims: [{name: g, resourceClaimTemplateName: one-gpu}, {name: s, resourceClaimName: shared}, {name: x}]\n  containers: [{name: c, image: i, resources: {claims: [{name: g}]}}]\n"))
	// Schedulers' own keys, read as requests (see schedkeys.go).
	f.Add([]byte(pod(", labels: {priorityClassName: train, kai.scheduler/queue: q}, annotations: {kai.scheduler/batch-min-member: '1'}", "{nvidia.com/gpu: 1}")))
	f.Add([]byte(volcanoJob("minAvailable: 2\n  queue: default", "{nvidia.com/gpu: 1}", "4")))
	f.Add([]byte(job("parallelism: 6", "annotations: {kai.scheduler/batch-min-member: ' 2', scheduling.volcano.sh/queue-name: x}", "\n      priorityClassName: build")))

	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		for _, obj := range objs {
			w, err := Normalize(obj)
			if err != nil {
				if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnsupportedKind) {
					t.Fatalf("Normalize error wraps neither ErrInvalid nor ErrUnsupportedKind: %v", err)
				}
				continue
			}
			checkContract(t, w)
		}
	})
}

// checkContract asserts what every Workload from a built-in Normaliser
// promises.
func checkContract(t *testing.T, w Workload) {
	t.Helper()
	if w.Pods < 1 || w.Pods > MaxPods || w.MinPods < 0 || w.MinPods > w.Pods ||
		w.GPUsPerPod < 0 || w.GPUsPerPod > MaxGPUsPerPod || w.TotalGPUs < 0 {
		t.Fatalf("counts out of range: %+v", w)
	}
	if len(w.Roles) != len(w.Templates) || len(w.Roles) == 0 {
		t.Fatalf("%d roles but %d templates", len(w.Roles), len(w.Templates))
	}
	pods, total, perPod := 0, 0, 0
	for _, r := range w.Roles {
		pods += r.Replicas
		total += r.Replicas * r.GPUsPerPod
		perPod = max(perPod, r.GPUsPerPod)
	}
	if w.GPUFraction > 0 { // fractions count as the fraction, rounded up once for the gang
		if milli := int64(total) * FractionMilli(w.GPUFraction); milli != w.TotalMilliGPUs || int((milli+999)/1000) != w.TotalGPUs {
			t.Fatalf("fractional GPUs miscounted: %d devices at %g, %d milli, %d GPUs", total, w.GPUFraction, w.TotalMilliGPUs, w.TotalGPUs)
		}
		total = w.TotalGPUs
	} else if w.TotalMilliGPUs != int64(w.TotalGPUs)*1000 {
		t.Fatalf("%d GPUs but %d milli-GPUs", w.TotalGPUs, w.TotalMilliGPUs)
	}
	if pods != w.Pods || total != w.TotalGPUs || perPod != w.GPUsPerPod {
		t.Fatalf("roles disagree with totals: pods %d/%d, GPUs %d/%d, per pod %d/%d", pods, w.Pods, total, w.TotalGPUs, perPod, w.GPUsPerPod)
	}
	if (w.GPUResource == "") != (w.GPUsPerPod == 0) {
		t.Fatalf("GPU resource %q with %d GPUs per pod", w.GPUResource, w.GPUsPerPod)
	}
	if w.GPUFraction < 0 || w.GPUFraction >= 1 || w.Labels == nil || w.Annotations == nil {
		t.Fatalf("malformed workload: %+v", w)
	}
	for _, k := range w.SchedulerKeys {
		if k.Key == "" || (k.Asks != AsksQueue && k.Asks != AsksPriorityClass && k.Asks != AsksGangMin) {
			t.Fatalf("malformed scheduler key %+v", k)
		}
	}
	if w.Name == "" && w.GenerateName == "" {
		t.Fatalf("workload without a name: %+v", w)
	}
}

// TestFuzzSeedsCoverEveryKind: FuzzNormalize is seeded with an example of
// every registered kind (testdata/*.yaml, the upstream projects' own where
// they ship one), so each normaliser is fuzzed from a valid object.
func TestFuzzSeedsCoverEveryKind(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, obj := range objs {
			if _, err := Normalize(obj); err == nil {
				seen[gvkString(obj.GroupVersionKind())] = true
			}
		}
	}
	for _, k := range Kinds() {
		if !seen[gvkString(k.GVK)] {
			t.Errorf("no example of %s in testdata/ seeds FuzzNormalize", gvkString(k.GVK))
		}
	}
}
