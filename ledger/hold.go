package ledger

import (
	"maps"
	"strings"
	"time"
)

// Hold is what a workload Mandate admitted holds for its whole life, read
// from the stored object (the informers' copy): its whole admitted demand
// per usage key, as a reservation of it would hold it (DemandOf), counted
// less what its pods seen so far consume of it, so that its pods count
// once. A hold lives until the workload is deleted, suspended or
// finished (the caller then upserts it with no GPUs, or deletes it); a
// workload's pods created long after its admission (an operator's, a
// queue's) find it still counted, and a gang pod joins it while it lives.
type Hold struct {
	// Namespace is the workload's (its tenant is the namespace's).
	Namespace string
	// UID and Generation identify the stored version: an admission's
	// reservation of the same key is settled by a stored version at least
	// as new as the one it admitted (Reservation.Generation).
	UID        string
	Generation int64
	// RequestKey is the request key the workload was admitted under when
	// it had no name yet (workload.AnnotationReservation), "" for none:
	// that reservation is settled by the stored object too.
	RequestKey  string
	GPUs        map[string]int
	Preemptible bool
}

// held is a Hold as the ledger keeps it: its counted part is applied, like
// a reservation's (what its pods have not consumed yet).
type held struct {
	namespace  string
	uid        string
	generation int64
	requestKey string
	res        reservation
}

// settled is a reservation whose stored object (or pod) was seen here: it
// no longer counts on this replica (the hold or the pod does), but it is
// still written to the shared ledger for SettleTime, so that a replica
// whose informers lag behind this one's keeps counting it until they
// catch up.
type settled struct {
	r  Reservation
	at time.Time
}

// SettleTime is how long a settled reservation stays in the shared ledger
// (see settled): the informer lag between replicas it allows for.
const SettleTime = 10 * time.Second

// UpsertHold records the hold of the stored workload of key (its
// WorkloadKey), replacing the one before; a hold without GPUs (the
// workload suspended, finished or being deleted) holds nothing. The
// admission's reservation of the same workload is settled by it.
func (l *Ledger) UpsertHold(key string, h Hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropHold(key)
	if r, ok := l.reserved[key]; ok && max(r.Generation, 1) <= h.Generation {
		l.settle(key)
	}
	if h.RequestKey != "" {
		if _, ok := l.reserved[h.RequestKey]; ok {
			l.settle(h.RequestKey)
		}
	}
	if len(h.GPUs) == 0 {
		return
	}
	e := &held{namespace: h.Namespace, uid: h.UID, generation: h.Generation, requestKey: h.RequestKey,
		res: reservation{Reservation: Reservation{Tenant: l.nsTenant[h.Namespace], GPUs: maps.Clone(h.GPUs), Preemptible: h.Preemptible}}}
	l.held[key] = e
	if h.RequestKey != "" {
		l.heldRequests[h.RequestKey] = key
	}
	l.refresh(key)
}

// DeleteHold forgets the hold of key: its workload is gone.
func (l *Ledger) DeleteHold(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropHold(key)
}

// dropHold stops counting the hold of key. Callers hold the lock.
func (l *Ledger) dropHold(key string) {
	h, ok := l.held[key]
	if !ok {
		return
	}
	l.setApplied(&h.res, nil)
	delete(l.held, key)
	if h.requestKey != "" && l.heldRequests[h.requestKey] == key {
		delete(l.heldRequests, h.requestKey)
	}
}

// Holds counts the workloads whose hold counts GPUs now (their pods have
// not consumed all of it).
func (l *Ledger) Holds() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := 0
	for _, h := range l.held {
		if len(h.res.applied) > 0 {
			n++
		}
	}
	return n
}

// settle releases the reservation of key, whose stored object was seen,
// and keeps it among the settled. Callers hold the lock.
func (l *Ledger) settle(key string) {
	r, ok := l.reserved[key]
	if !ok {
		return
	}
	l.dropSettling(key)
	l.settling[key] = settled{r: r.Reservation, at: l.now()}
	l.spend(r.Reservation, +1)
	l.due(l.settling[key].at.Add(SettleTime), expiresSettling, key, "")
	l.release(key)
}

// resolved says whether the stored version a reservation r of key was
// made for has been seen: a pod of that name counted, a hold of that key
// at least as new, a stored workload admitted under that request key.
// Callers hold the lock.
func (l *Ledger) resolved(key string, r Reservation) bool {
	_, settled := l.settling[key]
	return settled || l.storedPod(key) || l.resolvedNow(key, r)
}

