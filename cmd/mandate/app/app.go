// Package app is the composition root of `mandate serve`: from the typed
// configuration it builds the controller-runtime manager, the cluster
// state its informers feed, the policy (embedded, a directory, or a bundle
// source with an optional shadow), the decision service, the admission
// webhooks, the gang controller and the serving certificates, and wires
// health, readiness and the bundle status endpoint. It holds no logic of
// its own; cmd/mandate parses flags into config.Serve and calls New, and
// the end-to-end tests do the same in process.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/mandate-dev/mandate/authoritymetrics"
	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/elected"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/gang"
	"github.com/mandate-dev/mandate/gangpreempt"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/workload"
)

// Server is `mandate serve`, assembled: a manager whose cache feeds the
// cluster state and whose webhook server decides through the service.
type Server struct {
	Manager manager.Manager
	State   *cluster.State
	Service *review.Service
	// Handlers are the admission webhooks registered on the manager.
	Handlers webhook.Handlers
	// Evaluator decides without a bundle source; nil with one.
	Evaluator *evaluator.Evaluator
	// Activator holds the active bundle revision; nil without
	// bundle.source.
	Activator *bundles.Activator
	// Shadow holds the shadow revision; nil without bundle.shadow.source.
	Shadow *bundles.Activator
	// grantsClient watches and writes the TenantLedgers for this
	// replica's quota grants; nil without them.
	grantsClient client.WithWatch

	cacheSynced atomic.Bool
	// loadedAt is when the policy without a bundle source was loaded.
	loadedAt time.Time
}

// ledgerQPS bounds the shared quota ledger's requests per second.
const ledgerQPS = 500

