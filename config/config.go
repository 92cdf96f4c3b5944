// Package config owns the typed configuration of `mandate serve`: its keys,
// defaults, environment variables and validation. Values come from a YAML
// file, MANDATE_* environment variables and flags (flags > env > file >
// defaults); Load decodes them strictly, so an unknown key or a value of the
// wrong type is an error naming the key, and Validate says for each key what
// was wrong and what is allowed.
package config

import "time"

// Serve is the configuration of `mandate serve`.
type Serve struct {
	// Kubeconfig reaches the API server; in-cluster, $KUBECONFIG or
	// ~/.kube/config when empty.
	Kubeconfig string `json:"kubeconfig" yaml:"kubeconfig" mapstructure:"kubeconfig"`
	// Webhook is the admission webhook server.
	Webhook Webhook `json:"webhook" yaml:"webhook" mapstructure:"webhook"`
	// HealthAddr serves /healthz and /readyz; "0" disables it.
	HealthAddr string `json:"healthAddr" yaml:"healthAddr" mapstructure:"healthAddr"`
	// MetricsAddr serves /metrics; "0" disables it.
	MetricsAddr string `json:"metricsAddr" yaml:"metricsAddr" mapstructure:"metricsAddr"`
	// MetricsAuth serves /metrics and /bundle/status over HTTPS, only to
	// clients the API server authenticates and authorises (get on the
	// path as a non-resource URL).
	MetricsAuth bool `json:"metricsAuth" yaml:"metricsAuth" mapstructure:"metricsAuth"`
	// PprofAddr serves Go's /debug/pprof profiles; "0" disables it.
	PprofAddr string `json:"pprofAddr" yaml:"pprofAddr" mapstructure:"pprofAddr"`
	// GCPercent is Go's garbage-collection target (GOGC) while a memory
	// limit bounds the heap (ApplyGC).
	GCPercent int `json:"gcPercent" yaml:"gcPercent" mapstructure:"gcPercent"`
	// LogLevel is the least severity logged: debug, info or error. The
	// decision log is written whatever it is.
	LogLevel string `json:"logLevel" yaml:"logLevel" mapstructure:"logLevel"`
	// Policies is a policy directory; the embedded default authority model
	// when empty.
	Policies string `json:"policies" yaml:"policies" mapstructure:"policies"`
	// AdminGroups may set, change or remove a namespace's tenant label.
	AdminGroups []string `json:"adminGroups" yaml:"adminGroups" mapstructure:"adminGroups"`
	// SchedulerIdentities are the user names of the schedulers (the
	// default kube-scheduler's) whose pod deletions and evictions the
	// eviction guard checks: a pod Mandate admitted non-preemptible is
	// not theirs to evict (package evictguard). Empty turns the guard
	// off.
	SchedulerIdentities []string `json:"schedulerIdentities" yaml:"schedulerIdentities" mapstructure:"schedulerIdentities"`
	// Namespace is Mandate's own namespace, never governed.
	Namespace string `json:"namespace" yaml:"namespace" mapstructure:"namespace"`
	// Evaluation bounds policy evaluation.
	Evaluation Evaluation `json:"evaluation" yaml:"evaluation" mapstructure:"evaluation"`
	// Quota configures the quota ledger's reservations.
	Quota Quota `json:"quota" yaml:"quota" mapstructure:"quota"`
	// KubeClient sizes serve's client of the API server.
	KubeClient KubeClient `json:"kubeClient" yaml:"kubeClient" mapstructure:"kubeClient"`
	// Bundle, when its source is set, takes the policy from an OPA bundle
	// instead of Policies, polled and hot-swapped.
	Bundle Bundle `json:"bundle" yaml:"bundle" mapstructure:"bundle"`
	// DecisionLog configures the decision log (package decisionlog).
	DecisionLog DecisionLog `json:"decisionLog" yaml:"decisionLog" mapstructure:"decisionLog"`
	// Sync configures the schedulers from the model (package schedsync).
	Sync Sync `json:"sync" yaml:"sync" mapstructure:"sync"`
	// Certs says where the serving certificate comes from.
	Certs Certs `json:"certs" yaml:"certs" mapstructure:"certs"`
	// OpenReports configures the background audit written as OpenReports
	// Reports (package openreports).
	OpenReports OpenReports `json:"openReports" yaml:"openReports" mapstructure:"openReports"`
}

// OpenReports configures the background audit: every governed workload
// decided against the active revision (and the shadow), the violations
// written as one OpenReports Report per namespace, on the leader.
type OpenReports struct {
	// Enabled runs it (when the OpenReports CRDs are installed).
	Enabled bool `json:"enabled" yaml:"enabled" mapstructure:"enabled"`
	// Interval is how often it runs (and on each bundle activation).
	Interval time.Duration `json:"interval" yaml:"interval" mapstructure:"interval"`
	// MaxResults caps the results of one Report.
	MaxResults int `json:"maxResults" yaml:"maxResults" mapstructure:"maxResults"`
}

