package scheduler

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

// ErrNotRenderable marks a workload whose kind its tenant's scheduler
// cannot run as the model decided: a Volcano Job (whose gang only
// Volcano's job controller builds) sent to KAI or the default scheduler
// would be admitted half-rendered.
var ErrNotRenderable = errors.New("kind cannot be rendered for the scheduler")

// CodeNotRenderable is the violation code of a workload its tenant's
// scheduler cannot run.
const CodeNotRenderable = "SCHEDULER_KIND_UNSUPPORTED"

// Renderable reports, as an error wrapping ErrNotRenderable (or
// ErrUnknownScheduler), why a workload of kind gvk cannot be rendered for
// scheduler; nil when it can.
func Renderable(gvk schema.GroupVersionKind, scheduler string) error {
	adapter, err := For(scheduler)
	if err != nil {
		return err
	}
	if k, ok := workload.Lookup(gvk); ok && k.VolcanoNative && adapter.Name() != Volcano {
		return fmt.Errorf("%w: a %s %s is Volcano's own gang kind, which only Volcano's job controller runs, but the tenant's scheduler is %s; submit a batch/v1 Job (or another kind its scheduler runs) instead",
			ErrNotRenderable, gvk.GroupVersion(), gvk.Kind, adapter.Name())
	}
	return nil
}

// RefuseUnrenderable turns an allowing decision whose directives name a
// scheduler that cannot run the workload's kind into a denial with that
// reason, so the workload is never admitted half-rendered. Other decisions
// are returned as they are. The directives stay, for explanations.
func RefuseUnrenderable(w workload.Workload, d evaluator.Decision) evaluator.Decision {
	if !d.Allowed {
		return d
	}
	err := Renderable(schema.FromAPIVersionAndKind(w.APIVersion, w.Kind), d.Directives.Scheduler)
	if !errors.Is(err, ErrNotRenderable) {
		return d // an unknown scheduler fails Render, as a misconfigured model
	}
	d.Allowed = false
	d.Violations = append(d.Violations, evaluator.Violation{
		Code: CodeNotRenderable, Dimension: evaluator.DimensionTenancy, Message: err.Error(), Enforcement: evaluator.EnforceDeny,
	})
	return d
}