// New builds `mandate serve` from c against the API server of rc; Start
// runs it. decisions writes the decision log (nil writes none). The first
// bundle revision (and shadow) is activated before New returns; a source
// that cannot be read, with nothing persisted, is a *bundles.StartupError.
func New(ctx context.Context, rc *rest.Config, c config.Serve, decisions *decisionlog.Logger) (*Server, error) {
	s := &Server{}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = float32(c.KubeClient.QPS), c.KubeClient.Burst
	cluster.ReportSynced(false)
	// Fetching the first bundle can take as long as the source's timeout:
	// health answers meanwhile (alive, not ready), so a liveness probe
	// does not restart a replica that is only waiting for its source.
	stopEarlyHealth, err := earlyHealth(ctx, c)
	if err != nil {
		return nil, err
	}
	bundleSrc, shadowSrc, err := s.sources(ctx, c)
	if stopErr := stopEarlyHealth(); err == nil {
		err = stopErr
	}
	if err != nil {
		return nil, err
	}
	webhookTLS := []func(*tls.Config){webhook.SecureTLS}
	if c.Webhook.ClientCAFile != "" {
		clientAuth, err := webhook.ClientAuth(c.Webhook.ClientCAFile, c.Webhook.ClientCN)
		if err != nil {
			return nil, err
		}
		webhookTLS = append(webhookTLS, clientAuth)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("unable to build the scheme: %w", err)
	}
	enableLockProfiles(c.PprofAddr)
	s.Manager, err = ctrl.NewManager(rc, manager.Options{
		Scheme: scheme,
		Logger: ctrl.LoggerFrom(ctx),
		// Controller names are unique within this manager (one per
		// kind); a process runs one manager, but tests start several.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		// The informers keep of Pods and Nodes only what the decisions
		// read: at 100k pods the whole objects are gigabytes.
		// Informers of other kinds (owners, namespaces, the gang
		// controller's metadata) drop managedFields, which nothing reads.
		Cache:                  cache.Options{ByObject: cluster.StripTransforms(), DefaultTransform: cache.TransformStripManagedFields()},
		HealthProbeBindAddress: c.HealthAddr,
		PprofBindAddress:       c.PprofAddr,
		Metrics:                metricsOptions(c, s.BundleStatus),
		WebhookServer: crwebhook.NewServer(crwebhook.Options{Host: c.Webhook.Host, Port: c.Webhook.Port, CertDir: c.Webhook.CertDir,
			TLSOpts: webhookTLS}),
	})
	if err != nil {
		return nil, fmt.Errorf("unable to set up the manager: %w", err)
	}
	if err := s.State.Watch(ctx, s.Manager.GetCache()); err != nil {
		return nil, err
	}
	if c.Quota.Shared {
		if err := cluster.CheckSharedLedger(s.Manager.GetRESTMapper()); err != nil {
			return nil, err
		}
		// Reads and writes of the TenantLedger objects go to the API
		// server, never a cache: the commit is a compare-and-swap. Commits
		// are batched, one in flight per tree, so the client's own rate
		// limit (client-go's default is 5/s) would only add latency to
		// admissions; the API server's priority and fairness still apply.
		lc := rest.CopyConfig(rc)
		lc.QPS, lc.Burst = ledgerQPS, 2*ledgerQPS
		cl, err := client.NewWithWatch(lc, client.Options{Scheme: scheme, Mapper: s.Manager.GetRESTMapper()})
		if err != nil {
			return nil, fmt.Errorf("unable to create the shared ledger's client: %w", err)
		}
		s.State.ShareReservations(cl)
		if c.Quota.Grants.Enabled {
			holder := c.Quota.Grants.Holder
			if holder == "" {
				holder = cluster.HolderName()
			}
			s.State.ShareGrants(cluster.GrantOptions{Holder: holder, Lease: c.Quota.Grants.Lease, StoreBound: c.Quota.Grants.StoreBound})
			s.grantsClient = cl
		}
	}
	// Queues and topologies the directives name are checked against
	// informers (only of the kinds served), never read per admission.
	if s.Service.SchedulerObjects, err = cluster.WatchSchedulerObjects(ctx, s.Manager.GetCache(), s.Manager.GetRESTMapper()); err != nil {
		return nil, err
	}
	s.Service.Namespaces = s.Manager.GetAPIReader()
	s.Service.Owners = s.Manager.GetAPIReader()
	s.Service.OwnerCache = s.Manager.GetCache()
	// The gang owners' informers serve the owner reads and keep each
	// admitted workload's hold for its whole life.
	holdOf := func(u *unstructured.Unstructured) (ledger.Hold, bool) { return s.Service.HoldOf(u) }
	if err := s.State.WatchHolds(ctx, s.Manager.GetCache(), s.Manager.GetRESTMapper(), workload.GangOwners(), holdOf); err != nil {
		return nil, err
	}
	// DRA claims and templates are read through the manager's cache
	// instead of a GET per admission: the claims' informer is the one the
	// cluster state counts running usage from (State.Watch), the
	// templates' starts on first use.
	s.Service.Claims = s.Manager.GetClient()
	if s.Handlers, err = webhook.NewHandlers(webhook.HandlerOptions{
		Reviewer: s.Service, AdminGroups: c.AdminGroups, Namespace: c.Namespace, DecisionLog: decisions,
		SchedulerIdentities: c.SchedulerIdentities, Pods: s.Manager.GetAPIReader(),
	}); err != nil {
		return nil, err
	}
	s.Handlers.Register(s.Manager.GetWebhookServer(), webhook.NewLimiter(int64(c.Webhook.MaxInFlightBytes), time.Second))
	runnables := []manager.Runnable{manager.RunnableFunc(s.waitForSync), manager.RunnableFunc(func(ctx context.Context) error {
		// Every replica: each releases the creates it sees refused.
		return s.State.ReleaseUnstored(ctx, s.Manager.GetAPIReader(), cluster.StoredGrace)
	})}
	if s.grantsClient != nil {
		// Every replica keeps its own quota grants.
		runnables = append(runnables, manager.RunnableFunc(func(ctx context.Context) error { return s.State.RunGrants(ctx, s.grantsClient) }))
	}
	for _, src := range []bundles.Source{bundleSrc, shadowSrc} {
		if src != nil {
			runnables = append(runnables, manager.RunnableFunc(src.Run))
		}
	}
	certRunnable, err := servingCerts(ctx, rc, c)
	if err != nil {
		return nil, err
	}
	if certRunnable != nil {
		runnables = append(runnables, certRunnable)
	}
	for _, r := range runnables {
		if err := s.Manager.Add(r); err != nil {
			return nil, fmt.Errorf("unable to add a runnable to the manager: %w", err)
		}
	}
	if err := s.checks(); err != nil {
		return nil, err
	}
	if err := gang.Setup(s.Manager); err != nil {
		return nil, fmt.Errorf("unable to set up the gang controller: %w", err)
	}
	if err := gangpreempt.Setup(ctx, s.Manager); err != nil {
		return nil, err
	}
	if err := s.schedulerSync(ctx, rc, c, scheme); err != nil {
		return nil, err
	}
	if err := s.authorityMetrics(ctx, rc, c); err != nil {
		return nil, err
	}
	if err := s.openReports(ctx, rc, c); err != nil {
		return nil, err
	}
	return s, nil
}

