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
	l.settling[key] = settled{r: r.Reservation, at: l.now()}
	l.release(key)
}

// resolved says whether the stored version a reservation r of key was
// made for has been seen: a pod of that name counted, a hold of that key
// at least as new, a stored workload admitted under that request key.
// Callers hold the lock.
func (l *Ledger) resolved(key string, r Reservation) bool {
	if _, ok := l.settling[key]; ok {
		return true
	}
	if l.storedPod(key) {
		return true
	}
	if h, ok := l.held[key]; ok && max(r.Generation, 1) <= h.generation {
		return true
	}
	_, ok := l.heldRequests[key]
	return ok
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

// Unverified are the keys of the reservations (and, under ClaimKeyPrefix,
// of the gang claims) made at least grace ago whose stored object has not
// been seen nor checked yet: a create the API server refused after
// Mandate admitted it (an invalid field, another webhook's denial) holds
// quota until someone asks the API server (VerifiedStored,
// ReleaseUnstored). Request keys are left out: they name no object to
// ask for, and expire.
func (l *Ledger) Unverified(grace time.Duration) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	now := l.now()
	var out []string
	for key, r := range l.reserved {
		if !r.verified && !strings.HasPrefix(key, requestKeyPrefix) && now.Sub(r.made) >= grace {
			out = append(out, key)
		}
	}
	for _, pending := range l.claims {
		for key, c := range pending {
			if !c.verified && !strings.HasPrefix(key, requestKeyPrefix) && now.Sub(c.made) >= grace {
				out = append(out, ClaimKeyPrefix+key)
			}
		}
	}
	return out
}

// VerifiedStored marks the reservation or claim of key (as Unverified
// lists it) as stored by the API server: it waits for the informers.
func (l *Ledger) VerifiedStored(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if name, isClaim := strings.CutPrefix(key, ClaimKeyPrefix); isClaim {
		for _, pending := range l.claims {
			if c, ok := pending[name]; ok {
				c.verified = true
				pending[name] = c
			}
		}
		return
	}
	if r, ok := l.reserved[key]; ok {
		r.verified = true
	}
}

// ReleaseUnstored drops the reservation or claim of key (as Unverified
// lists it): the API server never stored its object. It says whether
// there was one to drop.
func (l *Ledger) ReleaseUnstored(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if name, isClaim := strings.CutPrefix(key, ClaimKeyPrefix); isClaim {
		dropped := false
		for owner, pending := range l.claims {
			if _, ok := pending[name]; ok {
				delete(pending, name)
				dropped = true
			}
			if len(pending) == 0 {
				delete(l.claims, owner)
			}
		}
		return dropped
	}
	_, ok := l.reserved[key]
	l.release(key)
	return ok
}

// ReservationGeneration is the generation of the stored object the
// reservation of key was made for (1 for a create), and whether there is
// one.
func (l *Ledger) ReservationGeneration(key string) (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r, ok := l.reserved[key]
	if !ok {
		return 0, false
	}
	return max(r.Generation, 1), true
}
