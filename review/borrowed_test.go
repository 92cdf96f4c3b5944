package review_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// TestBorrowedClassIsNoRequest: a borrowed class is Mandate's mark, never
// a class a tenant gets by asking. Asked outright it is no tier of the
// model and is denied; asked with a tier written into
// mandate.dev/directives by the tenant itself (what the API server's
// reinvocation of /mutate carries, Mandate's own), it is decided exactly
// as that tier asked plainly, which the tenant could ask anyway.
func TestBorrowedClassIsNoRequest(t *testing.T) {
	r, _ := reviewtest.Service(t)
	pod := func(class, annotations string) string {
		return `
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: platform
` + annotations + `
spec:
  priorityClassName: ` + class + `
  containers:
  - {name: main, image: x, resources: {limits: {nvidia.com/gpu: "4"}}}
`
	}
	decide := func(manifest string) evaluator.Decision {
		t.Helper()
		rv, err := r.Review(context.Background(), reviewtest.Object(t, manifest), evaluator.Request{Operation: "CREATE", UID: "u", DryRun: true})
		require.NoError(t, err)
		return rv.Decision
	}
	borrowed := model.BorrowedClass("build")

	plain := decide(pod("build", ""))
	require.True(t, plain.Allowed, "%v", plain.Violations)

	outright := decide(pod(borrowed, ""))
	assert.False(t, outright.Allowed, "asked outright, %s is no tier", borrowed)
	if assert.NotEmpty(t, outright.Violations) {
		assert.Equal(t, "PRIORITY_UNKNOWN", outright.Violations[0].Code)
	}

	forged := decide(pod(borrowed, `  annotations:
    mandate.dev/directives: '{"priorityClass":"`+borrowed+`","tier":"build","preemptible":false}'`))
	require.True(t, forged.Allowed, "%v", forged.Violations)
	assert.Equal(t, plain.Directives, forged.Directives, "decided as build asked plainly")
}
