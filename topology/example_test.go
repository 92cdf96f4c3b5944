package topology_test

import (
	"encoding/json"
	"fmt"

	"github.com/mandate-dev/mandate/topology"
)

func ExampleSnapshot_Place() {
	snap, err := topology.FromFixture(topology.Fixture{
		Levels: []topology.Level{
			{Name: "block", NodeLabel: "example.com/block"},
			{Name: "node", NodeLabel: "kubernetes.io/hostname"},
		},
		Nodes: []topology.FixtureNode{
			{Name: "n1", Labels: map[string]string{"example.com/block": "b1"},
				Allocatable: map[string]int{"nvidia.com/gpu": 8}, Used: map[string]int{"nvidia.com/gpu": 2}},
			{Name: "n2", Labels: map[string]string{"example.com/block": "b1"},
				Allocatable: map[string]int{"nvidia.com/gpu": 8}},
			{Name: "n3", Labels: map[string]string{"example.com/block": "b2"},
				Allocatable: map[string]int{"nvidia.com/gpu": 8}, Used: map[string]int{"nvidia.com/gpu": 4}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := snap.Place(topology.Request{Pods: 2, GPUsPerPod: 4, RequiredLevel: "block", PreferredLevel: "node"})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "fitsNow": true,
	//   "fitsEmpty": true,
	//   "domain": "b1/n2",
	//   "level": "node",
	//   "score": 1,
	//   "freeAfter": 0,
	//   "largest": {
	//     "domain": "b1",
	//     "level": "block",
	//     "podSlots": 4,
	//     "gpus": 16
	//   },
	//   "bestNow": {
	//     "domain": "b1",
	//     "level": "block",
	//     "podSlots": 3,
	//     "gpus": 14
	//   },
	//   "clusterFree": 18,
	//   "clusterTotal": 24
	// }
}
