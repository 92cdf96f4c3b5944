package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
)

// The paths the webhook server serves.
const (
	MutatePath   = "/mutate"
	ValidatePath = "/validate"
)

// Defaults of Options.
const (
	DefaultPort        = 9443
	DefaultHealthAddr  = ":8081"
	DefaultMetricsAddr = ":8080"
)

// Options configure the webhook server.
type Options struct {
	// RestConfig reaches the API server; required.
	RestConfig *rest.Config
	// CertDir holds tls.crt and tls.key; they are reloaded when they change.
	CertDir string
	// Host and Port the webhook server listens on (Port DefaultPort when 0).
	Host string
	Port int
	// HealthAddr serves /healthz and /readyz, MetricsAddr /metrics; "0"
	// disables either.
	HealthAddr  string
	MetricsAddr string
	// Evaluation configures the evaluator (its per-evaluation deadline)
	// for Policy and for every bundle revision.
	Evaluation evaluator.Options
	// Policy decides; the embedded default authority model when nil.
	// Ignored when Bundle is set.
	Policy *evaluator.Policy
	// Bundle, when set, takes the policy from a bundle file, directory or
	// server instead: activated before the manager starts when the source
	// answers (else from the persisted last good bundle; New fails with a
	// SourceError when neither activates), then polled, each new revision
	// swapped in atomically.
	Bundle *bundles.SourceOptions
	// Shadow, when set, is a candidate bundle decided beside the active
	// policy on every admission and never enforced: its differences are
	// counted (mandate_shadow_*) and reported in Review.Shadow. It is
	// activated and polled like Bundle; New fails with a SourceError when
	// it does not activate at startup.
	Shadow *bundles.SourceOptions
	// AdminGroups may change namespaces' tenant; DefaultAdminGroups when empty.
	AdminGroups []string
	// Namespace is Mandate's own namespace, never governed.
	Namespace string
	// Setup runs with the manager before it starts, to add controllers
	// (the gang PodGroup controller).
	Setup []func(manager.Manager) error
	// DecisionLog writes a decision log line per decision; nil writes none.
	DecisionLog *decisionlog.Logger
}

func (o *Options) defaults() error {
	if o.RestConfig == nil {
		return errors.New("no API server configuration")
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.HealthAddr == "" {
		o.HealthAddr = DefaultHealthAddr
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = DefaultMetricsAddr
	}
	if len(o.AdminGroups) == 0 {
		o.AdminGroups = DefaultAdminGroups
	}
	if o.Policy == nil {
		p, err := evaluator.LoadFS(policies.FS, "embedded")
		if err != nil {
			return fmt.Errorf("unable to load the embedded policy: %w", err)
		}
		o.Policy = p
	}
	return nil
}

// HandlerOptions configure NewHandlers.
type HandlerOptions struct {
	Reviewer *Reviewer
	// Owners reads pods' owners uncached (the manager's API reader).
	Owners      OwnerReader
	AdminGroups []string
	// ExemptNamespaces are never governed (Mandate's own).
	ExemptNamespaces []string
	// DecisionLog writes a decision log line per decision; nil writes none.
	DecisionLog *decisionlog.Logger
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
func NewHandlers(o HandlerOptions) Handlers {
	m := &Mutator{Reviewer: o.Reviewer, Owners: o.Owners, ExemptNamespaces: o.ExemptNamespaces}
	v := &Validator{Reviewer: o.Reviewer, Owners: o.Owners, ExemptNamespaces: o.ExemptNamespaces,
		Tenancy: &Tenancy{AdminGroups: o.AdminGroups}}
	m.Decisions, v.Decisions = o.DecisionLog, o.DecisionLog
	return Handlers{Mutator: m, Validator: v, Mutate: &admission.Webhook{Handler: m}, Validate: &admission.Webhook{Handler: v}}
}

// Server is Mandate's webhook server: a controller-runtime manager whose
// cache feeds the cluster state and whose webhook server decides.
type Server struct {
	Manager manager.Manager
	// Evaluator is the evaluator of Options.Policy, or the first bundle
	// revision activated; with a bundle source, Activator.Current() is the
	// one deciding now.
	Evaluator *evaluator.Evaluator
	// Activator holds the active bundle revision; nil without Options.Bundle.
	Activator *bundles.Activator
	State     *cluster.State
	Handlers  Handlers

	// Shadow holds the shadow revision; nil without Options.Shadow.
	Shadow *bundles.Activator

	policyLoaded atomic.Bool
	cacheSynced  atomic.Bool
}

// New compiles the policy and sets up the manager; Start runs it.
func New(ctx context.Context, o Options) (*Server, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	log := ctrl.LoggerFrom(ctx)
	s := &Server{}
	cacheSyncedGauge.Set(0)
	reviewer, source, err := s.policy(ctx, o)
	if err != nil {
		return nil, err
	}
	shadowSource, err := s.shadow(ctx, o, reviewer)
	if err != nil {
		return nil, err
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("unable to build the scheme: %w", err)
	}
	s.Manager, err = ctrl.NewManager(o.RestConfig, manager.Options{
		Scheme:                 scheme,
		Logger:                 log,
		HealthProbeBindAddress: o.HealthAddr,
		Metrics:                s.metricsOptions(o),
		WebhookServer:          crwebhook.NewServer(crwebhook.Options{Host: o.Host, Port: o.Port, CertDir: o.CertDir}),
	})
	if err != nil {
		return nil, fmt.Errorf("unable to set up the manager: %w", err)
	}
	if err := s.State.Watch(ctx, s.Manager.GetCache()); err != nil {
		return nil, err
	}
	reviewer.Namespaces = s.Manager.GetAPIReader()
	s.Handlers = NewHandlers(HandlerOptions{
		Reviewer:         reviewer,
		Owners:           s.Manager.GetAPIReader(),
		AdminGroups:      o.AdminGroups,
		ExemptNamespaces: exempt(o.Namespace),
		DecisionLog:      o.DecisionLog,
	})
	ws := s.Manager.GetWebhookServer()
	ws.Register(MutatePath, s.Handlers.Mutate)
	ws.Register(ValidatePath, s.Handlers.Validate)

	if err := s.Manager.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if s.Manager.GetCache().WaitForCacheSync(ctx) {
			s.cacheSynced.Store(true)
			cacheSyncedGauge.Set(1)
			ctrl.LoggerFrom(ctx).Info("cluster state synced")
		}
		return nil
	})); err != nil {
		return nil, fmt.Errorf("unable to add the cache-sync watcher: %w", err)
	}
	if source != nil {
		if err := s.Manager.Add(manager.RunnableFunc(source.Run)); err != nil {
			return nil, fmt.Errorf("unable to add the bundle source: %w", err)
		}
	}
	if shadowSource != nil {
		if err := s.Manager.Add(manager.RunnableFunc(shadowSource.Run)); err != nil {
			return nil, fmt.Errorf("unable to add the shadow bundle source: %w", err)
		}
	}
	if err := s.Manager.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("unable to add the health check: %w", err)
	}
	if err := s.Manager.AddReadyzCheck("policy-and-cache", s.ready); err != nil {
		return nil, fmt.Errorf("unable to add the readiness check: %w", err)
	}
	if err := s.Manager.AddReadyzCheck("webhook", ws.StartedChecker()); err != nil {
		return nil, fmt.Errorf("unable to add the webhook readiness check: %w", err)
	}
	for _, setup := range o.Setup {
		if err := setup(s.Manager); err != nil {
			return nil, fmt.Errorf("unable to set up a controller: %w", err)
		}
	}
	return s, nil
}

