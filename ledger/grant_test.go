package ledger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const gpu = "nvidia.com/gpu"

func always(map[string]map[string]Usage) bool { return true }

// TestGrantsCountForOthersNotForTheirHolder: another holder's grant is
// used quota at the tenant and its ancestors until its lease plus the
// store bound; this replica's own grant is its headroom, spent by escrowed
// reservations that count like any other and are never stored on their
// own.
func TestGrantsCountForOthersNotForTheirHolder(t *testing.T) {
	l := New(testConfig)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.SetHolder("a", 30*time.Second)
	l.SetTreeGrants("org", []Grant{
		{Holder: "a", Tenant: "vision", GPUs: map[string]Usage{gpu: {Total: 8, NonPreemptible: 8}}, Expires: now.Add(15 * time.Second)},
		{Holder: "b", Tenant: "vision", GPUs: map[string]Usage{gpu: {Total: 6, NonPreemptible: 4}}, Expires: now.Add(15 * time.Second)},
	})
	// The decision's view: b's grant counts, a's own unspent one does not.
	require.Equal(t, Usage{Total: 6, NonPreemptible: 4}, l.UsageWithout("vision", "", "")["org"][gpu])
	// Anyone else (a report, a dry run) counts both.
	require.Equal(t, Usage{Total: 14, NonPreemptible: 12}, l.Usage("vision")["org"][gpu])

	require.True(t, l.SpendGrant("k1", "vision", "", map[string]int{gpu: 5}, false, 0, time.Minute, map[string]int{gpu: 5}, map[string]int{gpu: 5}, always))
	require.Equal(t, Usage{Total: 11, NonPreemptible: 9}, l.UsageWithout("vision", "", "")["org"][gpu], "the spend counts")
	require.Equal(t, Usage{Total: 14, NonPreemptible: 12}, l.Usage("vision")["org"][gpu], "within the grant: nothing more is used")
	require.False(t, l.SpendGrant("k2", "vision", "", map[string]int{gpu: 4}, false, 0, time.Minute, map[string]int{gpu: 4}, map[string]int{gpu: 4}, always),
		"3 left unspent do not cover 4")
	require.Empty(t, l.TreeReservations("org"), "an escrowed reservation is never stored on its own")

	l.Release("k1")
	require.Equal(t, Usage{Total: 6, NonPreemptible: 4}, l.UsageWithout("vision", "", "")["org"][gpu], "released: back to the grant")

	// b dies: its grant counts until its lease plus the store bound.
	now = now.Add(40 * time.Second)
	require.Equal(t, Usage{Total: 6, NonPreemptible: 4}, l.UsageWithout("vision", "", "")["org"][gpu])
	now = now.Add(10 * time.Second)
	require.Equal(t, Usage{}, l.UsageWithout("vision", "", "")["org"][gpu])
	require.False(t, l.SpendGrant("k3", "vision", "", map[string]int{gpu: 1}, false, 0, time.Minute, map[string]int{gpu: 1}, map[string]int{gpu: 1}, always),
		"a's own lease ran out: not spendable")
}

// TestStagedGrantSpendableOnceCommitted: a raise staged on the mirror is
// not spent before the TenantLedger holds it; a cut is at once.
func TestStagedGrantSpendableOnceCommitted(t *testing.T) {
	l := New(testConfig)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.SetHolder("a", time.Minute)
	exp := now.Add(15 * time.Second)
	l.SetOwnGrant("vision", map[string]Usage{gpu: {Total: 4, NonPreemptible: 4}}, exp)
	one := map[string]int{gpu: 1}
	require.False(t, l.SpendGrant("k", "vision", "", one, false, 0, time.Minute, one, one, always), "staged, not committed")
	gs := l.TreeGrants("org")
	require.Len(t, gs, 1)
	l.CommittedGrants("org", gs)
	require.True(t, l.SpendGrant("k", "vision", "", one, false, 0, time.Minute, one, one, always))

	// A cut to what is spent (the pool path) holds at once.
	l.SetOwnGrant("vision", nil, exp)
	require.False(t, l.SpendGrant("k2", "vision", "", one, false, 0, time.Minute, one, one, always))
	g, spent, ok := l.OwnGrant("vision")
	require.True(t, ok)
	require.Equal(t, Usage{Total: 1, NonPreemptible: 1}, g.GPUs[gpu], "never below what is spent")
	require.Equal(t, Usage{Total: 1, NonPreemptible: 1}, spent[gpu])

	// A reclaim's answer gives back all but what is spent.
	require.True(t, l.AnswerReclaim("org", now, exp))
	l.CommittedGrants("org", l.TreeGrants("org"))
	g, _, _ = l.OwnGrant("vision")
	require.Equal(t, Usage{Total: 1, NonPreemptible: 1}, g.GPUs[gpu])
	require.Equal(t, now, l.TreeGrants("org")[0].Answered)
}

