package webhook

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// TestRequestLoggerAddsTheRequestWhenItWrites: a line written through a
// request's logger names the request, as controller-runtime's default
// does; a request that writes none never formats its fields.
func TestRequestLoggerAddsTheRequestWhenItWrites(t *testing.T) {
	var lines []string
	withValues := 0
	base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 0})
	base = logr.New(&countingSink{LogSink: base.GetSink(), withValues: &withValues})
	req := &admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid-1", Namespace: "ml", Name: "train", UserInfo: authenticationv1.UserInfo{Username: "alice"}}}

	log := requestLogger(base, req)
	require.False(t, log.V(1).Enabled(), "the base logger's verbosity holds")
	require.Zero(t, withValues, "building the logger formats nothing")

	log.Info("decided", "allowed", true)
	log.Error(nil, "failed")
	require.Equal(t, 1, withValues, "the request's fields are added once, at the first line")
	require.Len(t, lines, 2)
	for _, l := range lines {
		for _, want := range []string{`"namespace"="ml"`, `"name"="train"`, `"user"="alice"`, `"requestID"="uid-1"`} {
			require.Contains(t, l, want)
		}
	}
	require.Contains(t, lines[0], `"allowed"=true`)
	require.Equal(t, base, requestLogger(base, nil), "no request, the base logger")
}

// countingSink counts WithValues calls on the sink it wraps.
type countingSink struct {
	logr.LogSink
	withValues *int
}

func (s *countingSink) WithValues(kv ...any) logr.LogSink {
	*s.withValues++
	return &countingSink{LogSink: s.LogSink.WithValues(kv...), withValues: s.withValues}
}
