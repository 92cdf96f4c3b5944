package review

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// SchedulerObjects is what the service needs to know of the scheduler
// objects the directives name (priority classes, queues, topologies): whether the cluster
// carries them, from a cache, never a read per admission. serve passes
// the cluster's informers; `mandate eval` passes none and says nothing.
type SchedulerObjects interface {
	Lookup(gvk schema.GroupVersionKind, namespace, name string) cluster.SchedulerObject
}

var _ SchedulerObjects = (*cluster.SchedulerObjects)(nil)

// syncHint ends every warning about a scheduler object that the model
// names and the cluster lacks: `mandate sync` creates it from the model.
const syncHint = "run `mandate sync`"

// schedulerWarnings are the warnings an admitted decision carries besides
// the policy's: the topology levels its scheduler is not told
// (scheduler.AdvisoryLevels), and the priority class, queue and topology
// it names that the cluster does not carry, or carries closed or without
// the required level: admitted, the job would wait without a word from the
// scheduler (or, without its priority class, its pods would never be
// created). Which objects a scheduler's directives name, and of which
// kinds, is the registry's (package facts).
func (s *Service) schedulerWarnings(w workload.Workload, d evaluator.Decision) []string {
	if !d.Allowed {
		return nil
	}
	dir := d.Directives
	out := scheduler.AdvisoryLevels(w, dir)
	if s.SchedulerObjects == nil {
		return out
	}
	if dir.PriorityClass != "" && s.SchedulerObjects.Lookup(cluster.PriorityClassGVK, "", dir.PriorityClass).Presence == cluster.Missing {
		out = append(out, fmt.Sprintf("priority class %s does not exist: the pods cannot be created until it does; %s", dir.PriorityClass, syncHint))
	}
	sched, ok := facts.Lookup(dir.Scheduler)
	if !ok {
		return out
	}
	if q := sched.QueueKind; q != nil && dir.Queue != "" {
		namespace := ""
		if q.Namespaced {
			namespace = w.Namespace
		}
		switch o := s.SchedulerObjects.Lookup(q.GVK, namespace, dir.Queue); o.Presence {
		case cluster.Missing:
			out = append(out, fmt.Sprintf("%s queue %s does not exist: the job will wait until it does; %s", sched.Title, dir.Queue, syncHint))
		case cluster.NotOpen:
			state := o.State
			if state == "" {
				state = "not open yet (no status.state)"
			}
			out = append(out, fmt.Sprintf("%s queue %s is %s: the job will wait until it is Open; %s", sched.Title, dir.Queue, state, syncHint))
		}
	}
	if t := sched.TopologyKind; t != nil && dir.TopologyName != "" {
		o := s.SchedulerObjects.Lookup(t.GVK, "", dir.TopologyName)
		switch o.Presence {
		case cluster.Missing:
			out = append(out, fmt.Sprintf("%s topology %s does not exist: %s will not place the job until it does; %s",
				sched.Title, dir.TopologyName, sched.Title, syncHint))
		case cluster.Present:
			for _, l := range []struct{ kind, level, label string }{
				{"required", dir.RequiredLevel, dir.RequiredLabel}, {"preferred", dir.PreferredLevel, dir.PreferredLabel},
			} {
				if l.label != "" && !slices.Contains(o.NodeLabels, l.label) {
					out = append(out, fmt.Sprintf("%s topology %s has no level on node label %s: the %s topology level %s is advisory for %s; %s",
						sched.Title, dir.TopologyName, l.label, l.kind, l.level, sched.Title, syncHint))
				}
			}
		}
	}
	return out
}
