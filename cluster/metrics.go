package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var syncedGauge = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "mandate_cache_synced",
	Help: "1 once the informers feeding the cluster state (Nodes, Pods, Namespaces) have synced, else 0.",
})

// The shared quota ledger's commits (quota.shared).
var (
	ledgerCommits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_quota_ledger_commits_total",
		Help: "Writes of a TenantLedger (quota.shared) by result: committed, conflict (another replica committed first; the batch is re-checked, and decided again where a relied limit flipped), error.",
	}, []string{"result"})
	ledgerBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mandate_quota_ledger_batch_decisions",
		Help:    "Decisions carried by one TenantLedger write (quota.shared).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
	})
	ledgerCommitDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mandate_quota_ledger_commit_duration_seconds",
		Help:    "Round trip of one TenantLedger write (quota.shared), whatever its result.",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
	})
)

// grantSpends counts what the escrowed grants did (quota.shared with
// grants): admissions spent from this replica's grant with no write, or
// committed to the pool (the TenantLedger write), reclaims asked of the
// other replicas, and this replica's grants given back to a reclaim.
var grantSpends = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mandate_quota_grant_decisions_total",
	Help: "Reserving admissions of the shared ledger by path: grant (spent from this replica's escrowed grant, no write), pool (committed to the TenantLedger), reclaim (asked the other replicas to give back their unspent grant first); given_back counts this replica's answers to the others' reclaims.",
}, []string{"path"})

const (
	spendGrant     = "grant"
	spendPool      = "pool"
	spendReclaim   = "reclaim"
	spendGivenBack = "given_back"
)

// redecisions counts the decisions made again because a concurrent
// reservation flipped a quota limit the decision relied on
// (State.DecideExcluding), by where the next one is made.
var redecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mandate_quota_redecisions_total",
	Help: "Admissions decided again because a concurrent reservation flipped a quota limit their decision relied on, by where the next decision is made: outside the tenant tree's lock, or under it (the last attempt).",
}, []string{"where"})

const (
	redecideOutside = "outside"
	redecideLocked  = "locked"
)

const (
	commitCommitted = "committed"
	commitConflict  = "conflict"
	commitError     = "error"
)

func init() {
	metrics.Registry.MustRegister(syncedGauge, ledgerCommits, ledgerBatch, ledgerCommitDuration, redecisions, grantSpends)
	for _, p := range []string{spendGrant, spendPool, spendReclaim, spendGivenBack} {
		grantSpends.WithLabelValues(p)
	}
	for _, w := range []string{redecideOutside, redecideLocked} {
		redecisions.WithLabelValues(w)
	}
	for _, r := range []string{commitCommitted, commitConflict, commitError} {
		ledgerCommits.WithLabelValues(r)
	}
}

// ReportSynced exports whether the informers feeding the state have synced.
func ReportSynced(synced bool) {
	if synced {
		syncedGauge.Set(1)
		return
	}
	syncedGauge.Set(0)
}
