package schedsync

// LeaseName is the Lease the replicas of serve elect the sync's leader by.
const LeaseName = "mandate-sync"
