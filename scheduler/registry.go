package scheduler

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// RenderFunc renders d onto obj, whose normalised view is w, for one
// scheduler: Adapter.Apply.
type RenderFunc func(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error

// Integration is one scheduler as admission drives it: its facts (package
// facts: keys, kinds, whether it owns its quota) and the function that
// renders a decision for it. Adding a scheduler is one facts.Register (the
// table), one Register here beside its RenderFunc, and one
// schedsync.Register beside its sync renderer when `mandate sync`
// configures it.
type Integration struct {
	Facts  facts.Scheduler
	Render RenderFunc
}

var _ Adapter = Integration{}

// Name is the scheduler's name in the authority model.
func (in Integration) Name() string { return in.Facts.Name }

// Apply renders d onto obj through the integration's RenderFunc.
func (in Integration) Apply(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error {
	return in.Render(obj, w, d)
}

var integrations = struct {
	sync.RWMutex
	render map[string]RenderFunc
}{render: map[string]RenderFunc{}}

// Register makes render the adapter of the scheduler the facts table
// registers as name. It panics when the table has no such scheduler or
// render is nil: a programming error.
func Register(name string, render RenderFunc) {
	if _, ok := facts.Lookup(name); !ok || render == nil {
		panic(fmt.Sprintf("scheduler: Register(%q): the scheduler must be in the facts table and have a render function", name))
	}
	integrations.Lock()
	defer integrations.Unlock()
	integrations.render[name] = render
}

// Unregister removes a scheduler's adapter (for tests that register one of
// their own).
func Unregister(name string) {
	integrations.Lock()
	defer integrations.Unlock()
	delete(integrations.render, name)
}

// Lookup returns the integration of a scheduler the model names: its
// facts and adapter.
func Lookup(name string) (Integration, bool) {
	f, ok := facts.Lookup(name)
	if !ok {
		return Integration{}, false
	}
	integrations.RLock()
	render, ok := integrations.render[name]
	integrations.RUnlock()
	if !ok {
		return Integration{}, false
	}
	return Integration{Facts: f, Render: render}, true
}

// Names lists the schedulers that have an adapter, in the facts table's
// order.
func Names() []string {
	var out []string
	for _, n := range facts.Names() {
		if _, ok := Lookup(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// OwnsQuota reports whether the scheduler the model names admits into a
// quota of its own (Kueue): Mandate holds such a workload suspended on
// CREATE, and reserves nothing for it when it is preemptible (borrowed
// work, which that quota governs); a non-preemptible one holds its
// guarantee from admission, queued or not (review.HoldOf).
func OwnsQuota(name string) bool {
	f, ok := facts.Lookup(name)
	return ok && f.OwnsQuota
}