// Modes of sync.mode.
const (
	// SyncApply corrects the schedulers' configuration to the model.
	SyncApply = "apply"
	// SyncReport only reports where it differs.
	SyncReport = "report"
)

// Sync configures the reconciliation of the schedulers' configuration
// (queues, priority classes, topologies) with the active model.
type Sync struct {
	// Enabled runs it, on the leader.
	Enabled bool `json:"enabled" yaml:"enabled" mapstructure:"enabled"`
	// Interval is how often it runs (and on each bundle activation).
	Interval time.Duration `json:"interval" yaml:"interval" mapstructure:"interval"`
	// Mode is SyncApply or SyncReport.
	Mode string `json:"mode" yaml:"mode" mapstructure:"mode"`
	// Schedulers to configure; nil: those the model's tenants use.
	Schedulers []string `json:"schedulers" yaml:"schedulers" mapstructure:"schedulers"`
	// VolcanoConfigNamespace and VolcanoConfigName name the ConfigMap
	// Volcano's scheduler reads volcano-scheduler.conf from.
	VolcanoConfigNamespace string `json:"volcanoConfigNamespace" yaml:"volcanoConfigNamespace" mapstructure:"volcanoConfigNamespace"`
	VolcanoConfigName      string `json:"volcanoConfigName" yaml:"volcanoConfigName" mapstructure:"volcanoConfigName"`
}

// DecisionLog configures the decision log: one JSON line per decision on
// stderr, with "logger":"decision".
type DecisionLog struct {
	// Enabled writes decision lines.
	Enabled bool `json:"enabled" yaml:"enabled" mapstructure:"enabled"`
	// SampleRate is the fraction (0-1) of clean allowed decisions written;
	// denials, errors, warned or dry-run violations and shadow differences
	// are always written.
	SampleRate float64 `json:"sampleRate" yaml:"sampleRate" mapstructure:"sampleRate"`
	// IncludeObject adds the submitted object, redacted.
	IncludeObject bool `json:"includeObject" yaml:"includeObject" mapstructure:"includeObject"`
}

// Levels of logLevel.
const (
	LogDebug = "debug"
	LogInfo  = "info"
	LogError = "error"
)

// Modes of certs.mode.
const (
	// CertsFiles serves tls.crt and tls.key of webhook.certDir as they are
	// (from cert-manager, or any other issuer).
	CertsFiles = "files"
	// CertsSelfSigned makes Mandate keep its own CA in a Secret, issue its
	// serving certificate into webhook.certDir and set the webhook
	// configurations' caBundle, rotating both (package certs).
	CertsSelfSigned = "selfSigned"
)

// Certs configures the serving certificate.
type Certs struct {
	// Mode is CertsFiles or CertsSelfSigned.
	Mode string `json:"mode" yaml:"mode" mapstructure:"mode"`
	// SecretName is the CA Secret in Namespace (selfSigned).
	SecretName string `json:"secretName" yaml:"secretName" mapstructure:"secretName"`
	// ServiceName is Mandate's Service: the serving certificate is for
	// ServiceName.Namespace.svc[.cluster.local] (selfSigned).
	ServiceName string `json:"serviceName" yaml:"serviceName" mapstructure:"serviceName"`
	// WebhookConfiguration names the mutating and the validating webhook
	// configuration whose caBundle is kept (selfSigned).
	WebhookConfiguration string `json:"webhookConfiguration" yaml:"webhookConfiguration" mapstructure:"webhookConfiguration"`
	// Lifetimes and renewal margins (selfSigned).
	CADuration         time.Duration `json:"caDuration" yaml:"caDuration" mapstructure:"caDuration"`
	CARenewBefore      time.Duration `json:"caRenewBefore" yaml:"caRenewBefore" mapstructure:"caRenewBefore"`
	ServingDuration    time.Duration `json:"servingDuration" yaml:"servingDuration" mapstructure:"servingDuration"`
	ServingRenewBefore time.Duration `json:"servingRenewBefore" yaml:"servingRenewBefore" mapstructure:"servingRenewBefore"`
	// PropagationDelay is how long a new CA is in the caBundle before it
	// signs serving certificates.
	PropagationDelay time.Duration `json:"propagationDelay" yaml:"propagationDelay" mapstructure:"propagationDelay"`
	// ExtraHosts are more DNS names or IP addresses for the serving
	// certificate, for webhooks reached by URL rather than by Service.
	ExtraHosts []string `json:"extraHosts" yaml:"extraHosts" mapstructure:"extraHosts"`
}

