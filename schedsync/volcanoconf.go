package schedsync

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/model"
)

// Volcano's scheduler reads its actions and plugin tiers from one key of a
// ConfigMap (the Volcano chart's volcano-scheduler-configmap in
// volcano-system, mounted into the scheduler, which reloads it when it
// changes). Which actions run decides whether borrowed capacity is ever
// taken back across queues (reclaim) and within a queue (preempt); where the
// gang plugin sits decides whether an eviction keeps a gang whole: the
// scheduler asks the tiers in order for the victims a preemptor may take,
// the plugins of the first tier that answers decide together (each may veto
// a victim), and gang's preemptable and reclaimable functions veto a victim
// whose eviction would leave its gang below minMember. Sync renders the
// configuration the promise needs and vets a live one against it.
const (
	// DefaultVolcanoConfigNamespace and DefaultVolcanoConfigName locate the
	// ConfigMap as the Volcano chart installs it.
	DefaultVolcanoConfigNamespace = "volcano-system"
	DefaultVolcanoConfigName      = "volcano-scheduler-configmap"
	// VolcanoConfigKey is the data key of the configuration, the only key
	// sync writes.
	VolcanoConfigKey = "volcano-scheduler.conf"
)

// The actions and plugins the promise needs. Volcano's queue-share plugin
// must be the one whose fields the rendered Queues set: capacity reads
// deserved, capability and guarantee (volcanoObjects); proportion reads a
// weight Mandate does not set and must not run beside it.
const (
	volcanoReclaim    = "reclaim"
	volcanoPreempt    = "preempt"
	volcanoGang       = "gang"
	volcanoPriority   = "priority"
	volcanoCapacity   = "capacity"
	volcanoProportion = "proportion"
)

// volcanoActions and volcanoTiers are the rendered configuration: enqueue
// (gangs wait whole for their minimum), allocate, preempt (within a queue),
// reclaim (across queues), backfill; gang, priority and conformance decide
// victims together in the first tier, the queue shares and placement come
// after.
var (
	volcanoActions = []string{"enqueue", "allocate", volcanoPreempt, volcanoReclaim, "backfill"}
	volcanoTiers   = [][]string{
		{volcanoPriority, volcanoGang, "conformance"},
		{"predicates", volcanoCapacity, "nodeorder", "binpack"},
	}
)

// configMapGVK is the core ConfigMap.
var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// VolcanoConfigMap names the ConfigMap Volcano's scheduler reads its
// configuration from; empty fields take the chart's defaults.
type VolcanoConfigMap struct {
	Namespace, Name string
}

func (c VolcanoConfigMap) orDefaults() VolcanoConfigMap {
	if c.Namespace == "" {
		c.Namespace = DefaultVolcanoConfigNamespace
	}
	if c.Name == "" {
		c.Name = DefaultVolcanoConfigName
	}
	return c
}

// VolcanoConfig is the part of volcano-scheduler.conf the promise depends
// on, as Volcano reads it: a comma-separated action list and tiers of
// plugins. A plugin's enable flags default to true when absent.
type VolcanoConfig struct {
	Actions string        `json:"actions"`
	Tiers   []VolcanoTier `json:"tiers"`
}

// VolcanoTier is one tier of plugins.
type VolcanoTier struct {
	Plugins []VolcanoPlugin `json:"plugins"`
}

// VolcanoPlugin is one plugin of a tier and the flags that switch its
// victim functions off.
type VolcanoPlugin struct {
	Name              string `json:"name"`
	EnablePreemptable *bool  `json:"enablePreemptable,omitempty"`
	EnableReclaimable *bool  `json:"enableReclaimable,omitempty"`
	// EnableHierarchy makes the capacity plugin read the queues' parents;
	// unlike the others it is off when absent.
	EnableHierarchy *bool `json:"enableHierarchy,omitempty"`
}

// ParseVolcanoConfig reads volcano-scheduler.conf.
func ParseVolcanoConfig(conf string) (VolcanoConfig, error) {
	var c VolcanoConfig
	if err := yaml.Unmarshal([]byte(conf), &c); err != nil {
		return c, fmt.Errorf("unable to read %s: %w", VolcanoConfigKey, err)
	}
	return c, nil
}

