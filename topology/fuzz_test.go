package topology_test

import (
	"encoding/json"
	"testing"

	"github.com/mandate-dev/mandate/topology"
)

// FuzzPlace feeds fixtures and requests as the Rego builtin receives them
// (JSON). Invariants: no panic; answers are deterministic and consistent
// with themselves; on small clusters they equal the exhaustive reference.
func FuzzPlace(f *testing.F) {
	fixture, err := json.Marshal(placeFixture)
	if err != nil {
		f.Fatal(err)
	}
	for _, req := range []string{
		`{"pods":1,"gpusPerPod":4,"product":"H100","requiredLevel":"block"}`,
		`{"pods":2,"gpusPerPod":8,"requiredLevel":"spine","preferredLevel":"node"}`,
		`{"pods":3,"gpusPerPod":2,"preferredLevel":"block"}`,
		`{"pods":1,"gpusPerPod":0}`,
	} {
		f.Add(fixture, []byte(req))
	}
	f.Add([]byte(`{"levels":[{"name":"n","nodeLabel":"kubernetes.io/hostname"}],"nodes":[{"name":"a","allocatable":{"nvidia.com/gpu":2}}]}`),
		[]byte(`{"pods":1,"gpusPerPod":1,"requiredLevel":"n"}`))
	f.Fuzz(func(t *testing.T, fixtureJSON, reqJSON []byte) {
		var fx topology.Fixture
		var req topology.Request
		if json.Unmarshal(fixtureJSON, &fx) != nil || json.Unmarshal(reqJSON, &req) != nil {
			return
		}
		snap, err := topology.FromFixture(fx)
		if err != nil {
			return
		}
		got, err := snap.Place(req)
		if err != nil {
			return
		}
		again, _ := snap.Place(req)
		if again != got {
			t.Fatalf("not deterministic: %+v then %+v", got, again)
		}
		if req.GPUsPerPod > 0 {
			checkConsistent(t, req, got)
		}
		if small(fx, req) {
			if want := referencePlace(fx, req); want != got {
				t.Fatalf("request %s\nwant %+v\ngot  %+v", reqJSON, want, got)
			}
		}
	})
}

func checkConsistent(t *testing.T, req topology.Request, r topology.Result) {
	t.Helper()
	switch {
	case r.FitsNow != (r.BestNow.PodSlots >= req.Pods):
		t.Fatalf("FitsNow %v but BestNow has %d slots for %d pods", r.FitsNow, r.BestNow.PodSlots, req.Pods)
	case r.FitsEmpty != (r.Largest.PodSlots >= req.Pods):
		t.Fatalf("FitsEmpty %v but Largest has %d slots for %d pods", r.FitsEmpty, r.Largest.PodSlots, req.Pods)
	case r.FitsNow && !r.FitsEmpty:
		t.Fatal("fits now but not in an empty cluster")
	case r.FitsNow && (r.Score <= 0 || r.Score > 1 || r.FreeAfter < 0 || r.Domain == ""):
		t.Fatalf("fits with score %v, free after %d, domain %q", r.Score, r.FreeAfter, r.Domain)
	case !r.FitsNow && (r.Score != 0 || r.Domain != "" || r.Level != "" || r.FreeAfter != 0):
		t.Fatalf("does not fit but names %q at %q with score %v", r.Domain, r.Level, r.Score)
	case r.ClusterFree > r.ClusterTotal || r.BestNow.GPUs > r.ClusterFree || r.Largest.GPUs > r.ClusterTotal:
		t.Fatalf("inconsistent counts: %+v", r)
	}
}

// small reports whether the reference's brute force stays quick on fx.
func small(fx topology.Fixture, req topology.Request) bool {
	if len(fx.Nodes) > 12 || req.Pods > 8 {
		return false
	}
	for _, n := range fx.Nodes {
		for _, v := range n.Allocatable {
			if v > 16 {
				return false
			}
		}
	}
	return true
}
