package ledger

import (
	"strings"
	"time"
)

// claim is a gang pod slot taken and not confirmed yet: the tenant of the
// pod (its tree stores the claim, see TreeReservations) and until when it
// holds the slot.
type claim struct {
	tenant  string
	expires time.Time
}

// claimKeyPrefix starts the keys under which TreeReservations lists gang
// claims beside reservations: a pod's claim and a reservation of the same
// pod (when it is decided on its own) are different entries.
const claimKeyPrefix = "claim:"

// ClaimGangPod takes one of the pod slots of an admitted gang owner (by
// UID) for a GPU pod of tenant admitted on the owner's directives, keyed
// like a reservation (the pod's WorkloadKey, or its request's RequestKey
// when it has no name yet). The owner was admitted for size GPU pods: the
// claim succeeds while the owner's counted pods and its pending claims are
// fewer (or when key holds a claim already: the same request reinvoked),
// and fails beyond, so a pod that names an admitted owner beyond its size
// is decided on its own. A claim lasts until its pod is counted or ttl
// passes. An empty key (a dry run) only asks whether a slot is free.
// added says a slot was taken now (not by key before, and not a dry run):
// only then has a shared ledger something new to store.
func (l *Ledger) ClaimGangPod(ownerUID, tenant, key string, size int, ttl time.Duration) (ok, added bool) {
	if ownerUID == "" {
		return false, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	pending := l.claims[ownerUID]
	for k, c := range pending {
		if now.After(c.expires) {
			delete(pending, k)
		}
	}
	if _, again := pending[key]; again {
		pending[key] = claim{tenant: tenant, expires: now.Add(ttl)}
		return true, false
	}
	if l.owned[ownedKey(tenant, ownerUID)]+len(pending) >= size {
		return false, false
	}
	if key == "" {
		return true, false
	}
	if pending == nil {
		pending = map[string]claim{}
		l.claims[ownerUID] = pending
	}
	pending[key] = claim{tenant: tenant, expires: now.Add(ttl)}
	return true, true
}

// ownedKey keys Ledger.owned: the tenant of a gang's counted pods and the
// owner's UID. A pod's gang owner may be named by an annotation its
// creator could write (workload.AnnotationGangOwner), and a gang's pods
// are always of its own namespace, so its tenant: a pod of another
// tenant naming an owner counts under that tenant's key and never takes
// the owner's slots.
func ownedKey(tenant, ownerUID string) string { return tenant + "\x00" + ownerUID }

// countOwned adds sign to the counted pods of tenant under ownerUID.
// Callers hold the lock.
func (l *Ledger) countOwned(tenant, ownerUID string, sign int) {
	k := ownedKey(tenant, ownerUID)
	if l.owned[k] += sign; l.owned[k] <= 0 {
		delete(l.owned, k)
	}
}

// treeClaims adds the unexpired gang claims of root's tree to out, as
// Reservations with Owner set, under claimKeyPrefix keys. Callers hold the
// lock.
func (l *Ledger) treeClaims(root string, out map[string]Reservation) {
	now := l.now()
	for owner, pending := range l.claims {
		for key, c := range pending {
			if !now.After(c.expires) && l.rootOf(c.tenant) == root {
				out[claimKeyPrefix+key] = Reservation{Tenant: c.tenant, Owner: owner, Expires: c.expires}
			}
		}
	}
}

// setTreeClaims makes the claims among rs (Owner set) the gang claims of
// root's tree, as a shared ledger holds them. Callers hold the lock.
func (l *Ledger) setTreeClaims(root string, rs map[string]Reservation) {
	for owner, pending := range l.claims {
		for key, c := range pending {
			if l.rootOf(c.tenant) == root {
				delete(pending, key)
			}
		}
		if len(pending) == 0 {
			delete(l.claims, owner)
		}
	}
	now := l.now()
	for key, r := range rs {
		key, isClaim := strings.CutPrefix(key, claimKeyPrefix)
		if !isClaim || r.Owner == "" || now.After(r.Expires) || l.rootOf(r.Tenant) != root {
			continue
		}
		pending := l.claims[r.Owner]
		if pending == nil {
			pending = map[string]claim{}
			l.claims[r.Owner] = pending
		}
		pending[key] = claim{tenant: r.Tenant, expires: r.Expires}
	}
}

// confirmClaim drops the claim a counted pod of owner confirms: by its name,
// or by the request key Mandate wrote on it. Callers hold the lock.
func (l *Ledger) confirmClaim(namespace, name, reservation, owner string) {
	pending := l.claims[owner]
	if pending == nil {
		return
	}
	delete(pending, WorkloadKey("v1", "Pod", namespace, name))
	delete(pending, reservation)
	if len(pending) == 0 {
		delete(l.claims, owner)
	}
}
