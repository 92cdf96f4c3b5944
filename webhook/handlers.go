package webhook

import (
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/workload"
)

// The paths the webhook server serves.
const (
	MutatePath   = "/mutate"
	ValidatePath = "/validate"
)

// HandlerOptions configure NewHandlers.
type HandlerOptions struct {
	// Reviewer decides.
	Reviewer *review.Service
	// AdminGroups may change namespaces' tenant.
	AdminGroups []string
	// Namespace is Mandate's own, never governed.
	Namespace string
	// DecisionLog writes a decision log line per decision; nil writes none.
	DecisionLog *decisionlog.Logger
	// SchedulerIdentities are the user names of the schedulers whose
	// evictions of non-preemptible pods are refused (Evictions).
	SchedulerIdentities []string
	// Pods reads the pod a pods/eviction request names; nil allows
	// evictions (DELETEs are still guarded).
	Pods client.Reader
}

// Handlers are the admission webhooks, ready to register on a webhook
// server or to serve over plain HTTP in tests. controller-runtime's
// admission.Webhook limits the body size, checks the content type and
// recovers panics.
type Handlers struct {
	Mutator   *Mutator
	Validator *Validator
	Mutate    *admission.Webhook
	Validate  *admission.Webhook
}

// NewHandlers builds the /mutate and /validate webhooks.
func NewHandlers(o HandlerOptions) (Handlers, error) {
	seal, err := review.NewSeal()
	if err != nil {
		return Handlers{}, err
	}
	m := &Mutator{Reviewer: o.Reviewer, ExemptNamespaces: exempt(o.Namespace), Decisions: o.DecisionLog, Seal: seal}
	v := &Validator{Reviewer: o.Reviewer, ExemptNamespaces: exempt(o.Namespace), Decisions: o.DecisionLog,
		Tenancy: &Tenancy{AdminGroups: o.AdminGroups}, Seal: seal,
		Evictions: &Evictions{Identities: o.SchedulerIdentities, Pods: o.Pods, Tenant: func(namespace string) string {
			if o.Reviewer == nil || o.Reviewer.State == nil {
				return ""
			}
			ns, _ := o.Reviewer.State.LookupNamespace(namespace)
			return ns.Labels[workload.LabelTenant]
		}}}
	return Handlers{Mutator: m, Validator: v,
		Mutate:   &admission.Webhook{Handler: m, LogConstructor: requestLogger},
		Validate: &admission.Webhook{Handler: v, LogConstructor: requestLogger}}, nil
}

// Register adds the handlers to a webhook server at MutatePath and
// ValidatePath, both bounded by one Limiter (nil: unbounded).
func (h Handlers) Register(srv interface {
	Register(path string, hook http.Handler)
}, limit *Limiter) {
	wrap := func(next http.Handler) http.Handler {
		if limit == nil {
			return next
		}
		return limit.Wrap(next)
	}
	srv.Register(MutatePath, wrap(h.Mutate))
	srv.Register(ValidatePath, wrap(h.Validate))
}