// Bundle configures the policy bundle source.
type Bundle struct {
	// Source is a bundle file or directory, an http(s) URL or s3://bucket/key.
	Source string `json:"source" yaml:"source" mapstructure:"source"`
	// VerificationKey is a PEM public key; when set, only bundles signed
	// with it are activated.
	VerificationKey string `json:"verificationKey" yaml:"verificationKey" mapstructure:"verificationKey"`
	// VerificationKeyID is the id of VerificationKey; a signature naming
	// another is rejected. "default" when empty.
	VerificationKeyID string `json:"verificationKeyId" yaml:"verificationKeyId" mapstructure:"verificationKeyId"`
	// Scope, when set, must be the signatures' scope.
	Scope string `json:"scope" yaml:"scope" mapstructure:"scope"`
	// PersistDir keeps the last good bundle, served after a restart when
	// the source is unreachable.
	PersistDir string `json:"persistDir" yaml:"persistDir" mapstructure:"persistDir"`
	// Interval between polls of the source.
	Interval time.Duration `json:"interval" yaml:"interval" mapstructure:"interval"`
	// RequireSignature refuses every unsigned bundle; it needs
	// VerificationKey.
	RequireSignature bool `json:"requireSignature" yaml:"requireSignature" mapstructure:"requireSignature"`
	// Shadow is a candidate bundle decided beside the active policy on live
	// traffic and never enforced.
	Shadow ShadowBundle `json:"shadow" yaml:"shadow" mapstructure:"shadow"`
	// BearerTokenFile holds a token sent as Authorization: Bearer to an
	// http(s) source (and shadow), re-read on every poll.
	BearerTokenFile string `json:"bearerTokenFile" yaml:"bearerTokenFile" mapstructure:"bearerTokenFile"`
	// CAFile holds the PEM certificates that sign an https source's (and
	// shadow's) server certificate; the system roots when empty.
	CAFile string `json:"caFile" yaml:"caFile" mapstructure:"caFile"`
	// ServiceConfig is a YAML or JSON file holding one OPA service
	// (credentials, tls, headers; url, the endpoint of an s3:// source),
	// the client of a URL source (and shadow).
	ServiceConfig string `json:"serviceConfig" yaml:"serviceConfig" mapstructure:"serviceConfig"`
}

// ShadowBundle configures the shadow (candidate) bundle; it is verified
// like the active one (VerificationKey, RequireSignature) and polled as
// often (Interval).
type ShadowBundle struct {
	// Source is a bundle file or directory, an http(s) URL or s3://bucket/key.
	Source string `json:"source" yaml:"source" mapstructure:"source"`
}

// Webhook configures the admission webhook server.
type Webhook struct {
	// Host the server listens on; all interfaces when empty.
	Host string `json:"host" yaml:"host" mapstructure:"host"`
	// Port the server listens on.
	Port int `json:"port" yaml:"port" mapstructure:"port"`
	// CertDir holds tls.crt and tls.key, reloaded when they change;
	// controller-runtime's temporary directory when empty.
	CertDir string `json:"certDir" yaml:"certDir" mapstructure:"certDir"`
	// ClientCAFile, when set, is a PEM file of the CAs that sign the
	// client certificate every caller of the webhooks must present: only
	// the API server, set up to present one (docs/security.md), may ask
	// for decisions and so spend quota. Read at start.
	ClientCAFile string `json:"clientCAFile" yaml:"clientCAFile" mapstructure:"clientCAFile"`
	// ClientCN, with ClientCAFile, is the common name the caller's
	// certificate must carry; "" accepts any certificate the CAs signed.
	ClientCN string `json:"clientCN" yaml:"clientCN" mapstructure:"clientCN"`
	// MaxInFlightBytes bounds the bytes of admission requests decided at
	// once; beyond it a request waits briefly, then is refused with 429.
	MaxInFlightBytes int `json:"maxInFlightBytes" yaml:"maxInFlightBytes" mapstructure:"maxInFlightBytes"`
}

// Evaluation bounds policy evaluation.
type Evaluation struct {
	// Timeout bounds one evaluation.
	Timeout time.Duration `json:"timeout" yaml:"timeout" mapstructure:"timeout"`
	// EnforcementOverride, when set, is the action of every violation the
	// model would deny: "dryrun" (admit, only record) or "warn" (admit with
	// a warning), whatever the model's enforcement says; "" keeps it. A
	// first install runs in dryrun so nothing is denied before the
	// decisions have been checked.
	EnforcementOverride string `json:"enforcementOverride" yaml:"enforcementOverride" mapstructure:"enforcementOverride"`
}

