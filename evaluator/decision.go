package evaluator

import "github.com/mandate-dev/mandate/ledger"

// Dimension is the part of the authority model a violation belongs to.
type Dimension string

// The authority dimensions.
const (
	DimensionTenancy    Dimension = "tenancy"
	DimensionPriority   Dimension = "priority"
	DimensionQuota      Dimension = "quota"
	DimensionTopology   Dimension = "topology"
	DimensionPreemption Dimension = "preemption"
)

// Enforcement actions: what a violation does, set per violation code or
// dimension in the authority data (model.enforcement), so a new rule can go
// out as dryrun, then warn, then deny without touching Rego.
const (
	// EnforceDeny denies the workload (the default).
	EnforceDeny = "deny"
	// EnforceWarn admits the workload and shows the violation as a warning.
	EnforceWarn = "warn"
	// EnforceDryRun admits the workload silently; the violation is only
	// recorded (decision log, metrics).
	EnforceDryRun = "dryrun"
)

// Decision is what the authority model says about one workload: the contract
// between data.mandate.decision in Rego and the Go side.
type Decision struct {
	// ID identifies this decision in logs and audit annotations.
	ID string `json:"id"`
	// Revision of the policies that decided.
	Revision string `json:"revision"`
	Allowed  bool   `json:"allowed"`
	// Violations are the enforced ones (action deny): any denies.
	Violations []Violation `json:"violations"`
	// Warned are violations whose action is warn: admitted, and their
	// messages are among Warnings.
	Warned []Violation `json:"warned,omitempty"`
	// DryRun are violations whose action is dryrun: admitted silently,
	// only recorded.
	DryRun     []Violation `json:"dryrun,omitempty"`
	Warnings   []string    `json:"warnings"`
	Directives Directives  `json:"directives"`
	// Explanations say, per dimension, the verdict, the limit and the
	// current value, so a person sees why.
	Explanations []Explanation `json:"explanations"`
	// Relied are the quota limits the decision took from Input.Usage
	// (decision.relied), so that it can be committed without having been
	// made under the tenant tree's lock: the commit re-checks each one
	// against the usage then (cluster.State.DecideExcluding). ReliedKnown
	// says the policy exported them; a policy that does not is taken to
	// rely on every usage entry of the tenant chain.
	Relied      []ledger.Limit `json:"-"`
	ReliedKnown bool           `json:"-"`
}

// Violation is one reason to deny.
type Violation struct {
	Code      string    `json:"code"`
	Dimension Dimension `json:"dimension"`
	Message   string    `json:"message"`
	// Enforcement is EnforceDeny, EnforceWarn or EnforceDryRun.
	Enforcement string `json:"enforcement,omitempty"`
}

// Explanation summarises one dimension of a decision.
type Explanation struct {
	Dimension Dimension `json:"dimension"`
	// Verdict is "ok", "warn", "dryrun" (only dryrun-stage violations: it
	// would deny) or "deny".
	Verdict string `json:"verdict"`
	// Limit and Current are human-readable ("ceiling 64 nvidia.com/gpu",
	// "48 in use + 32 requested").
	Limit   string `json:"limit"`
	Current string `json:"current"`
}

// Directives tell the tenant's scheduler what the authority model wants; the
// scheduler adapters in scheduler/ decide how each scheduler is told.
type Directives struct {
	// Scheduler is a registered scheduler's name (scheduler/facts).
	Scheduler     string `json:"scheduler"`
	Queue         string `json:"queue"`
	PriorityClass string `json:"priorityClass"`
	Preemptible   bool   `json:"preemptible"`
	// GangMin is the number of pods that must start together (the elastic
	// minimum when the workload declares one); 0 for no gang.
	GangMin int `json:"gangMin"`
	// Topology levels, by name and by node label, and the scheduler-side
	// topology object (KAI Topology CR name) they belong to.
	RequiredLevel  string `json:"requiredLevel"`
	RequiredLabel  string `json:"requiredLabel"`
	PreferredLevel string `json:"preferredLevel"`
	PreferredLabel string `json:"preferredLabel"`
	// RequiredTier and PreferredTier number the levels from the narrowest
	// (1) upwards, as Volcano's networkTopology.highestTierAllowed counts.
	RequiredTier  int    `json:"requiredTier"`
	PreferredTier int    `json:"preferredTier"`
	TopologyName  string `json:"topologyName"`
	// Labels and Annotations to add to the workload.
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}
