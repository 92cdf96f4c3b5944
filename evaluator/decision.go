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
	DryRun []Violation `json:"dryrun,omitempty"`
	// Warnings are the texts a person is shown (the API server's warnings).
	Warnings []string `json:"warnings"`
	// Reasons are the model's own warnings (decision.reasons) as data:
	// each with its code, dimension, facts and message, and Warning, the
	// text it is among Warnings. Readers act on the facts, never the text.
	Reasons    []Violation `json:"reasons,omitempty"`
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

// Violation is one reason to deny, or to warn (Decision.Reasons): its code,
// dimension, the facts its message is rendered from, and the message.
type Violation struct {
	Code      string    `json:"code"`
	Dimension Dimension `json:"dimension"`
	Message   string    `json:"message"`
	// Enforcement is EnforceDeny, EnforceWarn or EnforceDryRun.
	Enforcement string `json:"enforcement,omitempty"`
	Facts
	// Warning is the text a reason is shown as among Decision.Warnings.
	Warning string `json:"-"`
}

// Facts are what a violation or warning is about, as data (mandate.lib.reason
// in Rego): each is set only where the rule has it, zero otherwise. Codes
// say what Limit, Current and Needs count: GPUs for quota (the ceiling or
// the guarantee; the usage against it, total or non-preemptible; the
// workload's GPUs), pod slots for topology (the largest domain's; those
// free in the roomiest now; the gang's size).
type Facts struct {
	// Tenant holds the limit (the tenant whose ceiling is busy), or is the
	// workload's.
	Tenant    string `json:"tenant,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Resource  string `json:"resource,omitempty"`
	// Product is the GPU product of the limit, or the one the workload
	// asks for; "" for every product.
	Product string `json:"product,omitempty"`
	// Level and Domain are the topology level required and the domain the
	// rule names (the largest, or the roomiest now).
	Level  string `json:"level,omitempty"`
	Domain string `json:"domain,omitempty"`
	// Pool is the pool the tenant's placement rules confine the workload
	// to, within which the topology rule was decided; "" for the whole
	// cluster.
	Pool string `json:"pool,omitempty"`
	// Class is the priority class at issue; Classes those the tenant may
	// use (or, for QUOTA_OVER_GUARANTEE, the preemptible ones among them).
	Class   string   `json:"class,omitempty"`
	Classes []string `json:"classes,omitempty"`
	// Key is the workload's own scheduler key, Asked the value it asks for
	// and Queue the queue the model sets instead.
	Key     string `json:"key,omitempty"`
	Asked   string `json:"asked,omitempty"`
	Queue   string `json:"queue,omitempty"`
	Limit   int    `json:"limit,omitempty"`
	Current int    `json:"current,omitempty"`
	Needs   int    `json:"needs,omitempty"`
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
	Scheduler string `json:"scheduler"`
	Queue     string `json:"queue"`
	// PriorityClass is the class the work runs at: its Tier's, or the
	// tier's borrowed class (model.BorrowedClass) for non-preemptible
	// work admitted beyond a guarantee.
	PriorityClass string `json:"priorityClass"`
	// Tier is the model's tier of the work when PriorityClass is not the
	// tier itself (a borrowed class); "" when PriorityClass is the tier
	// (see TierName).
	Tier        string `json:"tier,omitempty"`
	Preemptible bool   `json:"preemptible"`
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
	// Placement is where the tenant's placement rules confine the work
	// (the authority model's tenants.<t>.placement); nil when none do.
	Placement *Placement `json:"placement,omitempty"`
}

// Placement is the placement directive: the pool the work is confined to
// and its node selector (label → allowed values, all labels must match),
// the pool it prefers, and the topology level at which its isolation unit
// (the tenant whose rule it is) shares no domain with other tenants.
type Placement struct {
	Pool string `json:"pool,omitempty"`
	// Rule names the model field that confines the work, e.g.
	// tenants.team-a.placement.allowed.
	Rule              string              `json:"rule,omitempty"`
	NodeSelector      map[string][]string `json:"nodeSelector,omitempty"`
	PreferredPool     string              `json:"preferredPool,omitempty"`
	PreferredSelector map[string][]string `json:"preferredSelector,omitempty"`
	IsolationLevel    string              `json:"isolationLevel,omitempty"`
	IsolationLabel    string              `json:"isolationLabel,omitempty"`
	IsolationUnit     string              `json:"isolationUnit,omitempty"`
}

// TierName is the model's tier of the work: Tier when the work runs at a
// class of another name (a borrowed class), else PriorityClass.
func (d Directives) TierName() string {
	if d.Tier != "" {
		return d.Tier
	}
	return d.PriorityClass
}
