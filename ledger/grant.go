package ledger

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Grant is a door's escrowed share of one tenant's headroom: GPUs per usage
// key that its holder (a webhook replica, later Slurm or another cluster)
// may spend without asking anyone, counted as used by everybody else, at
// the tenant and every ancestor, until Expires plus the store bound (see
// SetHolder). The holder renews it before Expires; a holder that dies
// stops renewing, and its grant counts until nothing it answered can still
// be stored. Per key, NonPreemptible is what may be spent as
// non-preemptible work (it counts against guarantees), Total what may be
// spent at all (it counts against ceilings); NonPreemptible ≤ Total.
type Grant struct {
	Holder  string
	Tenant  string
	GPUs    map[string]Usage
	Expires time.Time
	// Answered is the latest reclaim its holder answered (gave back its
	// unspent grant for): see OthersUnanswered.
	Answered time.Time
}

// grantKey keys Ledger.grants.
func grantKey(holder, tenant string) string { return holder + "\x00" + tenant }

// grantMargin is how long before its Expires a holder stops spending its
// grant: what it answers then is stored before the grant stops counting
// for the others (Expires plus the store bound) with room to spare.
const grantMargin = time.Second

// SetHolder names this replica as a grant holder: its own grants (Holder
// equal to holder) are spendable here and not counted as used, everybody
// else's count as used until their Expires plus storeBound (the API
// server's request timeout: past it nothing their holder answered can
// still be stored). An empty holder turns grants off here. Call it before
// admissions start.
func (l *Ledger) SetHolder(holder string, storeBound time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holder, l.storeBound = holder, storeBound
}

// Holder is the name SetHolder gave this replica ("" for none).
func (l *Ledger) Holder() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.holder
}

// counts says whether g counts as used here now: another holder's grant
// that has not run out (Expires plus the store bound).
func (l *Ledger) counts(g Grant, now time.Time) bool {
	return g.Holder != l.holder && !now.After(g.Expires.Add(l.storeBound))
}

// applyGrant adds (sign +1) or removes (-1) gpus of a grant of tenant on
// the tenant and every ancestor. Callers hold the lock.
func (l *Ledger) applyGrant(tenant string, gpus map[string]Usage, sign int) {
	for t, depth := tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
		byRes := l.rolled[t]
		if byRes == nil {
			byRes = map[string]Usage{}
			l.rolled[t] = byRes
		}
		for key, n := range gpus {
			u := byRes[key]
			u.Total += sign * n.Total
			u.NonPreemptible += sign * n.NonPreemptible
			byRes[key] = u
		}
	}
}

// recountGrant makes the grant of key count what it must in the rolled
// usage: another holder's whole grant until it runs out, this replica's
// unspent part (its escrowed reservations count themselves). Callers hold
// the lock.
func (l *Ledger) recountGrant(key string) {
	e, ok := l.grants[key]
	if !ok {
		return
	}
	var want map[string]Usage
	switch {
	case e.Holder == l.holder:
		want = unspent(e.widest(), l.spent[e.Tenant])
	case l.counts(e.Grant, l.now()):
		want = e.GPUs
	}
	l.applyGrant(e.Tenant, e.applied, -1)
	e.applied = maps.Clone(want)
	l.applyGrant(e.Tenant, e.applied, +1)
}

// unspent is what is left of gpus once spent is taken off, per key.
func unspent(gpus, spent map[string]Usage) map[string]Usage {
	out := make(map[string]Usage, len(gpus))
	for k, n := range gpus {
		n.Total = max(n.Total-spent[k].Total, 0)
		n.NonPreemptible = max(n.NonPreemptible-spent[k].NonPreemptible, 0)
		if n.Total > 0 || n.NonPreemptible > 0 {
			out[k] = n
		}
	}
	return out
}

// SetTreeGrants makes gs the grants of root's tree, as the tree's
// TenantLedger holds them: this replica's own (what it may spend) and the
// others' (counted as used until they run out).
func (l *Ledger) SetTreeGrants(root string, gs []Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, g := range l.grants {
		if l.rootOf(g.Tenant) == root {
			l.dropGrant(key)
		}
	}
	for _, g := range gs {
		if g.Tenant == "" || g.Holder == "" || l.rootOf(g.Tenant) != root {
			continue
		}
		l.putGrant(g)
	}
}

// putGrant records g, replacing the grant of its holder and tenant.
// Callers hold the lock.
func (l *Ledger) putGrant(g Grant) {
	key := grantKey(g.Holder, g.Tenant)
	l.dropGrant(key)
	g.GPUs = maps.Clone(g.GPUs)
	l.grants[key] = &grantEntry{Grant: g}
	l.recountGrant(key)
	if g.Holder != l.holder {
		l.due(g.Expires.Add(l.storeBound), expiresGrant, key, "")
	}
}

