package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/topology"
)

// Node event actions.
const (
	ActionFail   = "fail"
	ActionRepair = "repair"
)

// NodeEvent is a node failing or being repaired at a time (seconds). A
// failed node's running jobs are stopped and queued again (their GPU-hours
// so far lost); it takes nothing until repaired, and the decisions see it
// unhealthy (the model's topology.health label).
type NodeEvent struct {
	At     float64 `json:"at"`
	Node   string  `json:"node"`
	Action string  `json:"action"`
}

// ReadEventsFile reads node events, one JSON object a line.
func ReadEventsFile(path string) ([]NodeEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read the events: %w", err)
	}
	defer f.Close()
	var out []NodeEvent
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var e NodeEvent
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if e.Action != ActionFail && e.Action != ActionRepair {
			return nil, fmt.Errorf("%s:%d: action %q, want %s or %s", path, line, e.Action, ActionFail, ActionRepair)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

type eventKind int

// At one time: finishes first (they free capacity), then failures and
// repairs, then arrivals.
const (
	evFinish eventKind = iota
	evFail
	evRepair
	evArrive
)

type event struct {
	at   float64
	kind eventKind
	job  *job
	node int
	gen  int
	seq  int
}

type eventHeap struct {
	items []event
	n     int
}

func (h *eventHeap) Len() int { return len(h.items) }
func (h *eventHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if x.at != y.at {
		return x.at < y.at
	}
	if x.kind != y.kind {
		return x.kind < y.kind
	}
	return x.seq < y.seq
}
func (h *eventHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *eventHeap) Push(x any) {
	e := x.(event)
	h.n++
	e.seq = h.n
	h.items = append(h.items, e)
}
func (h *eventHeap) Pop() any {
	e := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return e
}

// fail stops node i's jobs and blocks the node.
func (s *sim) fail(i int) {
	if s.down[i] {
		return
	}
	var stopped []*job
	for j := range s.running {
		for _, b := range j.bindings {
			if b.Node == i {
				stopped = append(stopped, j)
				break
			}
		}
	}
	sort.Slice(stopped, func(a, b int) bool { return stopped[a].seq < stopped[b].seq })
	for _, j := range stopped {
		s.evict(j, false)
	}
	s.down[i] = true
	n := &s.c.Nodes[i]
	s.downGPUs += float64(n.GPUs)
	_ = s.c.Bind(blocker(n), blockerBinding(i, n))
	s.state.UpsertNode(s.healthOf(s.nodes[i], false))
}

func (s *sim) repair(i int) {
	if !s.down[i] {
		return
	}
	s.down[i] = false
	n := &s.c.Nodes[i]
	s.downGPUs -= float64(n.GPUs)
	s.c.Release(blocker(n), blockerBinding(i, n))
	s.state.UpsertNode(s.nodes[i])
}

// blocker takes all of an empty node.
func blocker(n *alloc.Node) alloc.Request {
	return alloc.Request{CPUMilli: n.CPUMilli, MemoryMiB: n.MemoryMiB, GPUs: n.GPUs, GPUMilli: topology.MilliPerGPU}
}

func blockerBinding(i int, n *alloc.Node) alloc.Binding {
	b := alloc.Binding{Node: i}
	for g := range n.GPUs {
		b.GPUs = append(b.GPUs, g)
	}
	return b
}

// healthOf is node n as the decisions see it failed: the model's health
// label set to its first unhealthy value, else not Ready.
func (s *sim) healthOf(n *corev1.Node, healthy bool) *corev1.Node {
	if healthy {
		return n
	}
	c := n.DeepCopy()
	h := s.m.Topology.Health
	if h.Label != "" {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[h.Label] = "true"
		if len(h.UnhealthyValues) > 0 {
			c.Labels[h.Label] = h.UnhealthyValues[0]
		}
	}
	c.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	return c
}

func runtimeFromMap(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