// active is the revision active now: the bundle's, or the policy loaded
// at startup; nil while no bundle revision is.
func (s *Server) active() *evaluator.Evaluator {
	if s.Activator != nil {
		return s.Activator.Current()
	}
	return s.Evaluator
}

// exempt is what serve never governs beside the system namespaces: its
// own namespace.
func exempt(c config.Serve) []string {
	if c.Namespace == "" {
		return nil
	}
	return []string{c.Namespace}
}

// authorityMetrics adds the loop that publishes the cluster report as
// metrics (per-tenant GPUs, blocked demand, idle and stranded GPUs): on
// the holder of its Lease in Mandate's namespace (every replica when none
// is set), deciding every workload against the active revision.
func (s *Server) authorityMetrics(ctx context.Context, rc *rest.Config, c config.Serve) error {
	// The report reads the Pods and Nodes the informers hold (synced
	// before its first run: Ready), the rest from the API server.
	held := func(ctx context.Context) ([]*cluster.PodFacts, []*corev1.Node, bool) {
		pods, ok := cluster.HeldPods(ctx, s.Manager.GetCache())
		return pods, s.State.Nodes(), ok
	}
	loop := &authoritymetrics.Loop{Interval: authoritymetrics.DefaultInterval,
		Report: authoritymetrics.FromClusterHeld(s.Manager.GetAPIReader(), held, s.active, exempt(c)), Ready: s.cacheSynced.Load}
	var r manager.Runnable = loop
	if c.Namespace != "" {
		r = &elected.Runnable{Run: loop, Lease: authoritymetrics.LeaseName, What: "the authority metrics", Config: rc, Namespace: c.Namespace}
	} else {
		ctrl.LoggerFrom(ctx).Info("authority metrics run without leader election: no namespace configured for their Lease")
	}
	if err := s.Manager.Add(r); err != nil {
		return fmt.Errorf("unable to add the authority metrics: %w", err)
	}
	return nil
}

