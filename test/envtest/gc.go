package envtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	controllerManager = "kube-controller-manager"

	// gcReadyLine is what kube-controller-manager's garbage collector logs
	// once its monitors have synced and it deletes dependents.
	gcReadyLine = "Proceeding to collect garbage"

	defaultControllersStartTimeout = 2 * time.Minute
)

// StartGarbageCollector runs kube-controller-manager's garbage collector (and
// no other controller) against env, so that deleting an owner deletes its
// dependents as in a real cluster: envtest runs no controller manager. It
// returns once the collector is collecting and stops it in t.Cleanup.
func StartGarbageCollector(t testing.TB, env *Env) {
	t.Helper()
	StartControllers(t, env, gcReadyLine, "garbage-collector-controller")
}

// StartControllers runs kube-controller-manager with only the named
// controllers (e.g. "deployment-controller", "replicaset-controller")
// against env, and stops it in t.Cleanup. With a readyLine it returns once
// the manager logs it; else at once (the test waits for what the
// controllers do). The binary is the pinned one built by
// hack/envtest-assets.sh next to kube-apiserver; the test fails when it is
// missing. Its log is reported when the test fails.
func StartControllers(t testing.TB, env *Env, readyLine string, controllers ...string) {
	t.Helper()
	startComponent(t, env, component{
		binary: controllerManager,
		user:   crenvtest.User{Name: "controller-manager", Groups: []string{"system:masters"}},
		args: []string{
			"--controllers=" + strings.Join(controllers, ","),
			"--leader-elect=false",
			// No serving endpoint at all: no port to pick, no delegated
			// authentication or authorization to configure.
			"--secure-port=0",
			"--bind-address=127.0.0.1",
			"--use-service-account-credentials=false",
		},
		readyLine:    readyLine,
		readyTimeout: defaultControllersStartTimeout,
		what:         fmt.Sprint(controllers),
	})
}
