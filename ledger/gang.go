package ledger

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/workload"
)

// ClaimGangPod takes one of the pod slots of an admitted gang owner (by
// UID) for a GPU pod admitted on the owner's directives, keyed like a
// reservation (the pod's WorkloadKey, or its request's RequestKey when it
// has no name yet). The owner was admitted for size GPU pods: the claim
// succeeds while the owner's counted pods and its pending claims are fewer
// (or when key holds a claim already: the same request reinvoked), and
// fails beyond, so a pod that names an admitted owner beyond its size is
// decided on its own. A claim lasts until its pod is counted or ttl
// passes. An empty key (a dry run) only asks whether a slot is free.
func (l *Ledger) ClaimGangPod(ownerUID, key string, size int, ttl time.Duration) bool {
	if ownerUID == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	pending := l.claims[ownerUID]
	for k, expires := range pending {
		if now.After(expires) {
			delete(pending, k)
		}
	}
	if _, again := pending[key]; again {
		pending[key] = now.Add(ttl)
		return true
	}
	if l.owned[ownerUID]+len(pending) >= size {
		return false
	}
	if key == "" {
		return true
	}
	if pending == nil {
		pending = map[string]time.Time{}
		l.claims[ownerUID] = pending
	}
	pending[key] = now.Add(ttl)
	return true
}

// confirmClaim drops the claim a counted pod of owner confirms: by its name,
// or by the request key Mandate wrote on it. Callers hold the lock.
func (l *Ledger) confirmClaim(pod *corev1.Pod, owner string) {
	pending := l.claims[owner]
	if pending == nil {
		return
	}
	delete(pending, WorkloadKey("v1", "Pod", pod.Namespace, pod.Name))
	delete(pending, pod.Annotations[workload.AnnotationReservation])
	if len(pending) == 0 {
		delete(l.claims, owner)
	}
}