// schedulerSync adds, when sync.enabled, the reconciler that configures
// the schedulers from the active model: elected among the replicas by a
// Lease in Mandate's namespace (every replica runs it when none is set),
// fed each newly activated revision's model.
func (s *Server) schedulerSync(ctx context.Context, rc *rest.Config, c config.Serve, scheme *runtime.Scheme) error {
	if !c.Sync.Enabled {
		return nil
	}
	cl, err := client.New(rc, client.Options{Scheme: scheme, Mapper: s.Manager.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("unable to create the scheduler sync's client: %w", err)
	}
	rec := &schedsync.Reconciler{Syncer: schedsync.Syncer{Client: cl}, Interval: c.Sync.Interval,
		ReportOnly: c.Sync.Mode == config.SyncReport,
		Options:    schedsync.Options{VolcanoConfigMap: schedsync.VolcanoConfigMap{Namespace: c.Sync.VolcanoConfigNamespace, Name: c.Sync.VolcanoConfigName}}}
	if len(c.Sync.Schedulers) > 0 {
		rec.Options.Schedulers = c.Sync.Schedulers
	}
	ev := s.Evaluator
	if s.Activator != nil {
		ev = s.Activator.Current()
		s.Activator.OnActivate(func(ev *evaluator.Evaluator) error {
			if err := s.State.SetModel(ev.Model()); err != nil {
				return err
			}
			rec.SetModel(ev.Model(), ev.Revision())
			return nil
		})
	}
	rec.SetModel(ev.Model(), ev.Revision())
	var r manager.Runnable = rec
	if c.Namespace != "" {
		r = &elected.Runnable{Run: rec, Lease: schedsync.LeaseName, What: "the scheduler sync", Config: rc, Namespace: c.Namespace}
	} else {
		ctrl.LoggerFrom(ctx).Info("scheduler sync runs without leader election: no namespace configured for its Lease")
	}
	if err := s.Manager.Add(manager.RunnableFunc(r.Start)); err != nil {
		return fmt.Errorf("unable to add the scheduler sync: %w", err)
	}
	return nil
}

// metricsOptions serve /metrics and the bundle status on c.MetricsAddr;
// with metricsAuth over HTTPS (AEAD suites only), to clients the API
// server authenticates (TokenReview) and authorises (SubjectAccessReview
// of get on the path).
func metricsOptions(c config.Serve, status func() bundles.ServingStatus) metricsserver.Options {
	o := metricsserver.Options{BindAddress: c.MetricsAddr,
		ExtraHandlers: map[string]http.Handler{bundles.StatusPath: bundles.StatusHandler(status)}}
	if c.MetricsAuth {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		o.TLSOpts = []func(*tls.Config){webhook.SecureTLS}
	}
	return o
}

// Start runs the manager until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Manager.Start(ctx); err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}

// sources builds the policy and the shadow, activating the first revision
// of each bundle source; it returns the sources to poll.
func (s *Server) sources(ctx context.Context, c config.Serve) (bundleSrc, shadowSrc bundles.Source, err error) {
	if bundleSrc, err = s.policy(ctx, c); err != nil {
		return nil, nil, err
	}
	s.State.SetConfirmationWindow(c.Quota.ConfirmationWindow)
	if shadowSrc, err = s.shadow(ctx, c); err != nil {
		return nil, nil, err
	}
	return bundleSrc, shadowSrc, nil
}

// policy builds the evaluator (or, with a bundle source, the Activator
// and a first activation), the cluster state for its authority model, and
// the decision service deciding with it. It returns the bundle source to
// poll, if any.
func (s *Server) policy(ctx context.Context, c config.Serve) (bundles.Source, error) {
	log := ctrl.LoggerFrom(ctx)
	evalOpts := evaluator.Options{Timeout: c.Evaluation.Timeout, EnforcementOverride: c.Evaluation.EnforcementOverride}
	if o := c.Evaluation.EnforcementOverride; o != "" {
		log.Info("enforcement overridden: what the model would deny is admitted and recorded", "enforcementOverride", o)
	}
	if c.Bundle.Source == "" {
		p, err := loadPolicy(c.Policies)
		if err != nil {
			return nil, fmt.Errorf("policies: %w", err)
		}
		if err := modelcheck.Validate(p.Data); err != nil {
			return nil, fmt.Errorf("policies: %w", err)
		}
		ev, err := evaluator.New(ctx, p, evalOpts)
		if err != nil {
			return nil, err
		}
		if s.State, err = cluster.New(ev.Model()); err != nil {
			return nil, err
		}
		s.Evaluator, s.loadedAt = ev, time.Now()
		bundles.ReportActive(ev.Revision())
		log.Info("policy loaded", "revision", ev.Revision())
		s.Service = &review.Service{Decider: ev, State: s.State}
		return nil, nil
	}
	opts, err := bundleSource(c.Bundle.Source, c.Bundle, evalOpts)
	if err != nil {
		return nil, err
	}
	opts.Activator.PersistDir = c.Bundle.PersistDir
	act, src, err := bundles.NewSource(opts)
	if err != nil {
		return nil, err
	}
	if err := bundles.FirstActivation(ctx, act, src, opts.Activator.PersistDir, false); err != nil {
		return nil, err
	}
	s.Activator = act
	// The cluster state is shaped by the authority model of the first
	// revision; later revisions reshape it (topology levels, tenant tree)
	// before they decide.
	ev := act.Current()
	log.Info("policy bundle activated", "revision", ev.Revision())
	if s.State, err = cluster.New(ev.Model()); err != nil {
		return nil, err
	}
	act.OnActivate(func(ev *evaluator.Evaluator) error { return s.State.SetModel(ev.Model()) })
	s.Service = &review.Service{Source: current(act), State: s.State}
	return src, nil
}

// shadow sets up the shadow bundle, if any: its Activator, activated
// before the manager starts, and the Source polling it. It is never
// persisted: a restart without it serves no shadow rather than an old one.
func (s *Server) shadow(ctx context.Context, c config.Serve) (bundles.Source, error) {
	if c.Bundle.Shadow.Source == "" {
		return nil, nil
	}
	// The shadow decides under the same override, so that only the
	// policies' differences are counted.
	opts, err := bundleSource(c.Bundle.Shadow.Source, c.Bundle, evaluator.Options{Timeout: c.Evaluation.Timeout,
		EnforcementOverride: c.Evaluation.EnforcementOverride})
	if err != nil {
		return nil, &bundles.StartupError{Shadow: true, Err: err}
	}
	opts.Activator.Shadow = true
	act, src, err := bundles.NewSource(opts)
	if err != nil {
		return nil, &bundles.StartupError{Shadow: true, Err: err}
	}
	if err := bundles.FirstActivation(ctx, act, src, "", true); err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("shadow bundle activated: decided beside the active revision, never enforced",
		"shadowRevision", act.Current().Revision())
	s.Shadow = act
	s.Service.Shadow = current(act)
	return src, nil
}

// bundleSource is how a bundle source (the active one or the shadow) is
// read, verified and evaluated.
func bundleSource(ref string, c config.Bundle, eval evaluator.Options) (bundles.SourceOptions, error) {
	src := bundles.SourceFor(ref)
	src.Interval = c.Interval
	src.Activator.Require = c.RequireSignature
	src.Activator.Evaluator = eval
	if c.VerificationKey != "" {
		src.Activator.Verify = &bundles.VerifyOptions{PublicKey: c.VerificationKey, KeyID: c.VerificationKeyID, Scope: c.Scope}
	}
	if src.URL != "" {
		src.BearerTokenFile, src.CAFile = c.BearerTokenFile, c.CAFile
		if c.ServiceConfig != "" {
			data, err := os.ReadFile(c.ServiceConfig)
			if err != nil {
				return src, fmt.Errorf("unable to read bundle.serviceConfig: %w", err)
			}
			src.Service = data
		}
	}
	return src, nil
}

// loadPolicy is the policy directory dir, or the embedded default model.
func loadPolicy(dir string) (*evaluator.Policy, error) {
	if dir == "" {
		return evaluator.LoadFS(policies.FS, "embedded")
	}
	return evaluator.LoadPaths([]string{dir}, "dev")
}

// current asks act, on every call, for the revision active now; nil (no
// Decider) while none is.
func current(act *bundles.Activator) func() review.Decider {
	return func() review.Decider {
		if ev := act.Current(); ev != nil {
			return ev
		}
		return nil
	}
}

// BundleStatus is what bundles.StatusPath serves; without a bundle
// source, the policy loaded at startup.
func (s *Server) BundleStatus() bundles.ServingStatus {
	var st bundles.ServingStatus
	switch {
	case s.Activator != nil:
		st.Active = s.Activator.Status()
	case s.Evaluator != nil:
		st.Active = bundles.Status{Revision: s.Evaluator.Revision(), Source: "policies", ActivatedAt: s.loadedAt, LastAttempt: s.loadedAt}
	}
	if s.Shadow != nil {
		shadow := s.Shadow.Status()
		st.Shadow = &shadow
	}
	return st
}

// servingCerts is the runnable that keeps the serving certificate: the
// self-signed rotator (its first certificate written before the webhook
// server reads it), or the expiry reporter of files from elsewhere.
func servingCerts(ctx context.Context, rc *rest.Config, c config.Serve) (manager.Runnable, error) {
	if c.Certs.Mode != config.CertsSelfSigned {
		if c.Webhook.CertDir == "" {
			return nil, nil
		}
		return &certs.ExpiryReporter{Dir: c.Webhook.CertDir}, nil
	}
	cl, err := client.New(rc, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("certs: unable to create a client: %w", err)
	}
	rot, err := certs.New(certs.Options{
		Client: cl, Namespace: c.Namespace, SecretName: c.Certs.SecretName,
		WebhookConfigurationName: c.Certs.WebhookConfiguration, Hosts: c.Certs.Hosts(c.Namespace),
		CertDir: c.Webhook.CertDir, CADuration: c.Certs.CADuration, CARenewBefore: c.Certs.CARenewBefore,
		ServingDuration: c.Certs.ServingDuration, ServingRenewBefore: c.Certs.ServingRenewBefore,
		PropagationDelay: c.Certs.PropagationDelay,
	})
	if err != nil {
		return nil, err
	}
	if err := rot.Prime(ctx, time.Minute); err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	return rot, nil
}

// waitForSync marks the state synced once the cache is and the state has
// taken in the informers' first listings.
func (s *Server) waitForSync(ctx context.Context) error {
	started := time.Now()
	// The informers have stored their first listings; the state must
	// also have taken them in before a decision may rely on it.
	synced := s.Manager.GetCache().WaitForCacheSync(ctx) &&
		wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) { return s.State.Synced(), nil }) == nil
	if synced {
		s.cacheSynced.Store(true)
		cluster.ReportSynced(true)
		ctrl.LoggerFrom(ctx).Info("cluster state synced", "stateBehindCache", time.Since(started).String())
	}
	return nil
}

