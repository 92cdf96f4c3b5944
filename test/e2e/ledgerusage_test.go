package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/test/envtest"
)

// reservedUsage is tenant's usage (rolled up) as the door keeps its
// reservations: the one replica's state in memory; with the shared ledger,
// the reservations every replica committed to the TenantLedger objects,
// read from the API server and counted as a replica counts them. It is
// for workloads that are never stored (their pods count on informers).
func (s *suite) reservedUsage(t *testing.T, tenant string) map[string]map[string]ledger.Usage {
	t.Helper()
	if !s.shared {
		return s.srv.State.Usage(tenant)
	}
	st, err := cluster.New(s.srv.Evaluator.Model())
	if err != nil {
		t.Fatal(err)
	}
	ledgers, err := envtest.TenantLedgers(context.Background(), s.env.Client)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ledgers {
		if err := st.LoadReservations(&ledgers[i]); err != nil {
			t.Fatal(err)
		}
	}
	return st.Usage(tenant)
}

// waitUsage waits until every replica counts want of tenant's usage (get
// reads it), as its informers see the stored objects.
func (s *suite) waitUsage(t *testing.T, what, tenant string, get func(map[string]map[string]ledger.Usage) int, want int) {
	t.Helper()
	envtest.WaitFor(t, 30*time.Second, fmt.Sprintf("every replica to count %d as %s", want, what), func() bool {
		for _, r := range s.replicas {
			if get(r.State.Usage(tenant)) != want {
				return false
			}
		}
		return true
	})
}