// dropGrant forgets the grant of key. Callers hold the lock.
func (l *Ledger) dropGrant(key string) {
	e, ok := l.grants[key]
	if !ok {
		return
	}
	l.applyGrant(e.Tenant, e.applied, -1)
	delete(l.grants, key)
}

// grantEntry is a Grant as the ledger keeps it: as the TenantLedger last
// read or written holds it, and for this replica's own a change staged
// and not committed yet (next; nil for none, no GPUs to drop it), with
// what of it counts in the rolled usage now (recountGrant).
type grantEntry struct {
	Grant
	next    *Grant
	applied map[string]Usage
}

// spendable is what of this replica's grant may be spent now: the least
// of what is stored and what is staged, so that a raise counts once it is
// committed and a cut at once.
func (e *grantEntry) spendable() (map[string]Usage, time.Time) {
	if e.next == nil {
		return e.GPUs, e.Expires
	}
	out := map[string]Usage{}
	for k, n := range e.GPUs {
		m := e.next.GPUs[k]
		if u := (Usage{Total: min(n.Total, m.Total), NonPreemptible: min(n.NonPreemptible, m.NonPreemptible)}); u.Total > 0 {
			out[k] = u
		}
	}
	return out, minTime(e.Expires, e.next.Expires)
}

// widest is what of this replica's grant may be stored: the most of what
// is stored and what is staged.
func (e *grantEntry) widest() map[string]Usage {
	if e.next == nil {
		return e.GPUs
	}
	out := maps.Clone(e.next.GPUs)
	for k, n := range e.GPUs {
		m := out[k]
		out[k] = Usage{Total: max(n.Total, m.Total), NonPreemptible: max(n.NonPreemptible, m.NonPreemptible)}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// expireGrant drops the grant of key once it has run out. Callers hold
// the lock.
func (l *Ledger) expireGrant(key string, now time.Time) {
	if e, ok := l.grants[key]; ok && e.Holder != l.holder && now.After(e.Expires.Add(l.storeBound)) {
		l.dropGrant(key)
	}
}

// TreeGrants are the grants of root's tree that still count (every
// holder's, this replica's included), sorted by holder and tenant: what
// the tree's TenantLedger stores.
func (l *Ledger) TreeGrants(root string) []Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	now := l.now()
	var out []Grant
	for _, e := range l.grants {
		if l.rootOf(e.Tenant) != root || (e.Holder != l.holder && !l.counts(e.Grant, now)) {
			continue
		}
		g := e.Grant
		if e.next != nil {
			g = *e.next
		}
		if len(g.GPUs) == 0 {
			continue
		}
		g.GPUs = maps.Clone(g.GPUs)
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b Grant) int {
		return cmp.Or(cmp.Compare(a.Holder, b.Holder), cmp.Compare(a.Tenant, b.Tenant))
	})
	return out
}

// OwnGrant is this replica's grant of tenant (its holder's: what may be
// spent of it, see grantEntry.spendable), what is spent
// of it (the escrowed reservations still live or settling), and whether
// there is one.
func (l *Ledger) OwnGrant(tenant string) (g Grant, spent map[string]Usage, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	spent = maps.Clone(l.spent[tenant])
	e, ok := l.grants[grantKey(l.holder, tenant)]
	if !ok || l.holder == "" {
		return Grant{}, spent, false
	}
	gpus, expires := e.spendable()
	return Grant{Holder: e.Holder, Tenant: e.Tenant, GPUs: maps.Clone(gpus), Expires: expires}, spent, true
}

// SetOwnGrant stages this replica's grant of tenant as gpus until expires
// (no GPUs: none), on the mirror of the tree's TenantLedger; the caller
// commits it. It is never below what is spent of it: a key spent beyond
// gpus is kept at what is spent.
func (l *Ledger) SetOwnGrant(tenant string, gpus map[string]Usage, expires time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == "" || tenant == "" {
		return
	}
	out := make(map[string]Usage, len(gpus))
	for key, n := range gpus {
		if n.Total > 0 {
			out[key] = Usage{Total: n.Total, NonPreemptible: min(n.NonPreemptible, n.Total)}
		}
	}
	for key, s := range l.spent[tenant] {
		n := out[key]
		n.Total, n.NonPreemptible = max(n.Total, s.Total), max(n.NonPreemptible, s.NonPreemptible)
		if n.Total > 0 {
			out[key] = n
		}
	}
	key := grantKey(l.holder, tenant)
	e, ok := l.grants[key]
	if !ok {
		if len(out) == 0 {
			return
		}
		e = &grantEntry{Grant: Grant{Holder: l.holder, Tenant: tenant}}
		l.grants[key] = e
	}
	answered := e.Answered
	if e.next != nil {
		answered = e.next.Answered
	}
	e.next = &Grant{Holder: l.holder, Tenant: tenant, GPUs: out, Expires: expires, Answered: answered}
	l.recountGrant(key)
}

