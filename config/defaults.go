package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// Defaults of the keys that other packages also fall back to: the one
// definition of each.
const (
	DefaultPort        = 9443
	DefaultHealthAddr  = ":8081"
	DefaultMetricsAddr = ":8080"
	// DefaultEvaluationTimeout bounds one policy evaluation; admission
	// must answer well within the webhook's timeoutSeconds (3 s in the
	// chart). A decision takes about a millisecond of CPU, so the deadline
	// stops a runaway policy; it is a second, not less, so that a replica
	// starved of CPU by its neighbours answers late rather than failing the
	// create (a 500 ms deadline failed creates at a load average of 12 on
	// two cores).
	DefaultEvaluationTimeout = time.Second
	// DefaultBundleInterval is how often the bundle source is polled.
	DefaultBundleInterval = 30 * time.Second
	// DefaultSyncInterval is how often the schedulers' configuration is
	// reconciled with the model.
	DefaultSyncInterval = 5 * time.Minute
	// DefaultOpenReportsInterval is how often the background audit runs.
	DefaultOpenReportsInterval = 5 * time.Minute
	// MinOpenReportsInterval and MaxOpenReportsInterval bound it.
	MinOpenReportsInterval = time.Second
	MaxOpenReportsInterval = 24 * time.Hour
	// DefaultOpenReportsMaxResults bounds the results of one Report: a
	// result is about half a kilobyte, so a Report stays well under the
	// API server's object size limit (1.5 MiB in etcd).
	DefaultOpenReportsMaxResults = 1000
	// MaxOpenReportsMaxResults is the largest cap allowed.
	MaxOpenReportsMaxResults = 2000
	// WebhookConfigurationName names Mandate's mutating and validating
	// webhook configurations.
	WebhookConfigurationName = "mandate"
)

// The labels that mark the objects Mandate writes and keeps: PodGroups,
// Reports, the schedulers' configuration, the webhook CA's Secret. Each
// writer changes or prunes only objects carrying LabelManagedBy
// ManagedBy, and names its own LabelComponent where it has one.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "mandate"
	LabelComponent = "app.kubernetes.io/component"
)

// DefaultAdminGroups may set, change and remove a namespace's tenant.
var DefaultAdminGroups = []string{"system:masters", "mandate-admins"}

// DefaultSchedulerIdentities are the schedulers the eviction guard
// checks: kube-scheduler, as its bootstrap RBAC names it.
var DefaultSchedulerIdentities = []string{"system:kube-scheduler"}

// Default returns the configuration used for every key that is not set:
// the Default of each of Keys.
func Default() Serve {
	tree := map[string]any{}
	for _, k := range Keys {
		parts := strings.Split(k.Name, ".")
		node := tree
		for _, p := range parts[:len(parts)-1] {
			child, ok := node[p].(map[string]any)
			if !ok {
				child = map[string]any{}
				node[p] = child
			}
			node = child
		}
		if list, ok := k.Default.([]string); ok {
			// Each caller gets its own slice.
			k.Default = append([]string(nil), list...)
		}
		node[parts[len(parts)-1]] = k.Default
	}
	var s Serve
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &s, ErrorUnused: true, ErrorUnset: true})
	if err == nil {
		err = d.Decode(tree)
	}
	if err != nil {
		// Keys and Serve disagree: a programming error that
		// TestKeysMatchServe catches.
		panic(fmt.Sprintf("config: the defaults in Keys do not fit Serve: %v", err))
	}
	return s
}

// Overrides of evaluation.enforcementOverride: the evaluator's enforcement
// actions (evaluator.EnforceDryRun, evaluator.EnforceWarn) by name.
const (
	EnforcementDryRun = "dryrun"
	EnforcementWarn   = "warn"
)
