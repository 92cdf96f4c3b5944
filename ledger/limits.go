package ledger

import (
	"maps"
	"time"

	"github.com/mandate-dev/mandate/topology"
)

// Limit is one quota limit a decision relied on: the tenant, the usage key
// it counts (a GPU resource, or a ProductKey), its ceiling and guarantee,
// the workload's demand, the usage the decision saw, and the outcomes it
// took from them. A decision made outside the tenant tree's lock stands
// when every limit it relied on still Holds at its commit.
type Limit struct {
	Tenant     string
	Key        string
	Ceiling    int
	Guaranteed int
	Demand     int
	Seen       Usage
	// Busy: the usage seen and the demand exceed the ceiling.
	Busy bool
	// OverGuarantee: the non-preemptible usage seen and the demand exceed
	// the guarantee.
	OverGuarantee bool
}

// Holds says whether usage (as Usage answers it) gives the limit the same
// outcomes as the decision took from it: neither Busy nor OverGuarantee
// flipped. A tenant or key usage does not hold counts as nothing used.
func (lim Limit) Holds(usage map[string]map[string]Usage) bool {
	u := usage[lim.Tenant][lim.Key]
	return (u.Total+lim.Demand > lim.Ceiling) == lim.Busy &&
		(u.NonPreemptible+lim.Demand > lim.Guaranteed) == lim.OverGuarantee
}

// UsageWithout is the usage of tenant and its ancestors (Usage) as it
// would be once the reservation of key is released (no key: none) and,
// when ownerUID is set, without the pods of that controller
// (UsageExcluding): the view a decision of the workload reserved under key
// reads, taken in one step under the ledger's lock and without releasing
// anything, so that the decision can run while other admissions reserve.
func (l *Ledger) UsageWithout(tenant, key, ownerUID string) map[string]map[string]Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usageWithout(tenant, key, ownerUID)
}

// ReserveIf is the commit of a decision made on UsageWithout(tenant, key,
// ownerUID): if ok holds for that usage as it is now, key's earlier
// reservation is released and gpus reserved under key as Reserve does, in
// one step under the ledger's lock; false, and nothing changed, when it
// does not. ok runs under the lock: it must not call the ledger.
func (l *Ledger) ReserveIf(key, tenant, ownerUID string, gpus map[string]int, preemptible bool, generation int64, ttl time.Duration,
	ok func(usage map[string]map[string]Usage) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !ok(l.usageWithout(tenant, key, ownerUID)) {
		return false
	}
	l.release(key)
	r := Reservation{Tenant: tenant, GPUs: maps.Clone(gpus), Preemptible: preemptible, Expires: l.now().Add(ttl), Generation: generation}
	if len(gpus) == 0 || tenant == "" || l.storedPod(key) || l.resolvedNow(key, r) {
		return true
	}
	l.add(key, r)
	return true
}

// usageWithout is UsageWithout for callers holding the lock.
func (l *Ledger) usageWithout(tenant, key, ownerUID string) map[string]map[string]Usage {
	l.expire()
	out := map[string]map[string]Usage{}
	for t, depth := tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
		byRes := make(map[string]Usage, len(l.rolled[t]))
		for res, u := range l.rolled[t] {
			byRes[res] = u
		}
		out[t] = byRes
	}
	if r, ok := l.reserved[key]; ok && key != "" && len(r.applied) > 0 {
		l.subtract(out, r.Tenant, podEntry{gpus: topology.CountsOf(r.applied), explicit: explicitOf(r.Preemptible)})
	}
	if h, ok := l.held[key]; ok && key != "" && len(h.res.applied) > 0 {
		// The workload's own hold: its whole new demand is decided.
		l.subtract(out, h.res.Tenant, podEntry{gpus: topology.CountsOf(h.res.applied), explicit: explicitOf(h.res.Preemptible)})
	}
	if g, ok := l.grants[grantKey(l.holder, tenant)]; ok && l.holder != "" && g.Holder == l.holder {
		// This replica's unspent grant of the tenant is its headroom.
		for t, depth := tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
			byRes := out[t]
			for k, n := range g.applied {
				u := byRes[k]
				u.Total -= n.Total
				u.NonPreemptible -= n.NonPreemptible
				byRes[k] = u
			}
		}
	}
	if ownerUID != "" {
		for _, e := range l.pods {
			if e.owner == ownerUID {
				l.subtract(out, l.nsTenant[e.namespace], e)
			}
		}
	}
	foldAll(out)
	return out
}

// subtract takes what e counts off out, for tenant and each ancestor out
// holds. Callers hold the lock.
func (l *Ledger) subtract(out map[string]map[string]Usage, tenant string, e podEntry) {
	preemptible := l.preemptible(e)
	gpus := l.counted(e)
	for t, depth := tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
		byRes, ok := out[t]
		if !ok {
			continue
		}
		for _, c := range gpus {
			u := byRes[c.Resource]
			u.Total -= c.N
			if !preemptible {
				u.NonPreemptible -= c.N
			}
			byRes[c.Resource] = u
		}
	}
}
