package authoritymetrics

// LeaseName is the Lease the replicas of serve elect the metrics' leader
// by: deciding every workload again is done once, not per replica.
const LeaseName = "mandate-authority-metrics"