// settlePodReservations settles the reservations a pod just counted
// resolves: its own (by name), and that of the request it was admitted
// under when it belongs to no gang (a gang's pods carry their owner's
// request key). Callers hold the lock.
//
// Only a reservation the pod consumed whole is settled: a pod whose DRA
// claims are not seen yet leaves the rest of it counted.
func (l *Ledger) settlePodReservations(key string, in *podInput) {
	if r, ok := l.reserved[podKeyPrefix+key]; ok && len(r.applied) == 0 {
		l.settle(podKeyPrefix + key)
	}
	// Only a key of the pod's own namespace: one copied from another
	// namespace's object settles nothing.
	if in.owner == "" && IsRequestKey(in.namespace, in.reservation) {
		if r, ok := l.reserved[in.reservation]; ok && r.Tenant == l.nsTenant[in.namespace] && len(r.applied) == 0 {
			l.settle(in.reservation)
		}
	}
}

// Unstored is a reservation or gang claim Unverified lists: its key (a
// claim's under ClaimKeyPrefix) and when this replica made or first held
// it, which names that one reservation: a later one under the same key
// (the workload changed again) is not the one asked about.
type Unstored struct {
	Key  string
	Made time.Time
}

// Unverified are the reservations (and gang claims) made at least grace
// ago whose stored object has not been seen nor checked yet: a create the
// API server refused after Mandate admitted it (an invalid field, another
// webhook's denial) holds quota until someone asks the API server
// (VerifiedStored, ReleaseUnstored). Request keys are left out: they name
// no object to ask for, and expire.
func (l *Ledger) Unverified(grace time.Duration) []Unstored {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	now := l.now()
	var out []Unstored
	for key, r := range l.reserved {
		if !r.verified && !strings.HasPrefix(key, requestKeyPrefix) && now.Sub(r.made) >= grace {
			out = append(out, Unstored{Key: key, Made: r.made})
		}
	}
	for _, pending := range l.claims {
		for key, c := range pending {
			if !c.verified && !strings.HasPrefix(key, requestKeyPrefix) && now.Sub(c.made) >= grace {
				out = append(out, Unstored{Key: ClaimKeyPrefix + key, Made: c.made})
			}
		}
	}
	return out
}

// unstored finds the reservation or claim u names, if it is still there
// (not replaced since). Callers hold the lock.
func (l *Ledger) unstored(u Unstored) (r *reservation, pending map[string]claim, name string) {
	if name, isClaim := strings.CutPrefix(u.Key, ClaimKeyPrefix); isClaim {
		for _, p := range l.claims {
			if c, ok := p[name]; ok && c.made.Equal(u.Made) {
				return nil, p, name
			}
		}
		return nil, nil, ""
	}
	if r, ok := l.reserved[u.Key]; ok && r.made.Equal(u.Made) {
		return r, nil, ""
	}
	return nil, nil, ""
}

// VerifiedStored marks the reservation or claim u (as Unverified lists
// it) as stored by the API server: it waits for the informers.
func (l *Ledger) VerifiedStored(u Unstored) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, pending, name := l.unstored(u)
	switch {
	case r != nil:
		r.verified = true
	case pending != nil:
		c := pending[name]
		c.verified = true
		pending[name] = c
	}
}

// ReleaseUnstored drops the reservation or claim u (as Unverified lists
// it) when it is still the one listed: the API server never stored its
// object. It says whether what a shared ledger stores changed: there was
// one to drop, not an escrowed reservation (its grant stays stored).
func (l *Ledger) ReleaseUnstored(u Unstored) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, pending, name := l.unstored(u)
	switch {
	case r != nil:
		l.release(u.Key)
		return !r.Escrowed
	case pending != nil:
		delete(pending, name)
		for owner, p := range l.claims {
			if len(p) == 0 {
				delete(l.claims, owner)
			}
		}
		return true
	}
	return false
}

// UnstoredGeneration is the generation of the stored object the
// reservation u was made for (1 for a create and for a claim), and
// whether it is still there.
func (l *Ledger) UnstoredGeneration(u Unstored) (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r, pending, _ := l.unstored(u)
	switch {
	case r != nil:
		return max(r.Generation, 1), true
	case pending != nil:
		return 1, true
	}
	return 0, false
}
