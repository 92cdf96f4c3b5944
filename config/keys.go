package config

import "strings"

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
}

// Keys lists every configuration key; the documentation in
// docs/configuration.md follows it.
var Keys = []Key{
	{Name: "kubeconfig", Kind: "a string", Env: []string{"MANDATE_KUBECONFIG"}, Type: "a file path"},
	{Name: "webhook.host", Kind: "a string", Env: []string{"MANDATE_WEBHOOK_HOST"}, Type: "a host name or IP address"},
	{Name: "webhook.port", Kind: "an integer", Env: []string{"MANDATE_WEBHOOK_PORT"}, Type: "a port, 1-65535"},
	{Name: "webhook.certDir", Kind: "a string", Env: []string{"MANDATE_WEBHOOK_CERT_DIR"}, Type: "a directory holding tls.crt and tls.key"},
	{Name: "healthAddr", Kind: "a string", Env: []string{"MANDATE_HEALTH_ADDR"}, Type: `an address host:port, or "0" to disable`},
	{Name: "metricsAddr", Kind: "a string", Env: []string{"MANDATE_METRICS_ADDR"}, Type: `an address host:port, or "0" to disable`},
	{Name: "policies", Kind: "a string", Env: []string{"MANDATE_POLICIES"}, Type: "a policy directory"},
	{Name: "adminGroups", Kind: "a list of strings", Env: []string{"MANDATE_ADMIN_GROUPS"}, Type: "group names, comma-separated in env and flags"},
	{Name: "namespace", Kind: "a string", Env: []string{"MANDATE_NAMESPACE", "POD_NAMESPACE"}, Type: "a namespace name, an RFC 1123 label"},
	{Name: "evaluation.timeout", Kind: "a duration", Env: []string{"MANDATE_EVALUATION_TIMEOUT"}, Type: "1ms-30s, such as 500ms or 2s"},
	{Name: "bundle.source", Kind: "a string", Env: []string{"MANDATE_BUNDLE_SOURCE"}, Type: "a bundle file or directory, or an http(s) URL"},
	{Name: "bundle.verificationKey", Kind: "a string", Env: []string{"MANDATE_BUNDLE_VERIFICATION_KEY"}, Type: "a PEM public key file"},
	{Name: "bundle.persistDir", Kind: "a string", Env: []string{"MANDATE_BUNDLE_PERSIST_DIR"}, Type: "a writable directory"},
	{Name: "bundle.interval", Kind: "a duration", Env: []string{"MANDATE_BUNDLE_INTERVAL"}, Type: "1s-1h, such as 30s"},
	{Name: "bundle.requireSignature", Kind: "a boolean", Env: []string{"MANDATE_BUNDLE_REQUIRE_SIGNATURE"}, Type: "true or false; true needs bundle.verificationKey"},
	{Name: "bundle.shadow.source", Kind: "a string", Env: []string{"MANDATE_BUNDLE_SHADOW_SOURCE"}, Type: "a bundle file or directory, or an http(s) URL"},
	{Name: "bundle.bearerTokenFile", Kind: "a string", Env: []string{"MANDATE_BUNDLE_BEARER_TOKEN_FILE"}, Type: "a readable file holding a bearer token, for an http(s) source"},
	{Name: "bundle.caFile", Kind: "a string", Env: []string{"MANDATE_BUNDLE_CA_FILE"}, Type: "a readable PEM CA certificate file, for an https source"},
	{Name: "decisionLog.enabled", Kind: "a boolean", Env: []string{"MANDATE_DECISION_LOG_ENABLED"}, Type: "true or false"},
	{Name: "decisionLog.sampleRate", Kind: "a number", Env: []string{"MANDATE_DECISION_LOG_SAMPLE_RATE"}, Type: "0-1, such as 0.1"},
	{Name: "decisionLog.includeObject", Kind: "a boolean", Env: []string{"MANDATE_DECISION_LOG_INCLUDE_OBJECT"}, Type: "true or false"},
	{Name: "certs.mode", Kind: "a string", Env: []string{"MANDATE_CERTS_MODE"}, Type: `"files" or "selfSigned"`},
	{Name: "certs.secretName", Kind: "a string", Env: []string{"MANDATE_CERTS_SECRET_NAME"}, Type: "a Secret name, an RFC 1123 subdomain"},
	{Name: "certs.serviceName", Kind: "a string", Env: []string{"MANDATE_CERTS_SERVICE_NAME"}, Type: "a Service name, an RFC 1123 label"},
	{Name: "certs.webhookConfiguration", Kind: "a string", Env: []string{"MANDATE_CERTS_WEBHOOK_CONFIGURATION"}, Type: "the webhook configurations' name, an RFC 1123 subdomain"},
	{Name: "certs.caDuration", Kind: "a duration", Env: []string{"MANDATE_CERTS_CA_DURATION"}, Type: "a duration such as 8760h"},
	{Name: "certs.caRenewBefore", Kind: "a duration", Env: []string{"MANDATE_CERTS_CA_RENEW_BEFORE"}, Type: "a duration such as 2920h, less than certs.caDuration"},
	{Name: "certs.servingDuration", Kind: "a duration", Env: []string{"MANDATE_CERTS_SERVING_DURATION"}, Type: "a duration of at least 1m, such as 720h"},
	{Name: "certs.servingRenewBefore", Kind: "a duration", Env: []string{"MANDATE_CERTS_SERVING_RENEW_BEFORE"}, Type: "a duration such as 240h, less than certs.servingDuration"},
	{Name: "certs.propagationDelay", Kind: "a duration", Env: []string{"MANDATE_CERTS_PROPAGATION_DELAY"}, Type: "0-1h, such as 1m"},
	{Name: "certs.extraHosts", Kind: "a list of strings", Env: []string{"MANDATE_CERTS_EXTRA_HOSTS"}, Type: "DNS names or IP addresses, comma-separated in env"},
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
