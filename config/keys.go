package config

import (
	"strings"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// Key describes one configuration key.
type Key struct {
	// Name is the key's dotted path in the file, e.g. "webhook.port".
	Name string
	// Env are the environment variables that set it, first wins.
	Env []string
	// Kind is the value's type: string, integer, list of strings, duration.
	Kind string
	// Type says what values are allowed, for error messages and docs.
	Type string
	// Default is the value when nothing sets the key, of the Go type of
	// its field in Serve; Default() is built from these.
	Default any
	// Flag is the key's flag of `mandate serve` (without dashes), "" for
	// a key set only by file or environment; Usage is its help text.
	Flag  string
	Usage string
}

// Keys lists every configuration key, once: its name, environment
// variables, flag, help, allowed values and default. Viper's defaults and
// environment bindings (Bind), the flags (AddFlags), Default() and the
// unknown-key check all derive from it; TestKeysMatchServe holds it and
// the fields of Serve to one entry each. docs/configuration.md follows it.
var Keys = []Key{
	{Name: "kubeconfig", Kind: "a string", Env: []string{"MANDATE_KUBECONFIG"}, Type: "a file path",
		Default: "", Flag: "kubeconfig",
		Usage: "kubeconfig file (default: in-cluster, or $KUBECONFIG, or ~/.kube/config)"},
	{Name: "webhook.host", Kind: "a string", Env: []string{"MANDATE_WEBHOOK_HOST"}, Type: "a host name or IP address",
		Default: "", Flag: "host",
		Usage: "address the webhook server listens on (default: all)"},
	{Name: "webhook.port", Kind: "an integer", Env: []string{"MANDATE_WEBHOOK_PORT"}, Type: "a port, 1-65535",
		Default: DefaultPort, Flag: "port",
		Usage: "port the webhook server listens on"},
	{Name: "webhook.certDir", Kind: "a string", Env: []string{"MANDATE_WEBHOOK_CERT_DIR"}, Type: "a directory holding tls.crt and tls.key",
		Default: "", Flag: "cert-dir",
		Usage: "directory holding tls.crt and tls.key, reloaded when they change (default: controller-runtime's temp dir)"},
	{Name: "webhook.maxInFlightBytes", Kind: "an integer", Env: []string{"MANDATE_WEBHOOK_MAX_IN_FLIGHT_BYTES"}, Type: "bytes, at least 1 MiB (1048576)",
		Default: DefaultMaxInFlightBytes, Flag: "max-in-flight-bytes",
		Usage: "bytes of admission requests decided at once; beyond it a request waits up to 1s, then is refused with 429"},
	{Name: "webhook.clientCAFile", Kind: "a string", Env: []string{"MANDATE_WEBHOOK_CLIENT_CA_FILE"}, Type: "a PEM file of CA certificates",
		Default: "", Flag: "client-ca-file",
		Usage: "accept admission requests only over TLS with a client certificate these CAs signed (the API server's; see docs/security.md); \"\" accepts any caller"},
	{Name: "webhook.clientCN", Kind: "a string", Env: []string{"MANDATE_WEBHOOK_CLIENT_CN"}, Type: "a certificate common name",
		Default: "", Flag: "client-cn",
		Usage: "with client-ca-file, the common name the caller's certificate must carry (the chart: kube-apiserver); \"\" accepts any the CAs signed"},
	{Name: "healthAddr", Kind: "a string", Env: []string{"MANDATE_HEALTH_ADDR"}, Type: `an address host:port, or "0" to disable`,
		Default: DefaultHealthAddr, Flag: "health-addr",
		Usage: "address of /healthz and /readyz (\"0\" disables)"},
	{Name: "metricsAddr", Kind: "a string", Env: []string{"MANDATE_METRICS_ADDR"}, Type: `an address host:port, or "0" to disable`,
		Default: DefaultMetricsAddr, Flag: "metrics-addr",
		Usage: "address of /metrics (\"0\" disables)"},
	{Name: "metricsAuth", Kind: "a boolean", Env: []string{"MANDATE_METRICS_AUTH"}, Type: "true or false",
		Default: false, Flag: "metrics-auth",
		Usage: "serve /metrics and /bundle/status over HTTPS to clients the API server authenticates and authorises (get on the path)"},
	{Name: "pprofAddr", Kind: "a string", Env: []string{"MANDATE_PPROF_ADDR"}, Type: `an address host:port, or "0" to disable`,
		Default: "0", Flag: "pprof-addr",
		Usage: "address of Go's /debug/pprof profiles, for profiling a replica under load (\"0\", the default, disables; bind it to localhost)"},
	{Name: "gcPercent", Kind: "an integer", Env: []string{"MANDATE_GC_PERCENT"}, Type: "a percentage, 100-1000",
		Default: DefaultGCPercent, Flag: "gc-percent",
		Usage: "Go's garbage-collection target (GOGC) while a memory limit (GOMEMLIMIT) bounds the heap; without one, or with GOGC set, Go's own is kept"},
	{Name: "logLevel", Kind: "a string", Env: []string{"MANDATE_LOG_LEVEL"}, Type: `"debug", "info" or "error"`,
		Default: LogInfo, Flag: "log-level",
		Usage: "least severity logged: debug, info or error (decision lines are written whatever it is)"},
	{Name: "policies", Kind: "a string", Env: []string{"MANDATE_POLICIES"}, Type: "a policy directory",
		Default: "", Flag: "policies",
		Usage: "policy directory (default: the embedded default authority model)"},
	{Name: "adminGroups", Kind: "a list of strings", Env: []string{"MANDATE_ADMIN_GROUPS"}, Type: "group names, comma-separated in env and flags",
		Default: DefaultAdminGroups, Flag: "admin-groups",
		Usage: "groups that may set, change or remove a namespace's mandate.dev/tenant label"},
	{Name: "schedulerIdentities", Kind: "a list of strings", Env: []string{"MANDATE_SCHEDULER_IDENTITIES"}, Type: "user names, comma-separated in env and flags",
		Default: DefaultSchedulerIdentities, Flag: "scheduler-identities",
		Usage: "schedulers' user names whose pod deletions and evictions of work Mandate admitted non-preemptible are refused (the eviction guard; empty turns it off)"},
	{Name: "namespace", Kind: "a string", Env: []string{"MANDATE_NAMESPACE", "POD_NAMESPACE"}, Type: "a namespace name, an RFC 1123 label",
		Default: "", Flag: "namespace",
		Usage: "Mandate's own namespace, never governed (default: $POD_NAMESPACE)"},
	{Name: "evaluation.timeout", Kind: "a duration", Env: []string{"MANDATE_EVALUATION_TIMEOUT"}, Type: "1ms-30s, such as 500ms or 2s",
		Default: DefaultEvaluationTimeout, Flag: "evaluation-timeout",
		Usage: "deadline of one policy evaluation"},
	{Name: "evaluation.enforcementOverride", Kind: "a string", Env: []string{"MANDATE_EVALUATION_ENFORCEMENT_OVERRIDE"}, Type: `"" (the model's enforcement), "dryrun" or "warn"`,
		Default: "", Flag: "enforcement-override",
		Usage: "admit what the model would deny, recorded as \"dryrun\" or warned as \"warn\" (a first install's safe mode); \"\" enforces the model's own actions"},
	{Name: "quota.confirmationWindow", Kind: "a duration", Env: []string{"MANDATE_QUOTA_CONFIRMATION_WINDOW"}, Type: "1s-1h, such as 30s or 2m",
		Default: DefaultConfirmationWindow, Flag: "confirmation-window",
		Usage: "the backstop of an admission's reservation: it leaves once its object is seen stored or found never stored"},
	{Name: "kubeClient.qps", Kind: "an integer", Env: []string{"MANDATE_KUBE_CLIENT_QPS"}, Type: "requests per second, 1-10000",
		Default: DefaultKubeClientQPS, Flag: "kube-api-qps",
		Usage: "requests per second of serve's client of the API server (client-go's default is 5)"},
	{Name: "kubeClient.burst", Kind: "an integer", Env: []string{"MANDATE_KUBE_CLIENT_BURST"}, Type: "requests, at least kubeClient.qps, at most 10000",
		Default: DefaultKubeClientBurst, Flag: "kube-api-burst",
		Usage: "requests serve's client may send at once above kube-api-qps"},
	{Name: "quota.shared", Kind: "a boolean", Env: []string{"MANDATE_QUOTA_SHARED"}, Type: "true or false",
		Default: false, Flag: "shared-quota",
		Usage: "keep quota reservations in TenantLedger objects shared by every replica (needs the TenantLedger CRD; the chart sets it)"},
	{Name: "quota.grants.enabled", Kind: "a boolean", Env: []string{"MANDATE_QUOTA_GRANTS_ENABLED"}, Type: "true or false",
		Default: false, Flag: "quota-grants",
		Usage: "with quota.shared, admit from this replica's escrowed grant of a tenant's headroom without a TenantLedger write (experimental: off by default)"},
	{Name: "quota.grants.lease", Kind: "a duration", Env: []string{"MANDATE_QUOTA_GRANTS_LEASE"}, Type: "3s-10m, such as 15s",
		Default: DefaultGrantLease, Flag: "quota-grant-lease",
		Usage: "how long a replica's grant is spendable after its last write (renewed every third of it)"},
	{Name: "quota.grants.storeBound", Kind: "a duration", Env: []string{"MANDATE_QUOTA_GRANTS_STORE_BOUND"}, Type: "1s-10m, at least the API server's request timeout (60s by default)",
		Default: DefaultGrantStoreBound, Flag: "quota-grant-store-bound",
		Usage: "how long past its lease a dead replica's grant still counts: past it nothing the replica answered can still be stored"},
	{Name: "quota.grants.holder", Kind: "a string", Env: []string{"MANDATE_QUOTA_GRANTS_HOLDER", "POD_NAME"}, Type: "a name without spaces",
		Default: "", Flag: "quota-grant-holder",
		Usage: "this replica's name in the TenantLedgers' grants (default: $POD_NAME, else the host name and a random suffix)"},
	{Name: "bundle.source", Kind: "a string", Env: []string{"MANDATE_BUNDLE_SOURCE"}, Type: "a bundle file or directory, an http(s) URL, s3://bucket/key or oci://registry/repository:tag",
		Default: "", Flag: "bundle",
		Usage: "policy bundle file, directory, http(s) URL, s3://bucket/key or oci://registry/repository:tag, polled and hot-swapped (instead of --policies); serve exits at once when it cannot be read and nothing is persisted"},
	{Name: "bundle.verificationKey", Kind: "a string", Env: []string{"MANDATE_BUNDLE_VERIFICATION_KEY"}, Type: "a PEM public key file",
		Default: "", Flag: "bundle-verification-key",
		Usage: "PEM public key; when set, only bundles signed with it are activated"},
	{Name: "bundle.verificationKeyId", Kind: "a string", Env: []string{"MANDATE_BUNDLE_VERIFICATION_KEY_ID"}, Type: "the key id the bundles are signed with (mandate bundle sign --key-id)",
		Default: "", Flag: "bundle-verification-key-id",
		Usage: "id of --bundle-verification-key; a signature naming another key id is rejected (default: \"default\")"},
	{Name: "bundle.scope", Kind: "a string", Env: []string{"MANDATE_BUNDLE_SCOPE"}, Type: "the scope the bundles are signed with (mandate bundle sign --scope)",
		Default: "", Flag: "bundle-scope",
		Usage: "scope the bundle signatures must carry (mandate bundle sign --scope)"},
	{Name: "bundle.persistDir", Kind: "a string", Env: []string{"MANDATE_BUNDLE_PERSIST_DIR"}, Type: "a writable directory",
		Default: "", Flag: "bundle-persist-dir",
		Usage: "directory keeping the last good bundle for restarts without the source"},
	{Name: "bundle.interval", Kind: "a duration", Env: []string{"MANDATE_BUNDLE_INTERVAL"}, Type: "1s-1h, such as 30s",
		Default: DefaultBundleInterval, Flag: "bundle-interval",
		Usage: "how often the bundle source is polled"},
	{Name: "bundle.requireSignature", Kind: "a boolean", Env: []string{"MANDATE_BUNDLE_REQUIRE_SIGNATURE"}, Type: "true or false; true needs bundle.verificationKey",
		Default: false, Flag: "bundle-require-signature",
		Usage: "refuse every unsigned bundle (needs --bundle-verification-key)"},
	{Name: "bundle.shadow.source", Kind: "a string", Env: []string{"MANDATE_BUNDLE_SHADOW_SOURCE"}, Type: "a bundle file or directory, an http(s) URL, s3://bucket/key or oci://registry/repository:tag",
		Default: "", Flag: "shadow-bundle",
		Usage: "candidate bundle file, directory, http(s) URL, s3://bucket/key or oci://registry/repository:tag decided beside the active policy and never enforced; differences are counted and logged"},
	{Name: "bundle.bearerTokenFile", Kind: "a string", Env: []string{"MANDATE_BUNDLE_BEARER_TOKEN_FILE"}, Type: "a readable file holding a bearer token, for an http(s) source",
		Default: "", Flag: "bundle-bearer-token-file",
		Usage: "file holding a bearer token sent to an http(s) bundle source and shadow, re-read on every poll"},
	{Name: "bundle.caFile", Kind: "a string", Env: []string{"MANDATE_BUNDLE_CA_FILE"}, Type: "a readable PEM CA certificate file, for an https source",
		Default: "", Flag: "bundle-ca-file",
		Usage: "PEM CA certificates that verify an https bundle source's and shadow's server (default: the system roots)"},
	{Name: "bundle.serviceConfig", Kind: "a string", Env: []string{"MANDATE_BUNDLE_SERVICE_CONFIG"}, Type: "a readable YAML or JSON file: one OPA service (url, credentials, tls, headers), for a URL source",
		Default: "", Flag: "bundle-service-config",
		Usage: "OPA service configuration (credentials: bearer, oauth2, client_tls, s3_signing, gcp_metadata, azure_managed_identity; tls; headers) of a URL bundle source and shadow; its url is an s3:// or oci:// source's endpoint"},
	{Name: "decisionLog.enabled", Kind: "a boolean", Env: []string{"MANDATE_DECISION_LOG_ENABLED"}, Type: "true or false",
		Default: true, Flag: "decision-log",
		Usage: "write one JSON decision line per decision to stderr (\"logger\":\"decision\")"},
	{Name: "decisionLog.sampleRate", Kind: "a number", Env: []string{"MANDATE_DECISION_LOG_SAMPLE_RATE"}, Type: "0-1, such as 0.1",
		Default: 1.0, Flag: "decision-log-sample-rate",
		Usage: "fraction (0-1) of clean allowed decisions logged; denials, errors, warned or dry-run violations and shadow differences always are"},
	{Name: "decisionLog.includeObject", Kind: "a boolean", Env: []string{"MANDATE_DECISION_LOG_INCLUDE_OBJECT"}, Type: "true or false",
		Default: false, Flag: "decision-log-include-object",
		Usage: "add the submitted object to decision lines, redacted by allow-list (no env values, args, commands, probes, volume sources or annotation values)"},
	{Name: "sync.enabled", Kind: "a boolean", Env: []string{"MANDATE_SYNC_ENABLED"}, Type: "true or false",
		Default: false, Flag: "sync",
		Usage: "configure the schedulers from the active model (priority classes, queues, topologies), on the leader, every sync.interval and on each bundle activation"},
	{Name: "sync.interval", Kind: "a duration", Env: []string{"MANDATE_SYNC_INTERVAL"}, Type: "10s-24h, such as 5m",
		Default: DefaultSyncInterval, Flag: "sync-interval",
		Usage: "how often the schedulers' configuration is reconciled with the model"},
	{Name: "sync.mode", Kind: "a string", Env: []string{"MANDATE_SYNC_MODE"}, Type: `"apply" or "report"`,
		Default: SyncApply, Flag: "sync-mode",
		Usage: "\"apply\" corrects drift; \"report\" only counts it (mandate_sync_drift_objects) and logs each difference"},
	{Name: "sync.schedulers", Kind: "a list of strings", Env: []string{"MANDATE_SYNC_SCHEDULERS"}, Type: strings.Join(facts.SyncNames(), ", ") + ", comma-separated in env and flags",
		Default: []string(nil), Flag: "sync-schedulers",
		Usage: "schedulers to configure (default: those the model's tenants use)"},
	{Name: "sync.volcanoConfigNamespace", Kind: "a string", Env: []string{"MANDATE_SYNC_VOLCANO_CONFIG_NAMESPACE"}, Type: "a namespace",
		Default: "volcano-system", Flag: "sync-volcano-config-namespace",
		Usage: "namespace of the ConfigMap Volcano's scheduler reads volcano-scheduler.conf from (the Volcano chart's)"},
	{Name: "sync.volcanoConfigName", Kind: "a string", Env: []string{"MANDATE_SYNC_VOLCANO_CONFIG_NAME"}, Type: "a ConfigMap name",
		Default: "volcano-scheduler-configmap", Flag: "sync-volcano-config-name",
		Usage: "name of the ConfigMap Volcano's scheduler reads volcano-scheduler.conf from (the Volcano chart's)"},
	{Name: "openReports.enabled", Kind: "a boolean", Env: []string{"MANDATE_OPEN_REPORTS_ENABLED"}, Type: "true or false",
		Default: true, Flag: "open-reports",
		Usage: "background audit, on the leader: write every governed workload's violations of the active revision (and the shadow's) as OpenReports Reports, one per namespace, every openReports.interval and on each bundle activation (when the OpenReports CRDs are installed)"},
	{Name: "openReports.interval", Kind: "a duration", Env: []string{"MANDATE_OPEN_REPORTS_INTERVAL"}, Type: "1s-24h, such as 5m",
		Default: DefaultOpenReportsInterval, Flag: "open-reports-interval",
		Usage: "how often the background audit runs"},
	{Name: "openReports.maxResults", Kind: "an integer", Env: []string{"MANDATE_OPEN_REPORTS_MAX_RESULTS"}, Type: "1-2000",
		Default: DefaultOpenReportsMaxResults, Flag: "open-reports-max-results",
		Usage: "results kept in one namespace's Report, the most severe first; the summary counts every one and the annotation mandate.dev/omitted-results the rest"},
	{Name: "certs.mode", Kind: "a string", Env: []string{"MANDATE_CERTS_MODE"}, Type: `"files" or "selfSigned"`,
		Default: CertsFiles, Flag: "certs-mode",
		Usage: "serving certificate: \"files\" (tls.crt and tls.key of --cert-dir, e.g. from cert-manager) or \"selfSigned\" (Mandate's own rotating CA; see docs/certificates.md)"},
	{Name: "certs.secretName", Kind: "a string", Env: []string{"MANDATE_CERTS_SECRET_NAME"}, Type: "a Secret name, an RFC 1123 subdomain",
		Default: "mandate-webhook-ca", Flag: "certs-secret-name",
		Usage: "selfSigned: the CA Secret in Mandate's namespace"},
	{Name: "certs.serviceName", Kind: "a string", Env: []string{"MANDATE_CERTS_SERVICE_NAME"}, Type: "a Service name, an RFC 1123 label",
		Default: "mandate", Flag: "certs-service-name",
		Usage: "selfSigned: Mandate's Service, whose DNS names the serving certificate is for"},
	{Name: "certs.webhookConfiguration", Kind: "a string", Env: []string{"MANDATE_CERTS_WEBHOOK_CONFIGURATION"}, Type: "the webhook configurations' name, an RFC 1123 subdomain",
		Default: WebhookConfigurationName, Flag: "certs-webhook-configuration",
		Usage: "selfSigned: name of the mutating and validating webhook configurations whose caBundle is kept"},
	{Name: "certs.caDuration", Kind: "a duration", Env: []string{"MANDATE_CERTS_CA_DURATION"}, Type: "a duration such as 8760h",
		Default: DefaultCADuration},
	{Name: "certs.caRenewBefore", Kind: "a duration", Env: []string{"MANDATE_CERTS_CA_RENEW_BEFORE"}, Type: "a duration such as 2920h, less than certs.caDuration",
		Default: DefaultCARenewBefore},
	{Name: "certs.servingDuration", Kind: "a duration", Env: []string{"MANDATE_CERTS_SERVING_DURATION"}, Type: "a duration of at least 1m, such as 720h",
		Default: DefaultServingDuration},
	{Name: "certs.servingRenewBefore", Kind: "a duration", Env: []string{"MANDATE_CERTS_SERVING_RENEW_BEFORE"}, Type: "a duration such as 240h, less than certs.servingDuration",
		Default: DefaultServingRenewBefore},
	{Name: "certs.propagationDelay", Kind: "a duration", Env: []string{"MANDATE_CERTS_PROPAGATION_DELAY"}, Type: "0-1h, such as 1m",
		Default: DefaultPropagationDelay},
	{Name: "certs.extraHosts", Kind: "a list of strings", Env: []string{"MANDATE_CERTS_EXTRA_HOSTS"}, Type: "DNS names or IP addresses, comma-separated in env",
		Default: []string(nil)},
}

// lookup finds a key by name, ignoring case (viper lowercases keys).
func lookup(name string) (Key, bool) {
	for _, k := range Keys {
		if strings.EqualFold(k.Name, name) {
			return k, true
		}
	}
	return Key{}, false
}

// children lists the keys under prefix, e.g. "webhook".
func children(prefix string) []string {
	var names []string
	for _, k := range Keys {
		if len(k.Name) > len(prefix) && strings.EqualFold(k.Name[:len(prefix)+1], prefix+".") {
			names = append(names, k.Name)
		}
	}
	return names
}

func names() []string {
	n := make([]string, len(Keys))
	for i, k := range Keys {
		n[i] = k.Name
	}
	return n
}
