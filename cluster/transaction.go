package cluster

import (
	"context"
	"maps"
	"time"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/topology"
)

// View is what one decision reads of the state: the tenant's rolled-up
// usage (nil without a tenant) and the topology snapshot.
type View struct {
	Usage   map[string]map[string]ledger.Usage
	Cluster *topology.Snapshot
}

// Reservation is what an admitted decision holds until the informers see
// its pods: GPUs per resource, and whether they are preemptible. The zero
// Reservation holds nothing. Relied are the quota limits the decision took
// from View.Usage (evaluator.Decision.Relied) when ReliedKnown; without
// ReliedKnown the decision is taken to rely on every entry of the usage it
// read.
type Reservation struct {
	GPUs        map[string]int
	Preemptible bool
	Relied      []ledger.Limit
	ReliedKnown bool
	// Generation is the generation of the stored object the decision was
	// made for (ledger.Reservation.Generation): 0 for a create.
	Generation int64
	// WantsGuarantee says the work asked to run within its tenant's
	// guarantee (admitted non-preemptible, at a borrowed class, or denied
	// over a guarantee): only then can other replicas' grants have made
	// the decision worse (a reclaim).
	WantsGuarantee bool
}

// keeps says whether committing r leaves the reservation already under
// its key in place: a change of a stored workload (Generation set) that
// reserves nothing was denied, and must not free what the workload's
// create reserved while its hold is not seen yet.
func (r Reservation) keeps() bool { return r.Generation > 0 && len(r.GPUs) == 0 }

// optimisticAttempts is how many decisions of one admission are made
// outside the tree's lock: when a concurrent reservation flipped a limit
// the last of them relied on, the next is made under the lock, so every
// admission ends.
const optimisticAttempts = 2

// stands says whether r, decided on usage seen, may be committed when the
// usage is now: every limit it relied on gives the same outcomes now or,
// for a decision that does not say which it relied on, the usage is what
// it saw.
func (r Reservation) stands(seen, now map[string]map[string]ledger.Usage) bool {
	if !r.ReliedKnown {
		return maps.EqualFunc(seen, now, maps.Equal)
	}
	for _, lim := range r.Relied {
		if !lim.Holds(now) {
			return false
		}
	}
	return true
}

// usage is the tenant's usage, without the pods of ownerUID when set.
func (s *State) usage(tenant, ownerUID string) map[string]map[string]ledger.Usage {
	if tenant == "" {
		return nil
	}
	if ownerUID != "" {
		return s.ledger.UsageExcluding(tenant, ownerUID)
	}
	return s.ledger.Usage(tenant)
}

// SetConfirmationWindow sets how long a reservation counts before the
// stored object's pods confirm it (config.DefaultConfirmationWindow when
// zero or never set). Set it before admissions start.
func (s *State) SetConfirmationWindow(d time.Duration) { s.window = d }

func (s *State) confirmationWindow() time.Duration {
	if s.window > 0 {
		return s.window
	}
	return config.DefaultConfirmationWindow
}

// ClaimGangPod takes one of the size GPU pod slots of the admitted gang
// owner ownerUID for the pod of key in tenant's namespace
// (ledger.Ledger.ClaimGangPod), for the confirmation window; false when
// they are all taken. With shared reservations (ShareReservations) the
// claim is committed to the tenant tree's TenantLedger like a reservation,
// so replicas together grant no more slots than the owner was admitted for.
func (s *State) ClaimGangPod(ctx context.Context, tenant, ownerUID, key string, size int) (bool, error) {
	if s.shared == nil || tenant == "" || key == "" {
		ok, _ := s.ledger.ClaimGangPod(ownerUID, tenant, key, size, s.confirmationWindow())
		return ok, nil
	}
	var ok bool
	err := s.transactShared(ctx, s.ledger.RootOf(tenant), func() (bool, error) {
		var added bool
		ok, added = s.ledger.ClaimGangPod(ownerUID, tenant, key, size, s.confirmationWindow())
		return added, nil
	})
	return ok, err
}

