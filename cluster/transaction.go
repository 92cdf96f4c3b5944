package cluster

import (
	"context"
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
// Reservation holds nothing.
type Reservation struct {
	GPUs        map[string]int
	Preemptible bool
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
// Reservation it returns under key, as one step that no concurrent
// admission of the same tree interleaves with. An empty key (a dry run)
// releases and reserves nothing. decide's error is returned and nothing is
// reserved. With shared reservations (ShareReservations) the step is
// committed to the tree's TenantLedger with a compare-and-swap, and decide
// may be called again when another replica committed first. Rendering and
// patching belong after Decide returns, outside the transaction.
func (s *State) Decide(ctx context.Context, tenant, key string, decide func(View) (Reservation, error)) error {
	return s.DecideExcluding(ctx, tenant, key, "", decide)
}

// DecideExcluding is Decide for a change of an admitted workload's demand:
// the View leaves out the pods of its controller UID ownerUID, whose whole
// new demand is decided (and reserved under key, which its pods consume).
func (s *State) DecideExcluding(ctx context.Context, tenant, key, ownerUID string, decide func(View) (Reservation, error)) error {
	if s.shared != nil && tenant != "" && key != "" {
		return s.decideShared(ctx, tenant, key, ownerUID, decide)
	}
	if tenant != "" {
		defer s.ledger.LockTree(tenant)()
	}
	if key != "" {
		s.ledger.Release(key)
	}
	r, err := decide(View{Usage: s.usage(tenant, ownerUID), Cluster: s.Snapshot()})
	if err != nil {
		return err
	}
	if key != "" && tenant != "" && len(r.GPUs) > 0 {
		s.ledger.Reserve(key, tenant, r.GPUs, r.Preemptible, s.confirmationWindow())
	}
	return nil
}
