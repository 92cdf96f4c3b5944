// Package e2e tests Mandate's webhooks end to end: a real kube-apiserver
// (test/envtest) calls the webhook server Mandate runs in-process, over TLS,
// as registered by webhook.Configurations, and the tests assert what a
// client sees: denials with the policy's message, stored objects carrying
// the injected directives, dry runs leaving nothing behind, and the tenant
// label guarded. A suite can run two replicas as the chart does (shared
// quota ledger, client certificates) behind one round-robin address, so
// the API server's calls alternate between them (the hold tests of issue
// 23).
package e2e