// policy builds the evaluator (or, with a bundle source, the Activator
// and a first activation), the cluster state for its authority model, and
// the Reviewer deciding with it.
func (s *Server) policy(ctx context.Context, o Options) (*Reviewer, bundles.Source, error) {
	log := ctrl.LoggerFrom(ctx)
	if o.Bundle == nil {
		ev, err := evaluator.New(ctx, o.Policy, o.Evaluation)
		if err != nil {
			return nil, nil, err
		}
		if s.State, err = cluster.New(ev.Model()); err != nil {
			return nil, nil, err
		}
		s.Evaluator = ev
		s.policyLoaded.Store(true)
		bundles.ReportActive(ev.Revision())
		log.Info("policy loaded", "revision", ev.Revision())
		return &Reviewer{Decider: ev, State: s.State}, nil, nil
	}
	bundle := *o.Bundle
	if bundle.Activator.Evaluator == (evaluator.Options{}) {
		bundle.Activator.Evaluator = o.Evaluation
	}
	act, src, err := bundles.NewSource(bundle)
	if err != nil {
		return nil, nil, err
	}
	s.Activator = act
	if err := firstActivation(ctx, act, src, bundle.Activator.PersistDir, false); err != nil {
		return nil, nil, err
	}
	// The cluster state is shaped by the authority model of the first
	// revision.
	ev := act.Current()
	s.Evaluator = ev
	log.Info("policy bundle activated", "revision", ev.Revision())
	if s.State, err = cluster.New(ev.Model()); err != nil {
		return nil, nil, err
	}
	// Later revisions reshape it (topology levels, tenant tree) before
	// they decide.
	act.OnActivate(func(ev *evaluator.Evaluator) error { return s.State.SetModel(ev.Model()) })
	return &Reviewer{Source: current(act), State: s.State}, src, nil
}

// ready is the readiness check: ready once the policy is loaded (with a
// bundle source: a first revision activated) and the cache (so the
// cluster state) has synced.
func (s *Server) ready(*http.Request) error {
	switch {
	case s.Activator != nil && s.Activator.Current() == nil:
		if msg := s.Activator.Status().LastError; msg != "" {
			return fmt.Errorf("no policy bundle activated yet: %s", msg)
		}
		return errors.New("no policy bundle activated yet: waiting for the bundle source")
	case s.Activator == nil && !s.policyLoaded.Load():
		return errors.New("policy not loaded")
	case !s.cacheSynced.Load():
		return errors.New("cluster state not synced")
	}
	return nil
}

// Start runs the manager until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Manager.Start(ctx); err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}

func exempt(namespace string) []string {
	if namespace == "" {
		return nil
	}
	return []string{namespace}
}
