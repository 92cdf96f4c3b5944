package review

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// SchedulerObjects is what the service needs to know of the scheduler
// objects the directives name (queues, topologies): whether the cluster
// carries them, from a cache, never a read per admission. serve passes
// the cluster's informers; `mandate eval` passes none and says nothing.
type SchedulerObjects interface {
	Lookup(gvk schema.GroupVersionKind, name string) cluster.SchedulerObject
}

var _ SchedulerObjects = (*cluster.SchedulerObjects)(nil)

// syncHint ends every warning about a scheduler object that the model
// names and the cluster lacks: `mandate sync` creates it from the model.
const syncHint = "run `mandate sync`"

// schedulerWarnings are the warnings an admitted decision carries besides
// the policy's: the topology levels its scheduler is not told
// (scheduler.AdvisoryLevels), and the queue and topology it names that the
// cluster does not carry, or carries closed or without the required
// level: admitted, the job would wait without a word from the scheduler.
func (s *Service) schedulerWarnings(w workload.Workload, d evaluator.Decision) []string {
	if !d.Allowed {
		return nil
	}
	dir := d.Directives
	out := scheduler.AdvisoryLevels(w, dir)
	if s.SchedulerObjects == nil {
		return out
	}
	queue := func(gvk schema.GroupVersionKind, who string) {
		if dir.Queue == "" {
			return
		}
		switch o := s.SchedulerObjects.Lookup(gvk, dir.Queue); o.Presence {
		case cluster.Missing:
			out = append(out, fmt.Sprintf("%s queue %s does not exist: the job will wait until it does; %s", who, dir.Queue, syncHint))
		case cluster.NotOpen:
			state := o.State
			if state == "" {
				state = "not open yet (no status.state)"
			}
			out = append(out, fmt.Sprintf("%s queue %s is %s: the job will wait until it is Open; %s", who, dir.Queue, state, syncHint))
		}
	}
	switch dir.Scheduler {
	case scheduler.Volcano:
		queue(cluster.VolcanoQueueGVK, "Volcano")
	case scheduler.KAI:
		queue(cluster.KAIQueueGVK, "KAI")
		if dir.TopologyName == "" {
			break
		}
		o := s.SchedulerObjects.Lookup(cluster.KAITopologyGVK, dir.TopologyName)
		switch o.Presence {
		case cluster.Missing:
			out = append(out, fmt.Sprintf("KAI topology %s does not exist: KAI will not place the job until it does; %s", dir.TopologyName, syncHint))
		case cluster.Present:
			for _, l := range []struct{ kind, level, label string }{
				{"required", dir.RequiredLevel, dir.RequiredLabel}, {"preferred", dir.PreferredLevel, dir.PreferredLabel},
			} {
				if l.label != "" && !slices.Contains(o.NodeLabels, l.label) {
					out = append(out, fmt.Sprintf("KAI topology %s has no level on node label %s: the %s topology level %s is advisory for KAI; %s",
						dir.TopologyName, l.label, l.kind, l.level, syncHint))
				}
			}
		}
	}
	return out
}
