package ledger

import (
	"maps"
	"strings"
	"time"
)

// claim is a gang pod slot taken and not confirmed yet: the tenant of the
// pod (its tree stores the claim, see TreeReservations) and until when it
// holds the slot.
type claim struct {
	tenant  string
	expires time.Time
	// made is when this replica first held it, verified that the API
	// server was asked and has its pod (Unverified).
	made     time.Time
	verified bool
}

// ClaimKeyPrefix starts the keys under which TreeReservations (and
// Unverified) list gang claims beside reservations: a pod's claim and a reservation of the same
// pod (when it is decided on its own) are different entries.
const ClaimKeyPrefix = "claim:"

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
	if c, again := pending[key]; again {
		c.tenant, c.expires = tenant, now.Add(ttl)
		pending[key] = c
		l.due(c.expires, expiresClaim, key, ownerUID)
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
	pending[key] = claim{tenant: tenant, expires: now.Add(ttl), made: now}
	l.due(now.Add(ttl), expiresClaim, key, ownerUID)
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
// Reservations with Owner set, under ClaimKeyPrefix keys. Callers hold the
// lock.
func (l *Ledger) treeClaims(root string, out map[string]Reservation) {
	now := l.now()
	for owner, pending := range l.claims {
		for key, c := range pending {
			if !now.After(c.expires) && l.rootOf(c.tenant) == root {
				out[ClaimKeyPrefix+key] = Reservation{Tenant: c.tenant, Owner: owner, Expires: c.expires}
			}
		}
	}
}

// setTreeClaims makes the claims among rs (Owner set) the gang claims of
// root's tree, as a shared ledger holds them. Callers hold the lock.
func (l *Ledger) setTreeClaims(root string, rs map[string]Reservation) {
	prev := map[string]map[string]claim{}
	for owner, pending := range l.claims {
		prev[owner] = maps.Clone(pending)
	}
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
		key, isClaim := strings.CutPrefix(key, ClaimKeyPrefix)
		if !isClaim || r.Owner == "" || now.After(r.Expires) || l.rootOf(r.Tenant) != root {
			continue
		}
		if _, confirmed := l.settling[ClaimKeyPrefix+key]; confirmed || l.storedPod(key) {
			continue // its pod is counted here: owned, not pending
		}
		pending := l.claims[r.Owner]
		if pending == nil {
			pending = map[string]claim{}
			l.claims[r.Owner] = pending
		}
		c := claim{tenant: r.Tenant, expires: r.Expires, made: now}
		if old, ok := prev[r.Owner][key]; ok {
			c.made, c.verified = old.made, old.verified
		}
		pending[key] = c
		l.due(c.expires, expiresClaim, key, r.Owner)
	}
}

// confirmClaim drops the claim a counted pod of owner confirms: by its name,
// or by the request key Mandate wrote on it. Callers hold the lock.
func (l *Ledger) confirmClaim(namespace, name, reservation, owner string) {
	pending := l.claims[owner]
	if pending == nil {
		return
	}
	for _, key := range []string{WorkloadKey("v1", "Pod", namespace, name), reservation} {
		c, ok := pending[key]
		if !ok {
			continue
		}
		delete(pending, key)
		// Still shared for SettleTime (a replica whose informers lag keeps
		// holding the slot), never read back as pending here: the pod
		// counted holds it (owned).
		l.settling[ClaimKeyPrefix+key] = settled{r: Reservation{Tenant: c.tenant, Owner: owner, Expires: c.expires}, at: l.now()}
		l.due(l.settling[ClaimKeyPrefix+key].at.Add(SettleTime), expiresSettling, ClaimKeyPrefix+key, "")
	}
	if len(pending) == 0 {
		delete(l.claims, owner)
	}
}