// CommittedGrants records that the TenantLedger of root's tree now holds
// gs (as TreeGrants gave them for the write that succeeded): this
// replica's own grants among them are spendable, and a staged change of
// its own that gs leaves out was a drop.
func (l *Ledger) CommittedGrants(root string, gs []Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	written := map[string]Grant{}
	for _, g := range gs {
		if g.Holder == l.holder {
			written[grantKey(g.Holder, g.Tenant)] = g
		}
	}
	for key, e := range l.grants {
		if e.Holder != l.holder || l.rootOf(e.Tenant) != root {
			continue
		}
		g, ok := written[key]
		if !ok {
			g = Grant{Holder: e.Holder, Tenant: e.Tenant}
			if e.next != nil && len(e.next.GPUs) == 0 {
				e.next = nil // the drop staged was written
			}
		}
		if e.next != nil && sameGrant(*e.next, g) {
			e.next = nil
		}
		e.Grant = g
		e.Grant.GPUs = maps.Clone(g.GPUs)
		if e.next == nil && len(e.GPUs) == 0 {
			l.dropGrant(key)
			continue
		}
		l.recountGrant(key)
	}
}

func sameGrant(a, b Grant) bool {
	return a.Holder == b.Holder && a.Tenant == b.Tenant && a.Expires.Equal(b.Expires) && a.Answered.Equal(b.Answered) &&
		maps.Equal(a.GPUs, b.GPUs)
}

// OthersUnanswered says whether another holder still holds a grant that
// counts at tenant or an ancestor and has not answered a reclaim made at
// since (given back what it had not spent).
func (l *Ledger) OthersUnanswered(tenant string, since time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	chain := l.chain(tenant)
	now := l.now()
	for _, e := range l.grants {
		if len(e.applied) > 0 && e.Holder != l.holder && e.Answered.Before(since) && l.answers(e, now) && l.isUnder(e.Tenant, chain) {
			return true
		}
	}
	return false
}

// chain is tenant and its ancestors. Callers hold the lock.
func (l *Ledger) chain(tenant string) map[string]bool {
	chain := map[string]bool{}
	for t, depth := tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
		chain[t] = true
	}
	return chain
}

// TreeHolders counts the holders of a grant in root's tree, this replica
// included whether it holds one or not.
func (l *Ledger) TreeHolders(root string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	holders := map[string]bool{l.holder: true}
	for _, e := range l.grants {
		if l.rootOf(e.Tenant) == root {
			holders[e.Holder] = true
		}
	}
	return len(holders)
}

// AnswerReclaim stages, for each of this replica's grants in root's tree,
// the answer to a reclaim made at at: the grant cut to what is spent of
// it, marked answered. The caller commits it.
func (l *Ledger) AnswerReclaim(root string, at, expires time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := false
	for key, e := range l.grants {
		if e.Holder != l.holder || l.holder == "" || l.rootOf(e.Tenant) != root {
			continue
		}
		next := Grant{Holder: l.holder, Tenant: e.Tenant, Expires: expires, Answered: at, GPUs: map[string]Usage{}}
		for k, n := range l.spent[e.Tenant] {
			if n.Total > 0 {
				next.GPUs[k] = n
			}
		}
		e.next = &next
		l.recountGrant(key)
		changed = true
	}
	return changed
}

// OwnGrantTenants are the tenants of root's tree this replica holds a
// grant of.
func (l *Ledger) OwnGrantTenants(root string) []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []string
	for _, e := range l.grants {
		if e.Holder == l.holder && l.holder != "" && l.rootOf(e.Tenant) == root {
			out = append(out, e.Tenant)
		}
	}
	slices.Sort(out)
	return out
}

// OthersGrant says whether another holder's grant counts now at tenant or
// an ancestor of it: what a reclaim could give back.
func (l *Ledger) OthersGrant(tenant string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	chain := l.chain(tenant)
	now := l.now()
	for _, e := range l.grants {
		if len(e.applied) > 0 && e.Holder != l.holder && l.answers(e, now) && l.isUnder(e.Tenant, chain) {
			return true
		}
	}
	return false
}

// answers says whether another holder's grant can still be given back:
// its holder renewed it within its lease. One past it (a holder dead or
// cut off) is frozen until its store bound, and no reclaim waits for it.
func (l *Ledger) answers(e *grantEntry, now time.Time) bool { return !now.After(e.Expires) }

// isUnder says whether tenant or one of its ancestors is in chain: a grant
// of tenant counts at every tenant of chain it shares.
func (l *Ledger) isUnder(tenant string, chain map[string]bool) bool {
	for t, depth := tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
		if chain[t] {
			return true
		}
	}
	return false
}