// Decide is the quota transaction of one admission: for tenant's tree, it
// releases the earlier reservation of key (the workload decided again must
// not count against itself), reads the View, calls decide and records the
// Reservation it returns under key, so that concurrent admissions of the
// same tree never both spend the same quota. An empty key (a dry run)
// releases and reserves nothing. decide's error is returned and nothing is
// reserved. decide runs outside the tree's lock, on a View read in one step
// with key's reservation left out; only the commit (release, re-check,
// reserve) holds the lock. The commit re-checks every quota limit the
// decision relied on (Reservation.Relied) against the usage then: when a
// concurrent reservation flipped one (now busy, or now over a guarantee,
// or no longer), decide is called again, at most optimisticAttempts times
// outside the lock and then once under it, as one step. With shared
// reservations (ShareReservations) the commit is staged on the tree's
// TenantLedger mirror and compare-and-swapped, re-checked against the
// freshly read object after a conflict. decide must be safe to call more
// than once; rendering and patching belong after Decide returns.
func (s *State) Decide(ctx context.Context, tenant, key string, decide func(View) (Reservation, error)) error {
	return s.DecideExcluding(ctx, tenant, key, "", decide)
}

// DecideExcluding is Decide for a change of an admitted workload's demand:
// the View leaves out the pods of its controller UID ownerUID, whose whole
// new demand is decided (and reserved under key, which its pods consume).
func (s *State) DecideExcluding(ctx context.Context, tenant, key, ownerUID string, decide func(View) (Reservation, error)) error {
	if tenant == "" || key == "" {
		// Nothing is reserved (no tenant's quota, or a dry run): nothing to
		// commit, so no lock either.
		if key != "" {
			s.ledger.Release(key)
		}
		_, err := decide(View{Usage: s.usage(tenant, ownerUID), Cluster: s.Snapshot()})
		return err
	}
	if s.shared != nil {
		return s.decideShared(ctx, tenant, key, ownerUID, decide)
	}
	for attempt := 1; ; attempt++ {
		v := s.view(tenant, key, ownerUID)
		r, err := decide(v)
		if err != nil {
			return err
		}
		if s.commitLocal(tenant, key, ownerUID, v, r) {
			return nil
		}
		if attempt == optimisticAttempts {
			break
		}
		redecisions.WithLabelValues(redecideOutside).Inc()
	}
	redecisions.WithLabelValues(redecideLocked).Inc()
	defer s.ledger.LockTree(tenant)()
	before, had := s.ledger.Reservation(key)
	s.ledger.Release(key)
	r, err := decide(View{Usage: s.usage(tenant, ownerUID), Cluster: s.Snapshot()})
	if err == nil && r.keeps() && had {
		s.ledger.Put(key, before)
	}
	if err != nil {
		return err
	}
	s.reserve(tenant, key, r)
	return nil
}

// view is what a decision of the workload reserved under key reads: the
// usage of tenant's chain without that reservation (and without the pods
// of ownerUID when set), and the topology snapshot.
func (s *State) view(tenant, key, ownerUID string) View {
	return View{Usage: s.ledger.UsageWithout(tenant, key, ownerUID), Cluster: s.Snapshot()}
}

// commitLocal commits r, decided on v, under the tree's lock: key's earlier
// reservation is released and r reserved if it still stands on the usage
// now. false (nothing changed) when a limit it relied on flipped.
func (s *State) commitLocal(tenant, key, ownerUID string, v View, r Reservation) bool {
	defer s.ledger.LockTree(tenant)()
	if len(r.GPUs) == 0 {
		// Reserving nothing only frees quota: it stands whatever the usage.
		if !r.keeps() {
			s.ledger.Release(key)
		}
		return true
	}
	// The re-check, release and reservation are one step of the ledger,
	// so the tree's lock is held for microseconds.
	return s.ledger.ReserveIf(key, tenant, ownerUID, r.GPUs, r.Preemptible, r.Generation, s.confirmationWindow(),
		func(now map[string]map[string]ledger.Usage) bool { return r.stands(v.Usage, now) })
}

func (s *State) reserve(tenant, key string, r Reservation) {
	if key != "" && tenant != "" && len(r.GPUs) > 0 {
		s.ledger.ReserveGeneration(key, tenant, r.GPUs, r.Preemptible, r.Generation, s.confirmationWindow())
	}
}
