package scheduler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
)

// Placement is where and how admission sent a workload, as the tables of
// `mandate eval`, `mandate audit` and `make demo` show it, in one wording:
// "kai-scheduler queue=platform priority=build preemptible=false gang=8
// topology=block>clique" (absent parts, an empty Scheduler too, left
// out).
type Placement struct {
	// Scheduler is the pods' schedulerName ("kai-scheduler", "volcano"),
	// or Mandate's name of it ("kai"), which String turns into the former.
	Scheduler     string
	Queue         string
	PriorityClass string
	// Preemptible is nil when unknown.
	Preemptible *bool
	// Gang is the pods that must start together; shown when above 1.
	Gang int
	// RequiredLevel and PreferredLevel are topology levels.
	RequiredLevel, PreferredLevel string
}

// PlacementOf is the placement Directives ask for.
func PlacementOf(d evaluator.Directives) Placement {
	p := d.Preemptible
	return Placement{Scheduler: d.Scheduler, Queue: d.Queue, PriorityClass: d.PriorityClass, Preemptible: &p,
		Gang: d.GangMin, RequiredLevel: d.RequiredLevel, PreferredLevel: d.PreferredLevel}
}

// SchedulerName is the pods' spec.schedulerName for Mandate's scheduler
// name of the directives ("kai", "volcano", "default"); a scheduler whose
// pods keep theirs (Kueue), or any other name (or none), is returned as it
// is, being taken to be a schedulerName already.
func SchedulerName(scheduler string) string {
	if f, ok := facts.Lookup(scheduler); ok && f.SchedulerName != "" {
		return f.SchedulerName
	}
	return scheduler
}

func (p Placement) String() string {
	var parts []string
	if p.Scheduler != "" {
		parts = append(parts, SchedulerName(p.Scheduler))
	}
	if p.Queue != "" {
		parts = append(parts, "queue="+p.Queue)
	}
	if p.PriorityClass != "" {
		parts = append(parts, "priority="+p.PriorityClass)
	}
	if p.Preemptible != nil {
		parts = append(parts, "preemptible="+strconv.FormatBool(*p.Preemptible))
	}
	if p.Gang > 1 {
		parts = append(parts, fmt.Sprintf("gang=%d", p.Gang))
	}
	if topo := p.RequiredLevel; topo != "" || p.PreferredLevel != "" {
		if p.PreferredLevel != "" && p.PreferredLevel != p.RequiredLevel {
			topo += ">" + p.PreferredLevel
		}
		parts = append(parts, "topology="+topo)
	}
	return strings.Join(parts, " ")
}
