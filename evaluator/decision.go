package evaluator

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

// Decision is what the authority model says about one workload: the contract
// between data.mandate.decision in Rego and the Go side.
type Decision struct {
	// ID identifies this decision in logs and audit annotations.
	ID string `json:"id"`
	// Revision of the policies that decided.
	Revision   string      `json:"revision"`
	Allowed    bool        `json:"allowed"`
	Violations []Violation `json:"violations"`
	Warnings   []string    `json:"warnings"`
	Directives Directives  `json:"directives"`
	// Explanations say, per dimension, the verdict, the limit and the
	// current value, so a person sees why.
	Explanations []Explanation `json:"explanations"`
}

// Violation is one reason to deny.
type Violation struct {
	Code      string    `json:"code"`
	Dimension Dimension `json:"dimension"`
	Message   string    `json:"message"`
}

// Explanation summarises one dimension of a decision.
type Explanation struct {
	Dimension Dimension `json:"dimension"`
	// Verdict is "ok", "warn" or "deny".
	Verdict string `json:"verdict"`
	// Limit and Current are human-readable ("ceiling 64 nvidia.com/gpu",
	// "48 in use + 32 requested").
	Limit   string `json:"limit"`
	Current string `json:"current"`
}

// Directives tell the tenant's scheduler what the authority model wants; the
// scheduler adapters in webhook/ decide how each scheduler is told.
type Directives struct {
	// Scheduler is "volcano", "kai" or "default".
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
