// Package webhook is Mandate's admission transport, and only that: it
// turns an AdmissionReview into a request of the decision service's
// admission protocol (review.Service.Admit and Validate) and its
// review.Response into an AdmissionResponse through controller-runtime's
// helpers (a JSON patch, a denial naming every violation, warnings, audit
// annotations), records admission metrics and decision log lines, guards
// namespaces' tenant label, and builds the webhook configurations that
// register it with the API server. Nothing below it imports it:
// `mandate eval`, `mandate audit` and the demo call package review
// directly.
package webhook
