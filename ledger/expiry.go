package ledger

import (
	"container/heap"
	"time"
)

// What an expiry deadline is of: a reservation (Ledger.reserved), a
// settled reservation still shared (Ledger.settling), or a gang pod's claim
// (Ledger.claims), or another holder's grant (Ledger.grants).
const (
	expiresReservation uint8 = iota
	expiresSettling
	expiresClaim
	expiresGrant
)

// expiry is one deadline: at it, the entry key (of owner, for a claim) is
// dropped if it still carries that deadline. Entries are never removed
// early: one whose entry was released, replaced or given a later deadline
// finds nothing to drop (or a later deadline, which has an expiry of its
// own) when it comes due.
type expiry struct {
	at    time.Time
	kind  uint8
	key   string
	owner string
}

// expiries is a min-heap of deadlines by time, so that expire finds what
// is due without walking every reservation, settling entry and claim on
// each decision: its cost follows what expires, not how much is live.
type expiries []expiry

func (h expiries) Len() int           { return len(h) }
func (h expiries) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiries) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiries) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = expiry{}
	*h = old[:len(old)-1]
	return e
}

// due records a deadline. Callers hold the lock.
func (l *Ledger) due(at time.Time, kind uint8, key, owner string) {
	heap.Push(&l.expiries, expiry{at: at, kind: kind, key: key, owner: owner})
}

// expire drops the reservations, settling entries and claims whose
// deadline has passed, in deadline order. Callers hold the lock.
func (l *Ledger) expire() {
	now := l.now()
	for len(l.expiries) > 0 && now.After(l.expiries[0].at) {
		e := heap.Pop(&l.expiries).(expiry)
		switch e.kind {
		case expiresReservation:
			if r, ok := l.reserved[e.key]; ok && now.After(r.Expires) {
				l.release(e.key)
			}
		case expiresSettling:
			if st, ok := l.settling[e.key]; ok && now.Sub(st.at) > SettleTime {
				l.dropSettling(e.key)
			}
		case expiresClaim:
			pending := l.claims[e.owner]
			if c, ok := pending[e.key]; ok && now.After(c.expires) {
				delete(pending, e.key)
			}
			if pending != nil && len(pending) == 0 {
				delete(l.claims, e.owner)
			}
		case expiresGrant:
			l.expireGrant(e.key, now)
		}
	}
}