// checks adds /healthz and /readyz.
func (s *Server) checks() error {
	if err := s.Manager.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("unable to add the health check: %w", err)
	}
	if err := s.Manager.AddReadyzCheck("policy-and-cache", s.ready); err != nil {
		return fmt.Errorf("unable to add the readiness check: %w", err)
	}
	if err := s.Manager.AddReadyzCheck("webhook", s.afterSync(s.Manager.GetWebhookServer().StartedChecker())); err != nil {
		return fmt.Errorf("unable to add the webhook readiness check: %w", err)
	}
	return nil
}

// afterSync is check, run only once the cluster state has synced: the
// webhook server's check dials it over TLS, a handshake per probe, which
// must not take CPU from the first listings while the ready check fails
// anyway.
func (s *Server) afterSync(check healthz.Checker) healthz.Checker {
	return func(req *http.Request) error {
		if !s.cacheSynced.Load() {
			return errors.New("not checked before the cluster state has synced")
		}
		return check(req)
	}
}

// ready is the readiness check: ready once a policy revision is active
// and the cache (so the cluster state) has synced.
func (s *Server) ready(*http.Request) error {
	switch {
	case s.Activator != nil && s.Activator.Current() == nil:
		if msg := s.Activator.Status().LastError; msg != "" {
			return fmt.Errorf("no policy bundle activated yet: %s", msg)
		}
		return errors.New("no policy bundle activated yet: waiting for the bundle source")
	case !s.cacheSynced.Load():
		return errors.New("cluster state not synced")
	}
	return nil
}