// Quota configures the quota ledger's reservations.
type Quota struct {
	// ConfirmationWindow is the backstop of an admission's reservation:
	// it leaves when its object is seen stored (the workload's hold then
	// counts it) or a GET finds it never was; past the window it is
	// released whatever happened.
	ConfirmationWindow time.Duration `json:"confirmationWindow" yaml:"confirmationWindow" mapstructure:"confirmationWindow"`
	// Shared keeps the reservations in TenantLedger objects that every
	// replica commits to (compare-and-swap) and reads, instead of in each
	// replica's memory; it needs the TenantLedger CRD.
	Shared bool `json:"shared" yaml:"shared" mapstructure:"shared"`
	// Grants configures the escrowed grants of the shared ledger.
	Grants Grants `json:"grants" yaml:"grants" mapstructure:"grants"`
}

// Grants configures the escrowed grants of the shared ledger
// (quota.shared): each replica admits from its own share of a tenant's
// headroom, recorded in the TenantLedger, without a write per admission.
type Grants struct {
	// Enabled admits from escrowed grants; off, every reserving admission
	// commits to the TenantLedger. Off by default until the validating
	// webhook, answered by another replica than /mutate, agrees with a
	// decision spent from a grant (docs/architecture.md).
	Enabled bool `json:"enabled" yaml:"enabled" mapstructure:"enabled"`
	// Lease is how long a grant is spendable after its last write.
	Lease time.Duration `json:"lease" yaml:"lease" mapstructure:"lease"`
	// StoreBound is how long past its lease a grant still counts for the
	// other replicas: the API server's request timeout.
	StoreBound time.Duration `json:"storeBound" yaml:"storeBound" mapstructure:"storeBound"`
	// Holder names this replica in the grants ("": $POD_NAME, else the
	// host name and a random suffix).
	Holder string `json:"holder" yaml:"holder" mapstructure:"holder"`
}

// Defaults of quota.grants (cluster.GrantOptions).
const (
	DefaultGrantLease      = 15 * time.Second
	DefaultGrantStoreBound = time.Minute
)

// KubeClient is serve's client of the API server (its informers, reads
// of namespaces and gang owners the caches have not seen, the gang
// controller's PodGroups), whether it comes from a kubeconfig or the
// in-cluster configuration. The shared quota ledger has a client of its own.
type KubeClient struct {
	// QPS and Burst are client-go's rate limit: requests per second, and
	// how many may go at once above it.
	QPS   int `json:"qps" yaml:"qps" mapstructure:"qps"`
	Burst int `json:"burst" yaml:"burst" mapstructure:"burst"`
}

// DefaultGCPercent is serve's GOGC while a memory limit bounds the heap:
// an admission allocates ~100 KB, mostly the policy evaluation's, so at
// Go's default of 100 the collector takes about a fifth of a replica's CPU
// under load; at 400 it takes a quarter of that, for a heap that may grow
// to five times what is live, which GOMEMLIMIT (the chart sets it) caps.
// MinGCPercent and MaxGCPercent bound gcPercent.
const (
	DefaultGCPercent = 400
	MinGCPercent     = 100
	MaxGCPercent     = 1000
)

// DefaultKubeClientQPS and DefaultKubeClientBurst let a 1,000-pod gang's
// admission and PodGroup through without waiting on client-go's own
// default of 5 requests per second; the API server's priority and
// fairness still apply.
const (
	DefaultKubeClientQPS   = 200
	DefaultKubeClientBurst = 400
	// MaxKubeClientQPS bounds kubeClient.qps and kubeClient.burst.
	MaxKubeClientQPS = 10000
)

// DefaultConfirmationWindow is quota.confirmationWindow: long enough for
// the informers to see a stored object after an API server outage, short
// enough that a reservation no replica can check (an object admitted
// without a name that was never stored) delays its tenant by a minute at
// most.
const DefaultConfirmationWindow = time.Minute

// Bounds of quota.confirmationWindow.
const (
	MinConfirmationWindow = time.Second
	MaxConfirmationWindow = time.Hour
)

// DefaultMaxInFlightBytes is webhook.maxInFlightBytes: a decision holds
// its object several times over, so 8 MiB of requests in flight stay well
// under the chart's 1 GiB memory limit even when every one is the largest
// object the API server accepts, while ordinary pods (a few KiB) pass
// hundreds at a time.
const DefaultMaxInFlightBytes = 8 << 20

// MaxEvaluationTimeout is the longest evaluation.timeout allowed: the API
// server waits at most 30s for an admission webhook.
const MaxEvaluationTimeout = 30 * time.Second
