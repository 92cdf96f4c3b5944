package modelcheck

import (
	"slices"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler/facts"
)

// Schedulers are the schedulers a tenant may name: the registry's (package
// facts; a test keeps them those package scheduler has an adapter for),
// facts.Default being the Kubernetes default scheduler.
func Schedulers() []string { return facts.Names() }

// checkSchedulers: every scheduler a tenant names has an adapter, and no
// two tenants on one scheduler share a queue, as mandate.directives names
// them (the tenant's queue, else its name; the nearest scheduler of its
// chain, else the default).
func checkSchedulers(d *model.Model, r *reporter) {
	for _, name := range tenantNames(d) {
		if s := d.Tenants[name].Scheduler; s != "" && !slices.Contains(Schedulers(), s) {
			r.add(path("tenants", name, "scheduler"), "unknown scheduler %q: known schedulers are %s", s, knownSchedulers())
		}
	}
	owner := map[string]string{} // scheduler/queue → tenant
	for _, name := range tenantNames(d) {
		t := d.Tenants[name]
		q := d.QueueName(name)
		s := d.SchedulerOf(name)
		k := s + "/" + q
		if first, ok := owner[k]; ok {
			at := path("tenants", name, "queue")
			if t.Queue == "" {
				at = path("tenants", name)
			}
			r.add(at, "tenant %s's work goes to %s queue %q, which is tenant %s's queue too: each tenant needs a queue of its own, or the scheduler gives two tenants one quota",
				name, s, q, first)
			continue
		}
		owner[k] = name
	}
}

// knownSchedulers lists Schedulers for a message: "volcano, kai and default".
func knownSchedulers() string { return facts.List(Schedulers()) }