// ActionList is the configured actions, in order.
func (c VolcanoConfig) ActionList() []string {
	var out []string
	for _, a := range strings.Split(c.Actions, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// plugin finds a plugin: the index of its tier, -1 when absent.
func (c VolcanoConfig) plugin(name string) (VolcanoPlugin, int) {
	for i, t := range c.Tiers {
		for _, p := range t.Plugins {
			if p.Name == name {
				return p, i
			}
		}
	}
	return VolcanoPlugin{}, -1
}

func enabled(flag *bool) bool { return flag == nil || *flag }

// VolcanoProblem is one way a configuration breaks the promise: a code and
// the reason in words.
type VolcanoProblem struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// The VolcanoProblem codes.
const (
	VolcanoUnreadable          = "UNREADABLE"
	VolcanoNoReclaim           = "NO_RECLAIM"
	VolcanoNoPreempt           = "NO_PREEMPT"
	VolcanoNoGang              = "NO_GANG"
	VolcanoGangNotFirst        = "GANG_NOT_IN_FIRST_TIER"
	VolcanoGangVetoOff         = "GANG_VETO_DISABLED"
	VolcanoNoPriority          = "PRIORITY_NOT_IN_FIRST_TIER"
	VolcanoNoQueueShare        = "NO_CAPACITY_PLUGIN"
	VolcanoQueueShareReclaimOf = "CAPACITY_RECLAIM_DISABLED"
	VolcanoHierarchyOff        = "CAPACITY_HIERARCHY_OFF"
	VolcanoProportion          = "PROPORTION_PLUGIN"
)

// CheckVolcanoConfig lists how a volcano-scheduler.conf breaks the promise
// (none when it keeps it): it must reclaim across queues and preempt within
// one; the gang plugin must sit in the first tier with its preemptable and
// reclaimable vetoes on, so no eviction leaves a gang below its minimum;
// the priority plugin must decide beside it, so the lowest value (the
// borrowed band) goes first; and the capacity plugin, which reads the
// rendered Queues' deserved and capability, must share the queues without
// the proportion plugin, and read their parents (enableHierarchy) when the
// model's tenants nest (hierarchy).
func CheckVolcanoConfig(conf string, hierarchy bool) []VolcanoProblem {
	c, err := ParseVolcanoConfig(conf)
	if err != nil {
		return []VolcanoProblem{{VolcanoUnreadable, err.Error()}}
	}
	var out []VolcanoProblem
	add := func(code, format string, args ...any) {
		out = append(out, VolcanoProblem{Code: code, Reason: fmt.Sprintf(format, args...)})
	}
	actions := c.ActionList()
	if !slices.Contains(actions, volcanoReclaim) {
		add(VolcanoNoReclaim, "never reclaims: the actions %q have no %s, so work a queue borrowed beyond its guarantee is never taken back for another tenant's guaranteed work", c.Actions, volcanoReclaim)
	}
	if !slices.Contains(actions, volcanoPreempt) {
		add(VolcanoNoPreempt, "never preempts within a queue: the actions %q have no %s, so a tenant's guaranteed work waits behind its own borrowed work", c.Actions, volcanoPreempt)
	}
	gang, tier := c.plugin(volcanoGang)
	switch {
	case tier < 0:
		add(VolcanoNoGang, "evicts gangs pod by pod: no tier has the %s plugin, whose veto keeps each gang at its minMember", volcanoGang)
	case tier > 0:
		add(VolcanoGangNotFirst, "evicts gangs pod by pod: the %s plugin is in tier %d, and the plugins of the first tier choose the victims without its veto", volcanoGang, tier+1)
	}
	if tier >= 0 {
		var off []string
		if !enabled(gang.EnablePreemptable) {
			off = append(off, "enablePreemptable")
		}
		if !enabled(gang.EnableReclaimable) {
			off = append(off, "enableReclaimable")
		}
		if len(off) > 0 {
			add(VolcanoGangVetoOff, "evicts gangs pod by pod: the %s plugin has %s false, which turns its veto off", volcanoGang, strings.Join(off, " and "))
		}
	}
	if prio, tier := c.plugin(volcanoPriority); tier != 0 || !enabled(prio.EnablePreemptable) {
		add(VolcanoNoPriority, "does not evict the lowest value first: the %s plugin must decide in the first tier with enablePreemptable on, so borrowed work (the borrowed band) goes before guaranteed work", volcanoPriority)
	}
	if capa, tier := c.plugin(volcanoCapacity); tier < 0 {
		add(VolcanoNoQueueShare, "ignores the tenants' guarantees: no tier has the %s plugin, which reads the deserved and capability Mandate renders into each Queue", volcanoCapacity)
	} else {
		if !enabled(capa.EnableReclaimable) {
			add(VolcanoQueueShareReclaimOf, "reclaims from queues within their guarantee: the %s plugin has enableReclaimable false", volcanoCapacity)
		}
		if hierarchy && (capa.EnableHierarchy == nil || !*capa.EnableHierarchy) {
			add(VolcanoHierarchyOff, "ignores the tenant tree: the %s plugin has no enableHierarchy: true, so work in a child tenant's queue is not held to its parent's capability and guarantee", volcanoCapacity)
		}
	}
	if _, tier := c.plugin(volcanoProportion); tier >= 0 {
		add(VolcanoProportion, "shares queues by weight: the %s plugin reads a weight Mandate's Queues do not set and must not run beside %s", volcanoProportion, volcanoCapacity)
	}
	return out
}

// RenderVolcanoConfig is the volcano-scheduler.conf that keeps the promise.
func RenderVolcanoConfig() string {
	var b strings.Builder
	b.WriteString("# Rendered by mandate sync: reclaim and preempt evict only borrowed work,\n")
	b.WriteString("# the lowest value first; gang in the first tier keeps every gang whole.\n")
	fmt.Fprintf(&b, "actions: %q\n", strings.Join(volcanoActions, ", "))
	b.WriteString("tiers:\n")
	for _, t := range volcanoTiers {
		b.WriteString("- plugins:\n")
		for _, p := range t {
			fmt.Fprintf(&b, "  - name: %s\n", p)
			if p == volcanoCapacity {
				// Mandate's Queues nest as the tenants do (spec.parent).
				b.WriteString("    enableHierarchy: true\n")
			}
		}
	}
	return b.String()
}

// volcanoConfigObject is the ConfigMap with the rendered configuration. It
// carries Mandate's labels only for a ConfigMap sync creates: one that
// exists and is not Mandate's (the Volcano chart's) is never written, only
// vetted.
// hierarchy says whether the tenants nest: whether the Queues have parents.
func volcanoConfigObject(ref VolcanoConfigMap, hierarchy bool) Object {
	ref = ref.orDefaults()
	k := Kind{GVK: configMapGVK, Scheduler: Volcano, Namespaced: true}
	o := newObject(k, ref.Namespace, ref.Name, nil)
	o.Object["data"] = map[string]any{VolcanoConfigKey: RenderVolcanoConfig()}
	o.Vet = func(live *unstructured.Unstructured) []string { return vetVolcanoConfig(live, hierarchy) }
	return o
}

// vetVolcanoConfig is the reasons a live ConfigMap's configuration breaks
// the promise.
func vetVolcanoConfig(live *unstructured.Unstructured, hierarchy bool) []string {
	conf, found, _ := unstructured.NestedString(live.Object, "data", VolcanoConfigKey)
	if !found {
		return []string{fmt.Sprintf("has no data key %s: Volcano runs its built-in configuration, which never reclaims", VolcanoConfigKey)}
	}
	var out []string
	for _, p := range CheckVolcanoConfig(conf, hierarchy) {
		out = append(out, p.Reason)
	}
	return out
}

// nested reports whether any tenant of the model has a parent.
func nested(s model.Model) bool {
	for _, t := range s.Tenants {
		if t.Parent != "" {
			return true
		}
	}
	return false
}