// TestSettledEscrowStaysSpent: a spend settled by its stored object keeps
// its grant spent while the settled entry is shared (the others' informers
// may lag), then goes back to the grant.
func TestSettledEscrowStaysSpent(t *testing.T) {
	l := New(testConfig)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.SetHolder("a", time.Minute)
	l.UpsertNamespace(ns("v", "vision"))
	l.SetTreeGrants("org", []Grant{{Holder: "a", Tenant: "vision", GPUs: map[string]Usage{gpu: {Total: 8, NonPreemptible: 8}}, Expires: now.Add(time.Hour)}})
	key := WorkloadKey("batch/v1", "Job", "v", "train")
	require.True(t, l.SpendGrant(key, "vision", "", map[string]int{gpu: 8}, false, 0, time.Minute, map[string]int{gpu: 8}, map[string]int{gpu: 8}, always))
	l.UpsertHold(key, Hold{Namespace: "v", UID: "u", Generation: 1, GPUs: map[string]int{gpu: 8}})
	_, spent, _ := l.OwnGrant("vision")
	require.Equal(t, 8, spent[gpu].Total, "settling: still spent")
	now = now.Add(SettleTime + time.Second)
	_, spent, _ = l.OwnGrant("vision")
	require.Empty(t, spent, "settled and no longer shared: back to the grant")
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.UsageWithout("vision", "", "")["org"][gpu], "the hold counts")
}

// TestPreemptiblePastCeilingNeedsNoGrant: preemptible work past every
// ceiling only warns (it waits in the queue), so it needs no cover; a
// preemptible spend within a ceiling needs the grant's total, not its
// non-preemptible part.
func TestPreemptiblePastCeilingNeedsNoGrant(t *testing.T) {
	l := New(testConfig)
	l.SetHolder("a", time.Minute)
	one := map[string]int{gpu: 1}
	require.True(t, l.SpendGrant("k", "vision", "", one, true, 0, time.Minute, nil, nil, always))
	require.False(t, l.SpendGrant("k2", "vision", "", one, true, 0, time.Minute, one, nil, always), "no grant to cover the ceiling")
	l.SetTreeGrants("org", []Grant{{Holder: "a", Tenant: "vision", GPUs: map[string]Usage{gpu: {Total: 2}}, Expires: time.Now().Add(time.Hour)}})
	require.True(t, l.SpendGrant("k2", "vision", "", one, true, 0, time.Minute, one, nil, always))
	require.False(t, l.SpendGrant("k3", "vision", "", one, false, 0, time.Minute, one, one, always), "no non-preemptible grant")
}

// TestUnstoredEscrowGoesBackToTheGrant: a create the API server refused
// after an admission spent from the grant gives the spend back to the
// grant, and nothing stored changes (no write to make).
func TestUnstoredEscrowGoesBackToTheGrant(t *testing.T) {
	l := New(testConfig)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.SetHolder("a", time.Minute)
	l.SetTreeGrants("org", []Grant{{Holder: "a", Tenant: "vision", GPUs: map[string]Usage{gpu: {Total: 2, NonPreemptible: 2}}, Expires: now.Add(time.Hour)}})
	key := WorkloadKey("v1", "Pod", "v", "rejected")
	one := map[string]int{gpu: 1}
	require.True(t, l.SpendGrant(key, "vision", "", one, false, 0, time.Minute, one, one, always))
	now = now.Add(10 * time.Second)
	us := l.Unverified(5 * time.Second)
	require.Len(t, us, 1)
	require.False(t, l.ReleaseUnstored(us[0]), "an escrowed reservation: nothing stored changes")
	_, spent, _ := l.OwnGrant("vision")
	require.Empty(t, spent, "the spend went back to the grant")
	require.Equal(t, Usage{}, l.UsageWithout("vision", "", "")["org"][gpu])
}
