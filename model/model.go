// Package model is the authority model (data.mandate.model, the policies'
// data.json) as one Go type, decoded once per policy revision — when a
// bundle or directory is activated (package bundles) or an evaluator is
// built — and read by every Go reader of the model: the cluster state and
// the quota ledger (topology levels, tenant hierarchy, tiers), the
// scheduler sync (tenants' quota, classes, scheduler and queue, the quota
// policy and the preemption rules), the model checker (every fact it
// checks beyond the schema), and the cluster report, explain and the
// authority metrics (guarantees and ceilings per resource and GPU
// product). The facts derived from the model — a tenant's chain, the
// scheduler and priority classes it inherits, its quota per resource and
// product — are methods here, defined once. It imports no OPA, so the
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

// Model is the authority model, every field of
// policies/schema/model.schema.json ($schema aside). Rego decides with the
// same document as data.mandate.model.
type Model struct {
	// Org is the organisation's name, for people.
	Org     string            `json:"org"`
	Tenants map[string]Tenant `json:"tenants"`
	// Priorities are the priority tiers by PriorityClass name.
	Priorities map[string]Tier `json:"priorities"`
	// ClassDefaults maps a workload class (training, batch, interactive,
	// inference) to the priority class of a workload that names none.
	ClassDefaults map[string]string `json:"classDefaults"`
	QuotaPolicy   QuotaPolicy       `json:"quotaPolicy"`
	Preemption    Preemption        `json:"preemption"`
	Topology      Topology          `json:"topology"`
	// DeviceClasses maps DRA DeviceClass names to the quota resource a
	// device of the class counts as (see DeviceResource).
	DeviceClasses map[string]string `json:"deviceClasses"`
	// GPUMemoryMiB is each GPU resource's device memory: a KAI gpu-memory
	// pod counts, and is placed, as its memory's share of a device.
	GPUMemoryMiB topology.GPUMemory `json:"gpuMemoryMiB"`
	// Enforcement maps a dimension or a violation code to its action
	// (deny, warn, dryrun).
	Enforcement map[string]string `json:"enforcement"`
}

// QuotaPolicy says what work above a tenant's guarantee is.
type QuotaPolicy struct {
	// OverGuarantee is what work above a tenant's guarantee is:
	// "preemptible" makes it reclaimable by other tenants.
	OverGuarantee string `json:"overGuarantee"`
}

// Preemption says who may preempt whom.
type Preemption struct {
	// MayPreempt lists, per tier, the tiers it may preempt.
	MayPreempt map[string][]string `json:"mayPreempt"`
	// GangsWhole: a gang is preempted whole or not at all.
	GangsWhole bool `json:"gangsWhole"`
}

// Topology is the cluster's topology: its levels (widest first), which
// nodes are unhealthy, and which level a gang must share.
type Topology struct {
	Name   string           `json:"name"`
	Levels []topology.Level `json:"levels"`
	Health Health           `json:"health"`
	Rules  []TopologyRule   `json:"rules"`
	// Pools are named sets of nodes tenants may be confined to (see
	// Placement).
	Pools map[string]NodePool `json:"pools,omitempty"`
}

// TopologyRule is one rule of topology.rules: a gang of at most MaxGPUs
// (nil: any size) must share a Required domain and prefers a Preferred one.
type TopologyRule struct {
	MaxGPUs   *int   `json:"maxGPUs"`
	Required  string `json:"required"`
	Preferred string `json:"preferred"`
}

// DefaultDeviceClasses are the DRA DeviceClasses counted as GPUs without
// a deviceClasses entry: the NVIDIA DRA driver's whole GPUs.
var DefaultDeviceClasses = map[string]string{"gpu.nvidia.com": topology.DefaultGPUResource}

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

// Counting is what counting a pod's GPUs (topology.PodUsage) reads of
// the model: its GPU device memory and its DRA DeviceClass mapping.
func (m Model) Counting() topology.Counting {
	return topology.Counting{GPUMemory: m.GPUMemoryMiB, DeviceResource: m.DeviceResource}
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
		Pools:               m.PoolSelectors(),
	}
}

// Tenant is one tenant of the model.
type Tenant struct {
	// Parent is the tenant above this one; "" for a root.
	Parent      string `json:"parent"`
	Description string `json:"description"`
	// Quota is the tenant's quota by GPU resource (nvidia.com/gpu,
	// nvidia.com/mig-1g.10gb).
	Quota map[string]Quota `json:"quota"`
	// PriorityClasses are the tiers the tenant's work may run at. nil (the
	// key absent) inherits the nearest ancestor's list; an empty list
	// allows none. See AllowedClasses.
	PriorityClasses []string `json:"priorityClasses"`
	// Scheduler runs the tenant's work; "" inherits (see SchedulerOf).
	Scheduler string `json:"scheduler"`
	// Queue is the scheduler queue of the tenant's work; "" is the
	// tenant's name (see QueueName).
	Queue string `json:"queue"`
	// Placement is where the tenant's work may run (see Placement).
	Placement Placement `json:"placement,omitzero"`
}

// Tier is one priority class of the model.
type Tier struct {
	Value       int  `json:"value"`
	Preemptible bool `json:"preemptible"`
	// BorrowedValue is the value of a non-preemptible tier's borrowed
	// class (BorrowedClass); nil takes the default (BorrowedValues).
	BorrowedValue *int   `json:"borrowedValue,omitempty"`
	Description   string `json:"description"`
}

// Document is data.mandate.model of a policy's data, as decoded JSON; ok
// false when there is none.
func Document(data map[string]any) (doc any, ok bool) {
	mandate, _ := data["mandate"].(map[string]any)
	doc, ok = mandate["model"]
	return doc, ok
}

// Decode reads an authority model document (decoded JSON: maps, slices,
// strings, bools and numbers) into the Model, checking types only: a
// value of the wrong type is an error, a model that breaks the model's
// rules is not (package modelcheck says what is wrong with it).
func Decode(doc any) (Model, error) {
	var m Model
	b, err := json.Marshal(doc)
	if err != nil {
		return m, fmt.Errorf("unable to read mandate.model: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("mandate.model is malformed: %w", err)
	}
	return m, nil
}

// FromData reads data.mandate.model out of a policy's data: Decode, and
// Usable.
func FromData(data map[string]any) (Model, error) {
	doc, ok := Document(data)
	if !ok {
		return Model{}, fmt.Errorf("policy data has no mandate.model: the authority model is missing")
	}
	m, err := Decode(doc)
	if err != nil {
		return m, err
	}
	return m, m.Usable()
}

// Usable checks what every reader of a decoded model relies on: each
// parent is a tenant, and the topology has levels. (The model checker
// checks much more, and says where; a model it passes is usable.)
func (m Model) Usable() error {
	for _, name := range m.TenantNames() {
		if p := m.Tenants[name].Parent; p != "" {
			if _, ok := m.Tenants[p]; !ok {
				return fmt.Errorf("mandate.model.tenants.%s.parent names unknown tenant %q", name, p)
			}
		}
	}
	if len(m.Topology.Levels) == 0 {
		return fmt.Errorf("mandate.model.topology.levels is empty: the cluster's topology levels must be configured")
	}
	return nil
}
