// Package model is the Go view of the authority model: the part of the
// policy data (data.mandate.model) that Go needs outside Rego — the
// topology levels that shape the cluster model, and the tenant hierarchy
// and priority tiers that shape the quota ledger. It imports no OPA, so the
// cluster state and the ledger depend on the model, not on the evaluator.
package model

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mandate-dev/mandate/topology"
)

// MaxDepth is how deep the tenant hierarchy may be: a tenant and at most
// MaxDepth-1 ancestors. It is the one limit of every walk up the hierarchy:
// the Rego chain (mandate.lib.chain, written out to this many tenants), the
// quota ledger's roll-ups, and the model checker, which rejects a deeper
// hierarchy before any of them sees it.
const MaxDepth = 6

// Model is the part of the authority model (data.mandate.model) the Go side
// needs outside Rego: topology levels for the cluster model, the tenant
// hierarchy and tiers for the quota ledger, and what shapes the
// schedulers' configuration (package schedsync): each tenant's quota,
// classes, scheduler and queue, the quota policy and the preemption rules.
type Model struct {
	Tenants     map[string]Tenant `json:"tenants"`
	Priorities  map[string]Tier   `json:"priorities"`
	QuotaPolicy struct {
		// OverGuarantee is what work above a tenant's guarantee is:
		// "preemptible" makes it reclaimable by other tenants.
		OverGuarantee string `json:"overGuarantee"`
	} `json:"quotaPolicy"`
	Preemption struct {
		// MayPreempt lists, per tier, the tiers it may preempt.
		MayPreempt map[string][]string `json:"mayPreempt"`
	} `json:"preemption"`
	Topology struct {
		Name   string           `json:"name"`
		Levels []topology.Level `json:"levels"`
		Health Health           `json:"health"`
	} `json:"topology"`
	// DeviceClasses maps DRA DeviceClass names to the quota resource a
	// device of the class counts as (see DeviceResource).
	DeviceClasses map[string]string `json:"deviceClasses"`
	// GPUMemoryMiB is each GPU resource's device memory: a KAI gpu-memory
	// pod counts, and is placed, as its memory's share of a device.
	GPUMemoryMiB topology.GPUMemory `json:"gpuMemoryMiB"`
}

// DefaultDeviceClasses are the DRA DeviceClasses counted as GPUs without
// a deviceClasses entry: the NVIDIA DRA driver's whole GPUs.
var DefaultDeviceClasses = map[string]string{"gpu.nvidia.com": "nvidia.com/gpu"}

// DeviceResource is the quota resource a device of DRA DeviceClass class
// counts as: the model's deviceClasses entry, else DefaultDeviceClasses';
// ok is false for a class the model does not count as GPUs.
func (m Model) DeviceResource(class string) (string, bool) {
	if r, ok := m.DeviceClasses[class]; ok {
		return r, r != ""
	}
	r, ok := DefaultDeviceClasses[class]
	return r, ok
}

// Health says which nodes are unhealthy and so leave the fit: a node label
// (e.g. nvidia.com/gpu.health=unhealthy, set by GPU health checks) and node
// condition types (e.g. GPUThermalThrottling or XID errors published by a
// node-problem-detector). Cordoned, NotReady and untolerated-tainted nodes
// leave it anyway.
type Health struct {
	// Label is the node label marking an unhealthy node; "" for none.
	Label string `json:"label"`
	// UnhealthyValues are the values of Label that mark a node unhealthy;
	// empty means any value but "false".
	UnhealthyValues []string `json:"unhealthyValues"`
	// Conditions are node condition types that, when True, mark a node
	// unhealthy.
	Conditions []string `json:"conditions"`
}

// TopologyConfig is the cluster-model configuration the authority model
// implies: its levels, its health rules and its GPU device memory.
func (m Model) TopologyConfig() topology.Config {
	h := m.Topology.Health
	return topology.Config{
		Levels:              slices.Clone(m.Topology.Levels),
		UnhealthyLabel:      h.Label,
		UnhealthyValues:     slices.Clone(h.UnhealthyValues),
		UnhealthyConditions: slices.Clone(h.Conditions),
		GPUMemoryMiB:        m.GPUMemoryMiB,
	}
}

// Tenant is one tenant of the model, as far as Go needs it. Quota stays
// raw: Rego decides with it, and schedsync reads its shape (Spec.Quotas).
type Tenant struct {
	Parent          string          `json:"parent"`
	Description     string          `json:"description"`
	Quota           json.RawMessage `json:"quota"`
	PriorityClasses []string        `json:"priorityClasses"`
	Scheduler       string          `json:"scheduler"`
	Queue           string          `json:"queue"`
}

// Tier is one priority class of the model.
type Tier struct {
	Value       int    `json:"value"`
	Preemptible bool   `json:"preemptible"`
	Description string `json:"description"`
}

// Parents maps each tenant to its parent ("" for a root).
func (m Model) Parents() map[string]string {
	out := make(map[string]string, len(m.Tenants))
	for name, t := range m.Tenants {
		out[name] = t.Parent
	}
	return out
}

// PreemptibleClasses lists which priority classes are preemptible tiers.
func (m Model) PreemptibleClasses() map[string]bool {
	out := make(map[string]bool, len(m.Priorities))
	for name, t := range m.Priorities {
		out[name] = t.Preemptible
	}
	return out
}

// FromData reads data.mandate.model out of a policy's data.
func FromData(data map[string]any) (Model, error) {
	var m Model
	mandate, _ := data["mandate"].(map[string]any)
	raw, ok := mandate["model"]
	if !ok {
		return m, fmt.Errorf("policy data has no mandate.model: the authority model is missing")
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return m, fmt.Errorf("unable to read mandate.model: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("mandate.model is malformed: %w", err)
	}
	for name, t := range m.Tenants {
		if t.Parent != "" {
			if _, ok := m.Tenants[t.Parent]; !ok {
				return m, fmt.Errorf("mandate.model.tenants.%s.parent names unknown tenant %q", name, t.Parent)
			}
		}
	}
	if len(m.Topology.Levels) == 0 {
		return m, fmt.Errorf("mandate.model.topology.levels is empty: the cluster's topology levels must be configured")
	}
	return m, nil
}