// UsageWithoutOthersGrants is UsageWithout(tenant, key, ownerUID) as it
// would be if every other holder gave back its whole grant, except those
// that answered a reclaim made at since or later (cut to what they spent,
// they have nothing to give back): the most a decision could see after a
// reclaim. A zero since counts none as answered.
func (l *Ledger) UsageWithoutOthersGrants(tenant, key, ownerUID string, since time.Time) map[string]map[string]Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.usageWithout(tenant, key, ownerUID)
	own := grantKey(l.holder, tenant)
	for gk, e := range l.grants {
		if gk == own || e.Holder == l.holder {
			continue // this replica's own: not the others'
		}
		if !since.IsZero() && !e.Answered.Before(since) {
			continue // answered: what is left is spent
		}
		if !l.answers(e, l.now()) {
			continue // frozen: nobody will give it back before its bound
		}
		for t, depth := e.Tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
			byRes, ok := out[t]
			if !ok {
				continue
			}
			for k, n := range e.applied {
				u := byRes[k]
				u.Total -= n.Total
				u.NonPreemptible -= n.NonPreemptible
				byRes[k] = u
			}
		}
	}
	return out
}

// SpendGrant is ReserveIf for a decision this replica's grant of tenant
// covers: when ok holds for the usage now and the grant's unspent part
// covers what total asks of each of its keys (GPUs counted against
// ceilings) and nonPreemptible of each of its (against guarantees), key's
// earlier reservation is released and gpus reserved under key as an
// escrowed reservation: counted here like any other, never stored on its
// own (the grant, stored, covers it for the others). false, and nothing
// changed, when the grant does not cover it, is about to run out, or ok
// does not hold. A decision that needs no cover (preemptible work past
// every ceiling, which only warns) needs no grant either.
func (l *Ledger) SpendGrant(key, tenant, ownerUID string, gpus map[string]int, preemptible bool, generation int64, ttl time.Duration,
	total, nonPreemptible map[string]int, ok func(usage map[string]map[string]Usage) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == "" || tenant == "" || len(gpus) == 0 {
		return false
	}
	now := l.now()
	if len(total) > 0 || len(nonPreemptible) > 0 {
		e, has := l.grants[grantKey(l.holder, tenant)]
		if !has {
			return false
		}
		gpusLeft, expires := e.spendable()
		if !now.Before(expires.Add(-grantMargin)) {
			return false
		}
		spent := l.spent[tenant] // the decision's view left the rest out (usageWithout)
		if old, had := l.reserved[key]; had && old.Escrowed && old.Tenant == tenant {
			// Deciding the same workload again: its earlier spend is given
			// back to the grant first.
			spent = maps.Clone(spent)
			subtractSpend(spent, old.Reservation)
		}
		for k, need := range total {
			if need > 0 && gpusLeft[k].Total-spent[k].Total < need {
				return false
			}
		}
		for k, need := range nonPreemptible {
			if need > 0 && gpusLeft[k].NonPreemptible-spent[k].NonPreemptible < need {
				return false
			}
		}
	}
	if !ok(l.usageWithout(tenant, key, ownerUID)) {
		return false
	}
	l.release(key)
	r := Reservation{Tenant: tenant, GPUs: maps.Clone(gpus), Preemptible: preemptible, Expires: now.Add(ttl),
		Generation: generation, Escrowed: true}
	if l.storedPod(key) || l.resolvedNow(key, r) {
		return true
	}
	l.add(key, r)
	return true
}

// spend adds (sign +1) or takes back (-1) an escrowed reservation's GPUs
// to what is spent of its tenant's grant. Callers hold the lock.
func (l *Ledger) spend(r Reservation, sign int) {
	if !r.Escrowed || r.Tenant == "" {
		return
	}
	s := l.spent[r.Tenant]
	if s == nil {
		s = map[string]Usage{}
		l.spent[r.Tenant] = s
	}
	if sign < 0 {
		subtractSpend(s, r)
	} else {
		for k, n := range r.GPUs {
			u := s[k]
			u.Total += n
			if !r.Preemptible {
				u.NonPreemptible += n
			}
			s[k] = u
		}
	}
	if len(s) == 0 {
		delete(l.spent, r.Tenant)
	}
	l.recountGrant(grantKey(l.holder, r.Tenant))
}

func subtractSpend(s map[string]Usage, r Reservation) {
	for k, n := range r.GPUs {
		u := s[k]
		u.Total -= n
		if !r.Preemptible {
			u.NonPreemptible -= n
		}
		if u.Total <= 0 && u.NonPreemptible <= 0 {
			delete(s, k)
			continue
		}
		s[k] = u
	}
}

// dropSettling forgets the settled reservation of key, if any. Callers
// hold the lock.
func (l *Ledger) dropSettling(key string) {
	if st, ok := l.settling[key]; ok {
		l.spend(st.r, -1)
		delete(l.settling, key)
	}
}
